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
    /// Seconds from when the transfer was added to its multi handle until libcurl began to connect or took a
    /// pooled connection (see `init(easyHandle:startDate:addedAt:firstResponseLineAt:)`); `nil` when no
    /// response byte arrived.
    package var timeInQueue: TimeInterval?
    /// The number of the connection that carried the transfer in its session's pool (``ConnectionChange``);
    /// `nil` when it had none.
    package var connectionIdentifier: Int? = nil
}

/// A precise monotonic clock for the time a transfer waits for a connection (``ActivityClock`` is coarse:
/// a few milliseconds, as much as a queue wait often is).
enum QueueClock {
    /// Now, in nanoseconds since an arbitrary start.
    static var now: UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
    }
}

extension TransferTimings {
    /// Reads what a finished (or stopped) easy handle measured, on the loop thread, the one using it.
    ///
    /// libcurl 7.88 has no queue time of its own (`CURLINFO_QUEUE_TIME_T` is 8.6's), but its times other than
    /// the total count from the moment it last began to connect: when it leaves the queue of transfers that
    /// wait for a connection under the per-host and total limits. So the wait is the loop's time from
    /// `addedAt` (when the transfer was added to the multi handle) to `firstResponseLineAt` (when the first
    /// response line reached the header callback) less curl's time to the first byte over that same stretch.
    /// It includes the wait for the loop to pick the transfer up. Both are ``QueueClock`` instants, 0 when
    /// unknown: a transfer that ended before any response byte has no queue time, as curl 7.88 does not say
    /// whether it was still waiting.
    init(easyHandle easy: UnsafeMutableRawPointer, startDate: Date, addedAt: UInt64, firstResponseLineAt: UInt64) {
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
        let timeToFirstByte = seconds(CURLINFO_STARTTRANSFER_TIME_T)
        var timeInQueue: TimeInterval?
        if addedAt != 0, firstResponseLineAt >= addedAt {
            timeInQueue = max(0, TimeInterval(firstResponseLineAt - addedAt) / 1e9 - timeToFirstByte)
        }
        self.init(
            startDate: startDate,
            nameLookup: seconds(CURLINFO_NAMELOOKUP_TIME_T),
            connect: seconds(CURLINFO_CONNECT_TIME_T),
            tlsHandshake: seconds(CURLINFO_APPCONNECT_TIME_T),
            timeToFirstByte: timeToFirstByte,
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
            httpVersion: Self.versionName(long(CURLINFO_HTTP_VERSION)),
            timeInQueue: timeInQueue
        )
    }

    /// Moves the times libcurl measured from an attempt that began `seconds` after ``startDate`` to count from
    /// ``startDate``, as every time here does: the phases the attempt reached (a time above 0) and the total.
    mutating func moveLater(by seconds: TimeInterval) {
        for keyPath in [\Self.nameLookup, \.connect, \.tlsHandshake, \.timeToFirstByte, \.total]
        where self[keyPath: keyPath] > 0 {
            self[keyPath: keyPath] += seconds
        }
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
