/// The four states of a ``NetworkActivityIndicator``, as in AFNetworking's
/// `AFNetworkActivityIndicatorManager`.
///
/// `notActive` → `delayingStart` (activation delay) → `active` → `delayingEnd` (completion delay) →
/// `notActive`. The indicator is visible in `active` and `delayingEnd`.
public enum ActivityIndicatorState: String, Sendable, Hashable, CustomStringConvertible {
    /// Nothing running, indicator hidden.
    case notActive
    /// Tasks are running but for less than the activation delay; still hidden, so short requests never
    /// flash the indicator.
    case delayingStart
    /// Tasks have been running for longer than the activation delay; shown.
    case active
    /// The last task finished less than the completion delay ago; still shown, so back-to-back
    /// requests don't make it flicker.
    case delayingEnd

    /// Whether the indicator is shown in this state.
    public var isVisible: Bool { self == .active || self == .delayingEnd }

    /// The raw value, such as `"delayingStart"`.
    public var description: String { rawValue }
}

/// One transition of a ``NetworkActivityIndicator``, as passed to its change handler.
public struct ActivityIndicatorChange: Sendable, Hashable, CustomStringConvertible {
    /// The state before.
    public let from: ActivityIndicatorState
    /// The state after.
    public let to: ActivityIndicatorState
    /// How many tasks were running when the state changed.
    public let runningTaskCount: Int

    /// Whether the indicator's visibility changed with this transition.
    public var visibilityChanged: Bool { from.isVisible != to.isVisible }

    /// `"notActive -> delayingStart (1 running)"`.
    public var description: String { "\(from) -> \(to) (\(runningTaskCount) running)" }
}
