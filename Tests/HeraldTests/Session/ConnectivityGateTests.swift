import Testing

@testable import Herald

@Suite("Which failed attempts wait for a network")
struct ConnectivityGateTests {
    @Test(
        "a failure to connect or to find the host waits whatever the method; a lost connection only for an idempotent one",
        arguments: ["GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE", "get", "POST", "PATCH", "CONNECT", "PROPFIND"])
    func gate(method: String) {
        let idempotent = ["GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE"].contains(method.uppercased())
        #expect(SessionTask.waitsForConnectivity(method: method, after: .cannotConnect))
        #expect(SessionTask.waitsForConnectivity(method: method, after: .cannotFindHost))
        // A POST whose connection was lost may have reached the server whole: before, it was made again once a
        // network came back, and a payment could be made twice.
        #expect(SessionTask.waitsForConnectivity(method: method, after: .networkConnectionLost) == idempotent)
        #expect(!SessionTask.waitsForConnectivity(method: method, after: .timedOut))
        #expect(!SessionTask.waitsForConnectivity(method: method, after: .tls))
    }
}
