import Testing

@testable import Herald

@Suite("Which failed attempts wait for a network")
struct ConnectivityGateTests {
    @Test(
        "a failure to connect or to find the host waits whatever the method; a lost connection only for an idempotent one",
        arguments: ["GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE", "get", "POST", "PATCH", "CONNECT", "PROPFIND"])
    func gate(method: String) {
        let idempotent = ["GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE"].contains(method.uppercased())
        func waits(after code: HeraldError.Code) -> Bool {
            SessionTask.waitsForConnectivity(
                method: method, after: code, attemptMethod: method, earlierHopAnswered: false)
        }
        #expect(waits(after: .cannotConnect))
        #expect(waits(after: .cannotFindHost))
        // A POST whose connection was lost may have reached the server whole: before, it was made again once a
        // network came back, and a payment could be made twice.
        #expect(waits(after: .networkConnectionLost) == idempotent)
        #expect(!waits(after: .timedOut))
        #expect(!waits(after: .tls))
    }

    @Test(
        "after a hop of the attempt was answered, only an attempt that began with an idempotent method waits",
        arguments: ["GET", "PUT", "POST", "PATCH"])
    func gateAfterAnsweredHop(attemptMethod: String) {
        let idempotent = ["GET", "PUT"].contains(attemptMethod)
        // A POST answered with a 303 whose GET then found no network: before, the task waited and posted again.
        for code in [HeraldError.Code.cannotConnect, .cannotFindHost, .networkConnectionLost] {
            #expect(
                SessionTask.waitsForConnectivity(
                    method: "GET", after: code, attemptMethod: attemptMethod, earlierHopAnswered: true) == idempotent)
        }
        // The first request of the attempt failing to connect sent nothing: any method waits.
        #expect(
            SessionTask.waitsForConnectivity(
                method: attemptMethod, after: .cannotConnect, attemptMethod: attemptMethod,
                earlierHopAnswered: false))
    }
}
