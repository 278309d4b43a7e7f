import HeraldNotifications
/// Credentials a session uses for HTTP authentication by default: URLSession's `URLCredentialStorage`,
/// kept per session.
///
/// Consulted when a task receives a 401 and no hook decided otherwise
/// (``AuthenticationDisposition/performDefaultHandling``): first the credential stored for the exact
/// ``ProtectionSpace``, then the one stored for its host and port. A stored credential the server
/// refused is not sent again for that task. Safe to use from any thread.
public final class CredentialStore: Sendable {
    private struct HostKey: Hashable {
        var host: String
        var port: Int
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

    /// Stores `credential` for every realm and scheme of `host` and `port`; `nil` removes it.
    public func setCredential(_ credential: Credential?, forHost host: String, port: Int) {
        storage.withLock { $0.byHost[HostKey(host: host.lowercased(), port: port)] = credential }
    }

    /// The credential for `space`: the one stored for it, else the one stored for its host and port.
    public func credential(for space: ProtectionSpace) -> Credential? {
        storage.withLock { storage in
            storage.bySpace[space] ?? storage.byHost[HostKey(host: space.host, port: space.port)]
        }
    }

    /// Whether a credential is stored for `host` and `port`, for any realm or scheme.
    func hasCredential(forHost host: String, port: Int) -> Bool {
        let host = host.lowercased()
        return storage.withLock { storage in
            storage.byHost[HostKey(host: host, port: port)] != nil
                || storage.bySpace.keys.contains { $0.host.lowercased() == host && $0.port == port }
        }
    }

    /// Removes every credential.
    public func removeAll() {
        storage.withLock { $0 = Storage() }
    }
}
