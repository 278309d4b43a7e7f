import Foundation

/// A fresh directory under the system's temporary directory, removed by ``remove()``.
struct Scratch {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "activity-counter-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    func path(_ component: String) -> String { url.appendingPathComponent(component).path }

    /// Every file below the directory, as paths relative to it, sorted.
    func files(in component: String = "") throws -> [String] {
        let root = component.isEmpty ? url : url.appendingPathComponent(component)
        guard let enumerator = FileManager.default.enumerator(atPath: root.path) else { return [] }
        var files: [String] = []
        while let next = enumerator.nextObject() as? String {
            var isDirectory: ObjCBool = false
            let exists = FileManager.default.fileExists(
                atPath: root.appendingPathComponent(next).path, isDirectory: &isDirectory)
            if exists, !isDirectory.boolValue { files.append(next) }
        }
        return files.sorted()
    }

    func contents(_ component: String) throws -> Data {
        try Data(contentsOf: url.appendingPathComponent(component))
    }

    func remove() {
        try? FileManager.default.removeItem(at: url)
    }
}
