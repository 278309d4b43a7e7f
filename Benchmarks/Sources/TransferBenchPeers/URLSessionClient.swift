import Foundation
import TransferBenchKit
import FoundationNetworking

/// The configuration every URLSession client here uses: every GET goes to the network, with no cache to
/// answer from and no cookies to store.
func uncachedSessionConfiguration() -> URLSessionConfiguration {
    let configuration = URLSessionConfiguration.default
    configuration.urlCache = nil
    configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
    configuration.httpCookieStorage = nil
    configuration.httpShouldSetCookies = false
    return configuration
}

/// Foundation's URLSession (swift-corelibs-foundation's FoundationNetworking on Linux).
///
/// Over HTTPS it trusts what libcurl's default bundle of authorities holds and nothing else: FoundationNetworking
/// on Linux has no server-trust challenge and no setting for it, and the environment (`SSL_CERT_FILE`,
/// `SSL_CERT_DIR`, `CURL_CA_BUNDLE`, `URLSessionCertificateAuthorityInfoFile`) changes nothing. So `--cacert` is
/// refused here; run-transfers.sh instead runs this client in a mount namespace of its own where that bundle has
/// the test authority added. It has no HTTP version setting either: libcurl offers HTTP/2 in the handshake and the
/// server's answer decides.
func runURLSession(url: URL, concurrency: Int, requests: Int, expectedBytes: Int) -> LoadOutcome {
    let configuration = uncachedSessionConfiguration()
    configuration.httpMaximumConnectionsPerHost = concurrency
    let session = URLSession(configuration: configuration)
    let request = URLRequest(url: url)

    let generator = LoadGenerator(total: requests, concurrency: concurrency) { generator in
        let task = session.dataTask(with: request) { data, response, error in
            var failure: String?
            if let error {
                failure = "\(error)"
            } else if let status = (response as? HTTPURLResponse)?.statusCode, status != 200 {
                failure = "status \(status)"
            } else if response == nil {
                failure = "no response"
            } else if data?.count != expectedBytes {
                failure = "\(data?.count ?? 0) body bytes, expected \(expectedBytes)"
            }
            generator.finished(failure: failure)
        }
        task.resume()
    }
    let outcome = generator.run()
    session.finishTasksAndInvalidate()
    return outcome
}
