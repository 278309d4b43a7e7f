import CCurl

extension ProtocolVersion {
    /// The `CURLOPT_HTTP_VERSION` value for this version. `automatic` is curl's own default since 7.62
    /// (HTTP/2 over TLS when offered), set explicitly so the session, not a default, says what is asked.
    var curlValue: Int {
        switch self {
        case .automatic: Int(CURL_HTTP_VERSION_2TLS)
        case .http1_1: Int(CURL_HTTP_VERSION_1_1)
        case .http2: Int(CURL_HTTP_VERSION_2_0)
        case .http2PriorKnowledge: Int(CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE)
        }
    }
}
