import Foundation

/// What a transfer sets an easy handle's options from, apart from what changes with every transfer (the
/// URL, the header list, the error buffer, the callbacks' data).
///
/// A pooled handle keeps the options it was last given. When the next transfer's profile is equal, setting
/// the per-transfer options is all it needs: the reset and the thirty-odd other options would set the same
/// values again. A request with a credential has no profile, so its options are always set afresh on a reset
/// handle, and the handle it leaves is reset before the next transfer. A body's length is a per-transfer option.
///
/// A class around the values, not a struct: the pool and the transfer pass it around, and copying a struct
/// that holds a security policy and a proxy went through the runtime's generic copy for each of their
/// optional fields.
final class EasyHandleProfile: Equatable, Sendable {
    /// The values the options are set from.
    struct Options: Equatable, Sendable {
        var allowedProtocols: String
        var method: String
        /// Whether a body is sent (curl's upload mode): its length is set for each transfer.
        var sendsBody: Bool
        /// Whether the body is decoded before it reaches the sink (a body in memory; a file keeps the bytes).
        var decodesContent: Bool
        /// libcurl's receive buffer for the sink.
        var receiveBufferSize: Int
        var httpVersion: ProtocolVersion
        /// Whether each transfer opens a connection of its own and closes it after (`CURLOPT_FRESH_CONNECT` and
        /// `CURLOPT_FORBID_REUSE`): set from the URL's scheme, which the rest of the profile doesn't hold.
        var opensConnectionPerTransfer: Bool
        var requestTimeout: TimeInterval
        var resourceTimeout: TimeInterval
        var trust: TrustSettings
        var proxy: ProxySettings?
        /// Without an explicit proxy: whether a proxy variable was set, so libcurl was left to read them.
        var environmentMayNameProxy: Bool
        /// Whether libcurl's text is read for a GOAWAY that refused the request (`CURLOPT_VERBOSE`).
        var watchesGoawayRefusal: Bool
    }

    let options: Options

    init(_ options: Options) {
        self.options = options
    }

    static func == (lhs: EasyHandleProfile, rhs: EasyHandleProfile) -> Bool {
        lhs === rhs || lhs.options == rhs.options
    }
}
