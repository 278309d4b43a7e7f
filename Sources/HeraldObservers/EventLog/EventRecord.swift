import Foundation
import Herald

/// One line of a ``JSONLinesEventLog``: a notification flattened to JSON-friendly fields.
///
/// Absent fields are left out of the JSON. Keys are stable: `event` (the notification's raw name, such
/// as `herald.task.complete`), `time` (ISO 8601 with milliseconds, UTC), `session`, `task`, `method`,
/// `url` (credentials redacted), `status`, `error` (the error code's description), `errorMessage`,
/// `finalURL`, `bytesSent`, `bytesReceived` (body bytes), `duration` (seconds), `redirects`, `file` (a
/// download's file; for `herald.download.move-file-failed`, the kept temporary file), `destination` (for
/// `herald.download.move-file-failed`, where the file was meant to go). `method` and `url` are on every
/// task event, `herald.download.move-file-failed` included. `attempt` and `delay` (seconds) are on retries only.
/// `herald.task.waiting-for-connectivity` has `error` and `errorMessage` (the attempt that found no network).
/// `herald.reachability.change` has no `session`: `reachability` and `previousReachability` (status labels
/// such as `reachable_via_ethernet`), `interface` (its name) and `host` (the host followed, if any).
public struct EventRecord: Codable, Sendable, Hashable {
    /// The notification's raw name.
    public var event: String
    /// When it happened, ISO 8601.
    public var time: String
    /// The session identifier; `nil` for reachability changes, which belong to no session.
    public var session: Int?
    /// The task identifier; `nil` for session events.
    public var task: Int?
    /// The request method.
    public var method: String?
    /// The request URL, redacted.
    public var url: String?
    /// The response status code.
    public var status: Int?
    /// The error code's description, such as `"timed_out"`.
    public var error: String?
    /// The error's message.
    public var errorMessage: String?
    /// The URL of the final response, redacted.
    public var finalURL: String?
    /// Request body bytes sent.
    public var bytesSent: Int64?
    /// Response body bytes received.
    public var bytesReceived: Int64?
    /// Seconds from the last transfer's start to its end (not a redirect's, nor a failed attempt's before it).
    public var duration: Double?
    /// Redirects followed.
    public var redirects: Int?
    /// A download's file path (for a failed move: the kept temporary file).
    public var file: String?
    /// For a failed move: where the file was meant to go.
    public var destination: String?
    /// For a retry: the attempt about to start (2 for the first retry).
    public var attempt: Int?
    /// For a retry: the seconds waited before it.
    public var delay: Double?
    /// For a reachability change: the new status's label.
    public var reachability: String?
    /// For a reachability change: the previous status's label.
    public var previousReachability: String?
    /// For a reachability change to a reachable status: the interface's name.
    public var interface: String?
    /// For a reachability change of a monitor that follows a host: the host.
    public var host: String?
}
