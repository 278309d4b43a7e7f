import CCurl
import Foundation
import HeraldTesting
import Testing

@testable import Herald
@testable import HeraldEngine

@Suite("CURLcode mapping")
struct CurlErrorMappingTests {
    /// Every mapping the table claims, by raw `CURLcode`, with errno 0.
    static let table: [(curlCode: Int32, code: TransferError.Code)] = [
        (0, .internal), (1, .unsupportedURL), (2, .internal), (3, .badURL), (4, .invalidRequest),
        (5, .proxy), (6, .cannotFindHost), (7, .cannotConnect), (8, .badServerResponse),
        (16, .badServerResponse), (18, .networkConnectionLost), (22, .unacceptableStatusCode), (23, .internal),
        (25, .bodyStream), (26, .bodyStream), (27, .outOfMemory), (28, .timedOut), (33, .cannotResume),
        (34, .internal), (35, .tls), (36, .cannotResume), (37, .fileIO), (42, .internal), (43, .internal),
        (45, .cannotConnect), (47, .tooManyRedirects), (48, .internal), (49, .internal),
        (52, .badServerResponse), (53, .tls), (54, .tls), (55, .networkConnectionLost),
        (56, .networkConnectionLost), (58, .tls), (59, .tls), (60, .serverCertificateUntrusted), (61, .decoding),
        (63, .responseTooLarge), (64, .tls), (65, .bodyStream), (66, .tls), (67, .authentication),
        (77, .tls), (80, .tls), (81, .internal), (82, .tls), (83, .tls), (89, .internal),
        (90, .serverTrustPinMismatch), (91, .tls), (92, .networkConnectionLost), (93, .internal),
        (94, .authentication), (95, .badServerResponse), (96, .cannotConnect), (97, .proxy), (98, .tls),
        (99, .internal),
        // Protocols Herald never enables (FTP, TFTP, LDAP, SSH, RTSP), obsolete codes, and codes newer
        // than this table: unknown, with curl's text.
        (9, .unknown), (19, .unknown), (21, .unknown), (38, .unknown), (68, .unknown), (79, .unknown),
        (85, .unknown), (88, .unknown), (100, .unknown), (1000, .unknown),
    ]

    @Test("each CURLcode maps to its documented code and keeps the raw code and curl's text", arguments: table)
    func mapsCode(curlCode: Int32, code: TransferError.Code) {
        let error = TransferError.fromCurl(rawCode: curlCode, osErrno: 0, curlMessage: "curl says why", url: nil)
        #expect(error.code == code)
        #expect(error.curlCode == curlCode)
        #expect(error.curlMessage == "curl says why")
        #expect(!error.message.isEmpty)
    }

    @Test("ECONNREFUSED on a transport failure is cannotConnect", arguments: [Int32(7), 35, 52, 55, 56, 1000])
    func refused(curlCode: Int32) {
        let error = TransferError.fromCurl(rawCode: curlCode, osErrno: ECONNREFUSED, curlMessage: "", url: nil)
        #expect(error.code == .cannotConnect)
    }

    @Test("ECONNREFUSED left over in errno does not hide a local failure", arguments: [Int32(3), 27, 28, 42, 47])
    func refusedDoesNotOverrideLocalFailures(curlCode: Int32) {
        let error = TransferError.fromCurl(rawCode: curlCode, osErrno: ECONNREFUSED, curlMessage: "", url: nil)
        #expect(error.code != .cannotConnect)
    }

