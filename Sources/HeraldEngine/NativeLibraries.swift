import CCurl
import CUV

/// The versions of the C libraries the engine runs on, read at run time from the loaded libraries. `Herald`
/// presents them as its public `LibraryVersions`.
package enum NativeLibraries {
    /// The libcurl version, such as `"7.88.1"`.
    package static var curl: String {
        guard let info = herald_curl_version_info(), let version = info.pointee.version else {
            return "unknown"
        }
        return String(cString: version)
    }

    /// The TLS backend libcurl was built with, such as `"OpenSSL/3.0.17"`, or `nil` without TLS.
    package static var curlTLS: String? {
        guard let info = herald_curl_version_info(), let ssl = info.pointee.ssl_version else {
            return nil
        }
        return String(cString: ssl)
    }

    /// The libuv version, such as `"1.44.2"`.
    package static var libuv: String {
        guard let version = uv_version_string() else { return "unknown" }
        return String(cString: version)
    }
}
