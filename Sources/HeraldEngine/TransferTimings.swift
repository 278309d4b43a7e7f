import CCurl
import Foundation

/// What libcurl measured of one transfer: times, sizes and the connection. `Herald` presents it as its public
/// `TransferTimings`, field for field.
package struct TransferTimings: Sendable {
    /// When the transfer started.
    package var startDate: Date
    /// Seconds from the start until the name was resolved.
    package var nameLookup: TimeInterval
    /// Seconds from the start until the connection was made.
    package var connect: TimeInterval
    /// Seconds from the start until the TLS handshake ended.
    package var tlsHandshake: TimeInterval
    /// Seconds from the start until the first response byte.
    package var timeToFirstByte: TimeInterval
    /// Seconds the whole transfer took.
    package var total: TimeInterval
    /// Seconds spent on redirects (always 0: Herald follows each as a transfer of its own).
    package var redirectTime: TimeInterval
    /// Request head bytes sent.
    package var requestHeaderBytes: Int64
    /// Request body bytes sent.
    package var requestBodyBytes: Int64
    /// Response head bytes received.
    package var responseHeaderBytes: Int64
    /// Response body bytes received.
    package var responseBodyBytes: Int64
    /// Redirects followed (always 0 here; the task counts its hops).
    package var redirectCount: Int
    /// Whether an existing connection carried the transfer.
    package var connectionReused: Bool
    /// The peer's IP address.
    package var remoteAddress: String?
    /// The peer's port.
    package var remotePort: Int?
    /// The local port.
    package var localPort: Int?
    /// The protocol version used, such as `"HTTP/1.1"`.
    package var httpVersion: String?
}

extension TransferTimings {
    /// Reads what a finished (or stopped) easy handle measured, on the loop thread, the one using it.
    init(easyHandle easy: UnsafeMutableRawPointer, startDate: Date) {
        func seconds(_ info: CURLINFO) -> TimeInterval {
            var microseconds: curl_off_t = 0
            herald_easy_getinfo_off(easy, info, &microseconds)
            return TimeInterval(microseconds) / 1_000_000
        }
        func offset(_ info: CURLINFO) -> Int64 {
            var value: curl_off_t = 0
            herald_easy_getinfo_off(easy, info, &value)
            return Int64(value)
        }
        func long(_ info: CURLINFO) -> Int {
            var value = 0
            herald_easy_getinfo_long(easy, info, &value)
            return value
        }
        func string(_ info: CURLINFO) -> String? {
            var value: UnsafeMutablePointer<CChar>?
            guard herald_easy_getinfo_string(easy, info, &value) == CURLE_OK, let value else { return nil }
            let text = String(cString: value)
            return text.isEmpty ? nil : text
        }
        let connects = long(CURLINFO_NUM_CONNECTS)
        let remotePort = long(CURLINFO_PRIMARY_PORT)
        let localPort = long(CURLINFO_LOCAL_PORT)
        self.init(
            startDate: startDate,
            nameLookup: seconds(CURLINFO_NAMELOOKUP_TIME_T),
            connect: seconds(CURLINFO_CONNECT_TIME_T),
            tlsHandshake: seconds(CURLINFO_APPCONNECT_TIME_T),
            timeToFirstByte: seconds(CURLINFO_STARTTRANSFER_TIME_T),
            total: seconds(CURLINFO_TOTAL_TIME_T),
            // Herald follows redirects as transfers of their own (CURLOPT_FOLLOWLOCATION is 0), so curl's
            // redirect time and count are zero; the task sets the count of the hops it followed.
            redirectTime: 0,
            requestHeaderBytes: Int64(long(CURLINFO_REQUEST_SIZE)),
            requestBodyBytes: offset(CURLINFO_SIZE_UPLOAD_T),
            responseHeaderBytes: Int64(long(CURLINFO_HEADER_SIZE)),
            responseBodyBytes: offset(CURLINFO_SIZE_DOWNLOAD_T),
            redirectCount: 0,
            connectionReused: connects == 0 && remotePort != 0,
            remoteAddress: string(CURLINFO_PRIMARY_IP),
            remotePort: remotePort == 0 ? nil : remotePort,
            localPort: localPort == 0 ? nil : localPort,
            httpVersion: Self.versionName(long(CURLINFO_HTTP_VERSION))
        )
    }

    private static func versionName(_ value: Int) -> String? {
        switch value {
        case Int(CURL_HTTP_VERSION_1_0): "HTTP/1.0"
        case Int(CURL_HTTP_VERSION_1_1): "HTTP/1.1"
        case Int(CURL_HTTP_VERSION_2_0): "HTTP/2"
        case Int(CURL_HTTP_VERSION_3): "HTTP/3"
        default: nil
        }
    }
}
