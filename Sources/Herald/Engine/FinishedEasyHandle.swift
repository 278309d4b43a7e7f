import CCurl
import Foundation

/// A finished transfer's easy handle, out of its multi handle, on its way to the thread that completes the
/// task inside the transfer's outcome. There ``settle()`` reads the transfer's metrics from it and gives it
/// back to its pool (or frees it), so that the loop thread, which every transfer of the engine shares, does
/// neither: reading the metrics is some sixteen `curl_easy_getinfo` calls, and freeing a handle several
/// thousand instructions.
///
/// curl keeps what the metrics read (times, sizes, addresses, the HTTP version) in the handle until it is
/// reset or runs again, and a handle out of its multi handle belongs to no connection, so the one thread
/// that holds this value may read and free it. Not copyable: the handle is let go exactly once, by
/// ``settle()`` or, for an outcome dropped before it was settled, by ``letGo()``.
struct FinishedEasyHandle: ~Copyable {
    private let easy: UnsafeMutableRawPointer
    /// Where the handle goes back; `nil` frees it (a failed transfer's handle may hold state a reset keeps).
    private let pool: EasyHandlePool?
    private let profile: EasyHandleProfile?
    private let startDate: Date

    init(
        _ easy: UnsafeMutableRawPointer, returningTo pool: EasyHandlePool?, profile: EasyHandleProfile?,
        startDate: Date
    ) {
        self.easy = easy
        self.pool = pool
        self.profile = profile
        self.startDate = startDate
    }

    /// The transfer's metrics; then the handle goes back to its pool, or is freed.
    consuming func settle() -> TransferMetrics {
        let metrics = TransferMetrics(easyHandle: easy, startDate: startDate)
        letGo()
        return metrics
    }

    /// Gives the handle back to its pool, or frees it, without reading it.
    consuming func letGo() {
        if let pool { pool.give(easy, profile: profile) } else { curl_easy_cleanup(easy) }
    }
}