    @Test("COULDNT_CONNECT with ETIMEDOUT is timedOut, with other errnos cannotConnect")
    func connectTimeout() {
        #expect(TransferError.fromCurl(rawCode: 7, osErrno: ETIMEDOUT, curlMessage: "", url: nil).code == .timedOut)
        #expect(
            TransferError.fromCurl(rawCode: 7, osErrno: ENETUNREACH, curlMessage: "", url: nil).code == .cannotConnect)
        #expect(
            TransferError.fromCurl(rawCode: 56, osErrno: ECONNRESET, curlMessage: "", url: nil).code
                == .networkConnectionLost)
    }

    @Test("a receive error about chunk framing is badServerResponse; another stays networkConnectionLost")
    func chunkFraming() {
        let chunky = "Received problem 2 in the chunky parser"
        #expect(
            TransferError.fromCurl(rawCode: 56, osErrno: 0, curlMessage: chunky, url: nil).code == .badServerResponse)
        #expect(
            TransferError.fromCurl(rawCode: 56, osErrno: ECONNRESET, curlMessage: "Recv failure", url: nil).code
                == .networkConnectionLost)
    }

    @Test("a close before the response began is the connection lost; an HTTP/2 framing failure stays badServerResponse")
    func closedBeforeAnswer() {
        let closed = TransferError.fromCurl(
            rawCode: 18, osErrno: 0, curlMessage: "", url: nil, stage: .awaitingResponse)
        #expect(closed.code == .networkConnectionLost)
        #expect(closed.message.hasSuffix("before answering the request"))
        for stage in [CurlErrorMapping.Stage.awaitingResponse, .receivingResponse] {
            let framing = TransferError.fromCurl(rawCode: 16, osErrno: 0, curlMessage: "", url: nil, stage: stage)
            #expect(framing.code == .badServerResponse)
        }
        // A stream refused on every connection libcurl tried (its own text, libcurl 7.88).
        let refused = TransferError.fromCurl(
            rawCode: 56, osErrno: 0, curlMessage: "Connection died, tried 5 times before giving up", url: nil,
            stage: .awaitingResponse)
        #expect(refused.code == .networkConnectionLost)
        #expect(refused.message.hasSuffix("refused the request on every connection tried"))
    }

    @Test(
        "a send error says what was under way",
        arguments: [
            (CurlErrorMapping.Stage.sending, "while sending"),
            (.awaitingResponse, "after the request was sent"), (.receivingResponse, "while receiving the response"),
        ])
    func sendErrorStage(stage: CurlErrorMapping.Stage, wording: String) {
        let error = TransferError.fromCurl(rawCode: 55, osErrno: ECONNRESET, curlMessage: "", url: nil, stage: stage)
        #expect(error.code == .networkConnectionLost)
        #expect(error.message.hasSuffix(wording))
    }

    @Test("HTTP_RETURNED_ERROR carries the status from curl's text")
    func httpReturnedError() {
        let error = TransferError.fromCurl(
            rawCode: 22, osErrno: 0, curlMessage: "The requested URL returned error: 404", url: nil)
        #expect(error.statusCode == 404)
    }

    @Test("the CURLcode entry point uses the error buffer, or curl_easy_strerror when it is empty")
    func curlEntryPoint() throws {
        let url = try #require(URL(string: "https://user:pw@example.com/a"))
        let withBuffer = TransferError.fromCurl(
            CURLE_COULDNT_RESOLVE_HOST, osErrno: 0, errorBuffer: "Could not resolve host: example.com\n", url: url)
        #expect(withBuffer.code == .cannotFindHost)
        #expect(withBuffer.curlCode == 6)
        #expect(withBuffer.curlMessage == "Could not resolve host: example.com")
        // The engine keeps the URL as it was; the public error a caller sees has it redacted.
        #expect(HeraldError(withBuffer).url?.absoluteString == "https://***:***@example.com/a")

        let empty = TransferError.fromCurl(CURLE_OPERATION_TIMEDOUT, osErrno: 0, errorBuffer: "", url: nil)
        #expect(empty.code == .timedOut)
        #expect(empty.curlMessage == String(cString: curl_easy_strerror(CURLE_OPERATION_TIMEDOUT)))
    }

    @Test("every code curl 7.88.1 defines (0–99) gets a code and a message without trapping")
    func totality() {
        for raw in Int32(0)...99 {
            let error = TransferError.fromCurl(rawCode: raw, osErrno: 0, curlMessage: "", url: nil)
            #expect(!error.message.isEmpty)
            #expect(error.curlMessage == nil)
        }
    }
}

extension CurlErrorMappingTests {
    @Test("a TLS handshake ended by a reset or a close without an alert is the connection lost; other failures TLS")
    func handshakeBrokenByTheConnection() {
        let lost: [(Int32, String)] = [
            (ECONNRESET, "OpenSSL SSL_connect: Connection reset by peer in connection to h:443"),
            (EPIPE, "OpenSSL SSL_connect: Broken pipe in connection to h:443"),
            (0, "OpenSSL SSL_connect: SSL_ERROR_SYSCALL in connection to h:443"),
        ]
        for (errno, text) in lost {
            let error = TransferError.fromCurl(
                rawCode: 35, osErrno: errno, curlMessage: text, url: nil, connected: true)
            #expect(error.code == .networkConnectionLost, "\(text)")
        }
        let refused = TransferError.fromCurl(
            rawCode: 35, osErrno: 0, curlMessage: "error:0A00010B:SSL routines::wrong version number", url: nil,
            connected: true)
        #expect(refused.code == .tls)
    }

    @Test("ECONNREFUSED left over from an address that refused is no refusal once the transfer had a connection")
    func staleRefusal() {
        for curlCode: Int32 in [35, 52, 56] {
            let error = TransferError.fromCurl(
                rawCode: curlCode, osErrno: ECONNREFUSED, curlMessage: "", url: nil, connected: true)
            #expect(error.code != .cannotConnect, "\(curlCode)")
        }
        let answered = TransferError.fromCurl(
            rawCode: 18, osErrno: ECONNREFUSED, curlMessage: "", url: nil, stage: .receivingResponse)
        #expect(answered.code == .networkConnectionLost)
    }

    @Test("a server on ::1 only, reached as localhost after 127.0.0.1 refused: its failure is its own, not a refusal")
    func refusedAddressThenConnected() async throws {
        let server = try await TestServer.start(host: "::1")
        let session = SessionManager()
        // A head declaring 100 bytes, none of them, then a close: the connection lost, once connected.
        var components = URLComponents(
            url: server.url("/fault/truncated?declared=100&sent=0"), resolvingAgainstBaseURL: false)
        components?.host = "localhost"
        let url = try #require(components?.url)
        let error = await #expect(throws: HeraldError.self) {
            _ = try await session.data(for: Request(url: url))
        }
        #expect(error?.code == .networkConnectionLost, "\(String(describing: error))")
        await session.invalidateAndWait(cancelingTasks: true)
        try await server.shutdown()
    }
}
