import ArgumentParser
import Foundation

/// `activity-counter fetch URL…`: downloads the given URLs.
struct Fetch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Download the given http(s) URLs concurrently.")

    @Argument(help: "The http or https URLs to download.")
    var urls: [String]

    @OptionGroup var options: RunOptions

    mutating func validate() throws {
        guard !urls.isEmpty else { throw ValidationError("Give at least one URL, or run `activity-counter demo`.") }
        for text in urls {
            guard let url = URL(string: text), let scheme = url.scheme?.lowercased(),
                ["http", "https"].contains(scheme),
                url.host?.isEmpty == false
            else {
                throw ValidationError("'\(text)' is not an http or https URL with a host.")
            }
        }
    }

    func run() async throws {
        let targets = urls.compactMap { URL(string: $0) }.map { FetchTarget(url: $0) }
        let results = await FetchRun(targets: targets, options: options).run()
        if results.contains(where: { !$0.behavedAsExpected }) { throw ExitCode(1) }
    }
}
