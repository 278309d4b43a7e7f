import Dispatch
import Foundation
import Herald
import HeraldObservers
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Shows the activity indicator on stderr while transfers run.
///
/// On a terminal: an animated line (spinner, running count, bytes, rate, then each unfinished file of known
/// length with its percentage and estimated time left, up to three), redrawn ten times a second while the
/// indicator is visible and erased when it hides; colour unless `NO_COLOR` is set. Otherwise:
/// a plain line when the indicator shows or hides, and a progress line at most once a second between.
final class ActivityDisplay: Sendable {
    private struct State {
        /// The bytes each download received in this run, over all its attempts: a resumed one's partial file
        /// is not counted.
        var bytesByTask: [Int: Int64] = [:]
        /// What the attempts before the current one received, in ``bytesByTask``.
        var earlierAttemptsByTask: [Int: Int64] = [:]
        /// The bytes the current attempt's partial file held when it started: a retry that continues the file
        /// starts from where the last attempt left it.
        var resumedFromByTask: [Int: Int64] = [:]
        /// The bytes the partial file held when the run started, for the rate and the time left.
        var heldAtStartByTask: [Int: Int64] = [:]
        /// How much of each file there is now, partial file included, for its percentage.
        var receivedByTask: [Int: Int64] = [:]
        /// Each download's declared length and when its first bytes were seen, for its percentage and ETA.
        var filesByTask: [Int: (total: Int64, start: ContinuousClock.Instant)] = [:]
        var isVisible = false
        var spinnerFrame = 0
        var lastPlainLine: ContinuousClock.Instant?
        var rateSample: (time: ContinuousClock.Instant, bytes: Int64)?
        var rate: Double = 0
        var hiddenWaiters: [CheckedContinuation<Void, Never>] = []
        /// Set by ``endWaits()``: waiting for the display to hide is over for good.
        var waitsEnded = false
        var timer: RedrawTimer?
        var lineIsDrawn = false
        /// Whether "waiting for the network" was said: once per run, however many transfers wait.
        var saidWaiting = false
        /// Set once stderr refused a write (closed, full, its reader gone): the display stops for good and
        /// the downloads go on.
        var isBroken = false
    }

