import HeraldEngine

/// The versions of the C libraries Herald runs on, read at run time from the loaded libraries.
public enum LibraryVersions {
    /// The libcurl version, such as `"7.88.1"`.
    public static var curl: String { NativeLibraries.curl }

    /// The TLS backend libcurl was built with, such as `"OpenSSL/3.0.17"`, or `nil` without TLS.
    public static var curlTLS: String? { NativeLibraries.curlTLS }

    /// The libuv version, such as `"1.44.2"`.
    public static var libuv: String { NativeLibraries.libuv }
}
