import CSQLite
import Foundation
import Testing

/// Edits a disk response cache's index behind the cache's back, as another process or an earlier version would.
enum CacheIndexEditing {
    /// Runs `sql` on the index of the cache in `folder`.
    static func run(in folder: URL, _ sql: String) {
        var connection: OpaquePointer?
        #expect(sqlite3_open(folder.appendingPathComponent("index.sqlite").path, &connection) == SQLITE_OK)
        #expect(sqlite3_exec(connection, sql, nil, nil, nil) == SQLITE_OK)
        sqlite3_close(connection)
    }
}