    private static let spinner = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]

    let isTerminal: Bool
    let usesColor: Bool
    private let state = Mutex(State())
    private let indicatorBox = Mutex<NetworkActivityIndicator?>(nil)
    private let queue = DispatchQueue(label: "activity-counter.display")
    private let clock = ContinuousClock()

    let isEnabled: Bool

    /// - Parameter enabled: `false` (`--quiet`) shows nothing at all.
    init(enabled: Bool = true, environment: [String: String] = ProcessInfo.processInfo.environment) {
        isEnabled = enabled
        isTerminal = enabled && isatty(STDERR_FILENO) == 1 && environment["TERM"] != "dumb"
        usesColor = isTerminal && (environment["NO_COLOR"] ?? "").isEmpty
    }

    /// The indicator whose running count is shown.
    var indicator: NetworkActivityIndicator? {
        get { indicatorBox.withLock { $0 } }
        set { indicatorBox.withLock { $0 = newValue } }
    }

    func start() {
        let now = clock.now
        state.withLock { $0.rateSample = (now, 0) }
        guard isTerminal else { return }
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now(), repeating: .milliseconds(100))
        timer.setEventHandler { [weak self] in self?.redraw() }
        state.withLock { $0.timer = RedrawTimer(source: timer) }
        timer.resume()
    }

    func stop() {
        let timer = state.withLock { state -> RedrawTimer? in
            defer { state.timer = nil }
            return state.timer
        }
        timer?.source.cancel()
        queue.sync { erase() }
    }

    /// Records the bytes a download's current attempt has, partial file included, and its length when declared
    /// (`total > 0`). An attempt that continues a partial file starts from its `resumedFrom` bytes: only what
    /// arrives after them is counted in the bytes and the rate. A retry that continues the file where the last
    /// attempt left it reports a new `resumedFrom`, and one that starts it over reports fewer bytes than the last
    /// attempt had: either way, what the last attempt received stays counted.
    func progress(_ task: Int, bytes: Int64, total: Int64 = 0, resumedFrom: Int64 = 0) {
        let now = clock.now
        let plain = state.withLock { state -> Bool in
            if let previous = state.resumedFromByTask[task],
                previous != resumedFrom || bytes < (state.receivedByTask[task] ?? 0)
            {
                // A new attempt: the last one's bytes are kept, and this one counts from its own start.
                state.earlierAttemptsByTask[task] = state.bytesByTask[task] ?? 0
            }
            if state.heldAtStartByTask[task] == nil { state.heldAtStartByTask[task] = resumedFrom }
            let earlier = state.earlierAttemptsByTask[task] ?? 0
            state.bytesByTask[task] = max(state.bytesByTask[task] ?? 0, earlier + max(0, bytes - resumedFrom))
            state.resumedFromByTask[task] = resumedFrom
            state.receivedByTask[task] = bytes
            if total > 0, state.filesByTask[task]?.total != total { state.filesByTask[task] = (total, now) }
            guard !isTerminal, state.isVisible else { return false }
            let now = clock.now
            if let last = state.lastPlainLine, last.duration(to: now) < .seconds(1) { return false }
            state.lastPlainLine = now
            return true
        }
        if plain, isEnabled { writePlain(progressLine()) }
    }

    /// The indicator moved: on a terminal the next redraw shows it; otherwise say so in a plain line.
    func indicatorChanged(_ change: ActivityIndicatorChange) {
        guard change.visibilityChanged else { return }
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.isVisible = change.to.isVisible
            state.lastPlainLine = clock.now
            guard !state.isVisible else { return [] }
            defer { state.hiddenWaiters = [] }
            return state.hiddenWaiters
        }
        if !isTerminal, isEnabled {
            writePlain(
                change.to.isVisible ? "activity: shown, " + progressLine() : "activity: hidden, " + progressLine())
        }
        waiters.forEach { $0.resume() }
    }

    /// Returns once the indicator is hidden, or after `timeout` seconds.
    func waitUntilHidden(timeout: Double) async {
        let deadline = DispatchTime.now() + timeout
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let hidden = state.withLock { state -> Bool in
                if !state.isVisible || state.waitsEnded { return true }
                state.hiddenWaiters.append(continuation)
                return false
            }
            if hidden {
                continuation.resume()
                return
            }
            queue.asyncAfter(deadline: deadline) { [self] in
                let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
                    defer { state.hiddenWaiters = [] }
                    return state.hiddenWaiters
                }
                waiters.forEach { $0.resume() }
            }
        }
    }

    /// Ends every wait for the display to hide, now and later (a signal: the user wants the prompt back).
    func endWaits() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.waitsEnded = true
            defer { state.hiddenWaiters = [] }
            return state.hiddenWaiters
        }
        waiters.forEach { $0.resume() }
    }

    // MARK: - rendering (display queue for the terminal)

    func progressLine() -> String {
        let running = indicator?.runningTaskCount ?? 0
        let (bytes, rate) = state.withLock { state -> (Int64, Double) in
            let bytes = state.bytesByTask.values.reduce(0, +)
            let now = clock.now
            if let sample = state.rateSample {
                let elapsed = sample.time.duration(to: now)
                let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
                if seconds >= 0.5 {
                    state.rate = Double(bytes - sample.bytes) / seconds
                    state.rateSample = (now, bytes)
                }
            } else {
                state.rateSample = (now, bytes)
            }
            return (bytes, state.rate)
        }
        var line = "\(running) active, \(ByteFormat.string(bytes)), \(ByteFormat.string(Int64(rate)))/s"
        if isTerminal {
            for file in unfinishedFiles().prefix(3) { line += " · " + file }
        }
        return line
    }

    /// The percentage and time left of each download of known length still under way, in the order they
    /// started: one that ended (saved, failed, or waiting to try again) is no longer one.
    func unfinishedFiles() -> [String] {
        let now = clock.now
        return state.withLock { state in
            state.filesByTask.sorted { $0.key < $1.key }.compactMap { task, file -> String? in
                let resumedFrom = state.heldAtStartByTask[task] ?? 0
                let received = state.receivedByTask[task] ?? 0
                guard received < file.total else { return nil }
                let elapsed = file.start.duration(to: now)
                let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
                return Self.fileProgress(
                    received: received, total: file.total, seconds: seconds, resumedFrom: resumedFrom)
            }
        }
    }

    /// A download's attempt ended: its file leaves the progress line (a failed one would stay there for the
    /// rest of the run, its time left growing); what it received stays counted. A next attempt's first
    /// progress brings it back.
    func attemptEnded(_ task: Int) {
        state.withLock { _ = $0.filesByTask.removeValue(forKey: task) }
    }

    /// `"45% ETA 0:12"`: how much of a file of `total` bytes has arrived, and the time left at the average rate
    /// since its first bytes (`seconds` ago); `"45%"` alone until there is a rate to go by. `resumedFrom`: the
    /// bytes of `received` a partial file already held, which count in the percentage but not in the rate.
    static func fileProgress(received: Int64, total: Int64, seconds: Double, resumedFrom: Int64 = 0) -> String {
        guard total > 0 else { return "" }
        let percent = Int(min(received, total) * 100 / total)
        let arrived = received - min(resumedFrom, received)
        guard arrived > 0, seconds >= 0.5 else { return "\(percent)%" }
        let left = Double(total - min(received, total)) / (Double(arrived) / seconds)
        guard left.isFinite, left < 360_000 else { return "\(percent)%" }
        let whole = Int(left.rounded(.up))
        let clock =
            whole >= 3600
            ? String(format: "%d:%02d:%02d", whole / 3600, whole / 60 % 60, whole % 60)
            : String(format: "%d:%02d", whole / 60, whole % 60)
        return "\(percent)% ETA \(clock)"
    }

    private func redraw() {
        let (visible, frame) = state.withLock { state -> (Bool, Int) in
            state.spinnerFrame = (state.spinnerFrame + 1) % Self.spinner.count
            return (state.isVisible, state.spinnerFrame)
        }
        guard visible else {
            erase()
            return
        }
        let spinner = Self.spinner[frame]
        // Never wider than the terminal: a wrapped line leaves rows that "\r\e[2K" does not clear.
        let line = Self.fitted(progressLine(), columns: Self.terminalColumns().map { $0 - 2 })
        let text = usesColor ? "\u{1B}[36m\(spinner)\u{1B}[0m \(line)" : "\(spinner) \(line)"
        state.withLock { $0.lineIsDrawn = true }
        writeRaw("\r\u{1B}[2K" + text)
    }

    /// `line` cut to fit in `columns` (minus one: writing the last column wraps on some terminals), with "…"
    /// where it was cut; whole when the width is unknown. Every character the line holds takes one column.
    static func fitted(_ line: String, columns: Int?) -> String {
        guard let columns else { return line }
        let width = max(columns - 1, 1)
        guard line.count > width else { return line }
        return String(line.prefix(width - 1)) + "…"
    }

    /// The terminal's width on stderr, read again at each redraw (the window may be resized), or `nil`.
    static func terminalColumns() -> Int? {
        var size = winsize()
        guard ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return nil }
        return Int(size.ws_col)
    }

    /// A transfer found no network and waits for one (`--wait-for-network`): says so on stderr, once per run,
    /// on a line of its own (the animated line is erased first and redrawn at its next tick).
    func waitingForNetwork(because error: HeraldError) {
        guard isEnabled else { return }
        let first = state.withLock { state -> Bool in
            defer { state.saidWaiting = true }
            return !state.saidWaiting
        }
        guard first else { return }
        queue.async { [self] in
            erase()
            writePlain("waiting for the network (\(error.message)); the transfers start when a route appears")
        }
    }

    /// Writes `line` on stderr on a line of its own. On a terminal the animated line is erased first and redrawn
    /// at its next tick, in order with the redraws: a retry's note doesn't land on the end of the progress line.
    func writeLine(_ line: String) {
        guard isTerminal else {
            // A closed or full stderr loses the line, never the run.
            StandardStream.write(line + "\n", to: STDERR_FILENO)
            return
        }
        queue.sync {
            erase()
            writePlain(line)
        }
    }

    private func erase() {
        let drawn = state.withLock { state -> Bool in
            defer { state.lineIsDrawn = false }
            return state.lineIsDrawn
        }
        if drawn { writeRaw("\r\u{1B}[2K") }
    }

    private func writePlain(_ line: String) {
        writeRaw(line + "\n")
    }

    private func writeRaw(_ text: String) {
        guard !state.withLock({ $0.isBroken }) else { return }
        guard StandardStream.write(text, to: STDERR_FILENO) != nil else { return }
        let timer = state.withLock { state -> RedrawTimer? in
            state.isBroken = true
            defer { state.timer = nil }
            return state.timer
        }
        timer?.source.cancel()
    }
}

/// The terminal's redraw timer, kept in the display's state.
///
/// Safety: a dispatch source may be resumed and cancelled from any thread; `DispatchSourceTimer` is not marked
/// `Sendable` only because it is a protocol existential.
private struct RedrawTimer: @unchecked Sendable {
    let source: any DispatchSourceTimer
}
