import CCurl

/// What the libcurl Herald was compiled against can do, for code outside the engine that has to decide
/// before any transfer exists. These are facts of the headers (`LIBCURL_VERSION_NUM`), which a
/// distribution ships with the library they describe.
enum CurlFeatures {
    /// Whether a CA bundle can be handed over in memory (`CURLOPT_CAINFO_BLOB`, libcurl 7.77.0).
    static let inMemoryCertificateAuthorities = herald_has_cainfo_blob != 0
}
