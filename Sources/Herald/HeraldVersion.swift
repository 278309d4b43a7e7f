import HeraldEngine

/// Herald's own version: the one place it is written.
///
/// The default `User-Agent` and `activity-counter --version` read it from here; `CHANGELOG.md` lists what
/// each version changed.
public enum HeraldVersion {
    /// The semantic version of this build of Herald, such as `"0.9.0"`.
    public static let string = "0.9.0"

    /// A `User-Agent` product list naming Herald and the libcurl it runs on, such as
    /// `"Herald/0.9.0 libcurl/7.88.1"`. Made once: every request without a `User-Agent` of its own sends it.
    public static let userAgent = "Herald/\(string) libcurl/\(LibraryVersions.curl)"
}
