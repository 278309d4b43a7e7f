import CCurl
import CUV

/// The versions of the C libraries Herald runs on, read at run time from the loaded libraries.
public enum LibraryVersions {
    /// The libcurl version, such as `"7.88.1"`.
    public static var curl: String {
        guard let info = herald_curl_version_info(), let version = info.pointee.version else {
            return "unknown"
        }
        return String(cString: version)
    }

    /// The TLS backend libcurl was built with, such as `"OpenSSL/3.0.17"`, or `nil` without TLS.
    public static var curlTLS: String? {
        guard let info = herald_curl_version_info(), let ssl = info.pointee.ssl_version else {
            return nil
        }
        return String(cString: ssl)
    }

    /// The libuv version, such as `"1.44.2"`.
    public static var libuv: String {
        guard let version = uv_version_string() else { return "unknown" }
        return String(cString: version)
    }
}
