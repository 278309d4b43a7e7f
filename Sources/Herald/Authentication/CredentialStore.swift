import HeraldNotifications
/// Credentials a session uses for HTTP authentication by default: URLSession's `URLCredentialStorage`,
/// kept per session.
///
/// Consulted when a task receives a 401 and no hook decided otherwise
/// (``AuthenticationDisposition/performDefaultHandling``): first the credential stored for the exact
/// ``ProtectionSpace``, then the one stored for its host and port (and URL scheme). A stored credential the
/// server refused is not sent again for that task. Safe to use from any thread.
public final class CredentialStore: Sendable {
    private struct HostKey: Hashable {
        var host: String
        var port: Int
        /// The URL scheme the credential is for; `nil` for any.
        var urlScheme: String?
    }

    private struct Storage {
        var bySpace: [ProtectionSpace: Credential] = [:]
        var byHost: [HostKey: Credential] = [:]
    }

    private let storage = Locked(Storage())

    /// Creates an empty store.
    public init() {}

    /// Stores `credential` for one protection space (scheme, host, port, authentication scheme, realm);
    /// `nil` removes it.
    public func setCredential(_ credential: Credential?, for space: ProtectionSpace) {
        storage.withLock { $0.bySpace[space] = credential }
    }

    /// Stores `credential` for every realm and authentication scheme of `host` and `port`, over `urlScheme`;
    /// `nil` removes it.
    ///
    /// Without a `urlScheme`, port 443 means `https` and port 80 `http`, and any other port either. So a credential
    /// meant for a host's HTTPS service never answers a challenge over plain `http` to that port, which anyone on
    /// the path can make a redirect lead to (and a Basic credential goes out in clear). Name the scheme for any
    /// other port whose service is HTTPS only.
    /// - Parameters:
    ///   - credential: The credential, or `nil` to remove what is stored for the host and port: for every realm,
    ///     those stored for one protection space (``setCredential(_:for:)``) included. Removing without a
    ///     `urlScheme` removes it over any scheme, so that a logout that doesn't name the scheme leaves nothing
    ///     behind; with one, every credential that would answer over that scheme: the one stored for it, and one
    ///     stored for any scheme (which stops answering over the other scheme too).
    ///   - host: The host name or address (any case).
    ///   - port: The port.
    ///   - urlScheme: `"https"` or `"http"`; default by the port, as above.
    public func setCredential(_ credential: Credential?, forHost host: String, port: Int, urlScheme: String? = nil) {
        let host = host.lowercased()
        guard credential == nil else {
            let key = HostKey(host: host, port: port, urlScheme: Self.scheme(urlScheme, port: port))
            storage.withLock { $0.byHost[key] = credential }
            return
        }
        let scheme = urlScheme?.lowercased()  // `nil`: any
        storage.withLock { storage in
            storage.byHost = storage.byHost.filter { key, _ in
                // One stored for any scheme answers over this one too: it goes, or the logout leaves it answering.
                !(key.host == host && key.port == port
                    && (scheme == nil || key.urlScheme == nil || key.urlScheme == scheme))
            }
            storage.bySpace = storage.bySpace.filter { space, _ in
                !(space.host.lowercased() == host && space.port == port
                    && (scheme == nil || space.urlScheme.lowercased() == scheme))
            }
        }
    }

    /// The credential for `space`: the one stored for it, else the one stored for its host and port, for its
    /// URL scheme or for any.
    public func credential(for space: ProtectionSpace) -> Credential? {
        storage.withLock { storage in
            storage.bySpace[space]
                ?? storage.byHost[HostKey(host: space.host, port: space.port, urlScheme: space.urlScheme)]
                ?? storage.byHost[HostKey(host: space.host, port: space.port, urlScheme: nil)]
        }
    }

    /// `urlScheme` lowercased, else the scheme `port` is for by convention, else `nil` (any).
    private static func scheme(_ urlScheme: String?, port: Int) -> String? {
        if let urlScheme { return urlScheme.lowercased() }
        switch port {
        case 443: return "https"
        case 80: return "http"
        default: return nil
        }
    }

    /// Whether a credential is stored for `host` and `port`, for any realm or scheme.
    func hasCredential(forHost host: String, port: Int) -> Bool {
        let host = host.lowercased()
        return storage.withLock { storage in
            storage.byHost.keys.contains { $0.host == host && $0.port == port }
                || storage.bySpace.keys.contains { $0.host.lowercased() == host && $0.port == port }
        }
    }

    /// Removes every credential.
    public func removeAll() {
        storage.withLock { $0 = Storage() }
    }
}
