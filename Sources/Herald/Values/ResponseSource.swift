/// Where a task's response came from: the network, the session's ``ResponseCache`` alone, or the cache
/// after the server confirmed the stored entry.
///
/// Reported in ``TaskCompletion/responseSource`` and by the observers of `HeraldObservers` (a log field, a
/// metric attribute and a span attribute, each named `herald.response.source`, with `rawValue` as the
/// value). Three values, so a metric dimension built from it stays bounded.
public enum ResponseSource: String, Sendable, Hashable, CaseIterable {
    /// The response came over the network: no cache, nothing usable stored, or the stored entry replaced by
    /// a new answer (a `200` to a revalidation included). Also a task that failed before any response.
    case network
    /// A stored response answered the task without the network: fresh, stale within the request's
    /// `max-stale`, or stale within its `stale-while-revalidate` window (revalidated in the background).
    case cache
    /// A stored response answered the task after the server confirmed it with a `304 Not Modified` to a
    /// conditional request; the response carries the `304`'s updated header fields and the stored body.
    case revalidated
}
