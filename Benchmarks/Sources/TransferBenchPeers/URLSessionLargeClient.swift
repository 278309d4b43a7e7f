import Foundation
import TransferBenchKit
import FoundationNetworking

/// Foundation's URLSession, one large transfer: `downloadTask(with:)` moving the temporary file to
/// `destination` in its completion handler (the file is deleted once the handler returns), or
/// `dataTask(with:)` collecting the body in memory.
func runURLSessionLarge(url: URL, mode: LargeMode, destination: URL?, expectedBytes: Int) -> LargeOutcome {
    let session = URLSession(configuration: uncachedSessionConfiguration())
    let request = URLRequest(url: url)
    if let destination { removeStaleDestination(destination) }

    let outcome = measureLarge { finish in
        switch mode {
        case .downloadFile:
            let destination = destination!
            session.downloadTask(with: request) { location, response, error in
                if let failure = responseFailure(response, error) {
                    finish(LargeOutcome(failure: failure))
                    return
                }
                guard let location else {
                    finish(LargeOutcome(failure: "no temporary file"))
                    return
                }
                do {
                    try FileManager.default.moveItem(at: location, to: destination)
                } catch {
                    finish(LargeOutcome(failure: "moving \(location.path) to \(destination.path): \(error)"))
                    return
                }
                finish(checkDownloadedFile(at: destination, destination: destination, expectedBytes: expectedBytes))
            }.resume()
        case .dataMemory:
            session.dataTask(with: request) { data, response, error in
                if let failure = responseFailure(response, error) {
                    finish(LargeOutcome(failure: failure))
                    return
                }
                let count = data?.count ?? 0
                finish(
                    LargeOutcome(
                        bytes: count,
                        failure: count == expectedBytes ? nil : "\(count) body bytes, expected \(expectedBytes)"))
            }.resume()
        case .stream:
            // main.swift refuses it first: FoundationNetworking has no streamed body.
            finish(LargeOutcome(failure: "URLSession on Linux has no streamed body"))
        }
    }
    session.finishTasksAndInvalidate()
    return outcome
}

private func responseFailure(_ response: URLResponse?, _ error: Error?) -> String? {
    if let error { return "\(error)" }
    guard let response = response as? HTTPURLResponse else { return "no HTTP response" }
    return response.statusCode == 200 ? nil : "status \(response.statusCode)"
}
