import Foundation
import HeraldEngine

// The engine speaks in values of its own (`HeraldEngine` names no public type of Herald's). These are the
// conversions at the boundary, each in one place: the public settings a transfer is made from, and the public
// values its outcome becomes.

extension HeraldError {
    /// The public form of a transfer's failure: the same code and fields, or the session's own error that the
    /// transfer carried.
    init(_ failure: TransferError) {
        if let original = failure.original as? HeraldError {
            self = original
            return
        }
        self.init(
            Code(failure.code), failure.message, underlying: failure.underlying, curlCode: failure.curlCode,
            curlMessage: failure.curlMessage, url: failure.url, statusCode: failure.statusCode,
            serverCertificateProblem: failure.certificateProblem.map(ServerCertificateProblem.init))
    }
}

extension TransferError {
    /// A session's error on its way through a transfer, handed back unchanged when the transfer ends.
    init(_ error: HeraldError) {
        self.init(
            error.code.base, error.message, underlying: error.underlying, curlCode: error.curlCode,
            curlMessage: error.curlMessage, url: error.url, statusCode: error.statusCode, original: error)
    }
}

extension HTTPHeaders {
    /// Headers with the engine's fields, in their order: the same list, not a copy.
    init(_ fields: HeaderFields) {
        self.init(storage: fields)
    }

    /// The fields as the engine takes them, in order: the same list, not a copy.
    var engineFields: HeaderFields { storage }
}

extension HTTPResponse {
    /// The public form of a head the engine received.
    init(_ head: ResponseHead) {
        self.init(
            url: head.url, statusCode: head.statusCode, headers: HTTPHeaders(head.headers),
            httpVersion: head.httpVersion)
    }
}

extension TransferMetrics {
    /// The public form of what the engine measured of a transfer.
    init(_ timings: TransferTimings) {
        self.init(
            startDate: timings.startDate, nameLookup: timings.nameLookup, connect: timings.connect,
            tlsHandshake: timings.tlsHandshake, timeToFirstByte: timings.timeToFirstByte, total: timings.total,
            redirectTime: timings.redirectTime, requestHeaderBytes: timings.requestHeaderBytes,
            requestBodyBytes: timings.requestBodyBytes, responseHeaderBytes: timings.responseHeaderBytes,
            responseBodyBytes: timings.responseBodyBytes, redirectCount: timings.redirectCount,
            connectionReused: timings.connectionReused, remoteAddress: timings.remoteAddress,
            remotePort: timings.remotePort, localPort: timings.localPort, httpVersion: timings.httpVersion,
            timeInQueue: timings.timeInQueue, connectionIdentifier: timings.connectionIdentifier)
    }
}

extension HTTPVersion {
    /// The version as the engine asks for it.
    var engineVersion: ProtocolVersion {
        switch self {
        case .automatic: .automatic
        case .http1_1: .http1_1
        case .http2: .http2
        case .http2PriorKnowledge: .http2PriorKnowledge
        }
    }
}

extension SecurityPolicy {
    /// The policy as the engine applies it.
    var trustSettings: TrustSettings {
        TrustSettings(
            allowsInvalidCertificates: allowsInvalidCertificates, certificateAuthorityFile: certificateAuthorityFile,
            certificateAuthorityData: certificateAuthorityData, pinnedPublicKeys: pinnedPublicKeys.map(\.description),
            revocationListFile: revocationListFile)
    }
}

extension Proxy {
    /// The proxy as the engine applies it.
    var settings: ProxySettings {
        ProxySettings(
            url: description, excludedHosts: excludedHosts, user: credential?.user, password: credential?.password,
            speaksHTTP: kind == .http || kind == .https)
    }
}

extension TransferCredential {
    /// `credential`, answered with `scheme`.
    init(_ credential: Credential, scheme: AuthenticationScheme) {
        self.init(user: credential.user, password: credential.password, usesDigest: scheme == .digest)
    }
}

extension BodyStream {
    /// The stream as the engine pulls it: whatever a read throws fails the task with `bodyStream`.
    var pulled: PulledBody { PulledBody(read: read) }

    /// The stream of a body of declared length as the engine pulls it: a ``HeraldError`` a read throws (a
    /// multipart file that changed while it was sent) fails the task as it is; any other error with `bodyStream`.
    var pulledKeepingErrors: PulledBody {
        let read = self.read
        return PulledBody { buffer in
            do {
                return try read(buffer)
            } catch let error as HeraldError {
                throw TransferError(error)
            }
        }
    }
}

extension HeraldError {
    /// A ``Code/fileIO`` error for a failed file operation: `message`, the file, and `errno`'s explanation.
    static func fileFailure(_ message: String, url: URL) -> HeraldError {
        HeraldError(FileIOError.make(message, url: url))
    }
}
