import Foundation

/// What a transfer sets an easy handle's options from, apart from what changes with every transfer (the
/// URL, the header list, the error buffer, the callbacks' data).
///
/// A pooled handle keeps the options it was last given. When the next transfer's profile is equal, setting
/// the per-transfer options is all it needs: the reset and the thirty-odd other options would set the same
/// values again. A request with a credential or a body has no profile, so its options are always set afresh
/// on a reset handle, and the handle it leaves is reset before the next transfer.
///
/// A class, not a struct: the pool and the transfer pass it around, and copying a struct that holds a security
/// policy and a proxy went through the runtime's generic copy for each of their optional fields.
final class EasyHandleProfile: Equatable, Sendable {
    let allowedProtocols: String
    let method: String
    /// Whether the body is decoded before it reaches the sink (a body in memory; a file keeps the bytes sent).
    let decodesContent: Bool
    let httpVersion: HTTPVersion
    let requestTimeout: TimeInterval
    let resourceTimeout: TimeInterval
    let securityPolicy: SecurityPolicy
    let proxy: Proxy?
    /// Without an explicit proxy: whether a proxy variable was set, so libcurl was left to read them.
    let environmentMayNameProxy: Bool

    init(
        allowedProtocols: String, method: String, decodesContent: Bool, httpVersion: HTTPVersion,
        requestTimeout: TimeInterval, resourceTimeout: TimeInterval, securityPolicy: SecurityPolicy, proxy: Proxy?,
        environmentMayNameProxy: Bool
    ) {
        self.allowedProtocols = allowedProtocols
        self.method = method
        self.decodesContent = decodesContent
        self.httpVersion = httpVersion
        self.requestTimeout = requestTimeout
        self.resourceTimeout = resourceTimeout
        self.securityPolicy = securityPolicy
        self.proxy = proxy
        self.environmentMayNameProxy = environmentMayNameProxy
    }

    static func == (lhs: EasyHandleProfile, rhs: EasyHandleProfile) -> Bool {
        // The fields that differ most often first; the session-wide ones (the same for every transfer of a
        // pool) last.
        lhs === rhs
            || (lhs.method == rhs.method && lhs.decodesContent == rhs.decodesContent
                && lhs.requestTimeout == rhs.requestTimeout && lhs.resourceTimeout == rhs.resourceTimeout
                && lhs.environmentMayNameProxy == rhs.environmentMayNameProxy && lhs.httpVersion == rhs.httpVersion
                && lhs.allowedProtocols == rhs.allowedProtocols && lhs.proxy == rhs.proxy
                && lhs.securityPolicy == rhs.securityPolicy)
    }
}
