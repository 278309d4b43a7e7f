/// The table printed at the end: one row per URL with status, size, time, error and the file it was saved to,
/// then a line of totals.
struct SummaryTable {
    let outcome: FetchRun.Outcome
    let console: Console

    func render() -> String {
        let results = outcome.results
        let showsFiles = results.contains { $0.file != nil }
        var header = ["URL", "STATUS", "SIZE", "TIME", "ERROR"]
        if showsFiles { header.append("FILE") }
        let rows = results.map { result -> [String] in
            var status = result.status.map(String.init) ?? "-"
            if result.failure != nil && result.behavedAsExpected { status += " (planned)" }
            var error = result.failure?.message ?? ""
            if result.attempts > 1 {
                error += error.isEmpty ? "after \(result.attempts) attempts" : " (\(result.attempts) attempts)"
            }
            var row = [
                console.redacted(result.target.url), status, ByteFormat.string(result.bytes),
                String(format: "%.2fs", result.seconds), error,
            ]
            if showsFiles {
                switch result.file {
                case .saved(let path): row.append(path)
                case .keptAfterFailedMove(let path): row.append("kept at " + path)
                case .partial(let path): row.append("partial, kept at " + path)
                case .alreadyThere(let path): row.append("already there: " + path)
                case nil: row.append("")
                }
            }
            return row
        }
        var widths = header.map(\.count)
        for row in rows {
            for (column, cell) in row.enumerated() { widths[column] = max(widths[column], cell.count) }
        }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { column, cell in
                let padding = String(repeating: " ", count: widths[column] - cell.count)
                // Numbers read better right-aligned.
                return (2...3).contains(column) ? padding + cell : cell + padding
            }.joined(separator: "  ").trimmingTrailingSpaces()
        }
        let failed = results.filter { !$0.behavedAsExpected }.count
        let total = results.reduce(Int64(0)) { $0 + $1.bytes }
        var text = ([line(header)] + rows.map(line)).joined(separator: "\n") + "\n"
        text += "\(results.count) URLs, \(ByteFormat.string(total)), "
        text += failed == 0 ? "all as expected" : "\(failed) failed"
        if outcome.notStarted > 0 { text += ", \(outcome.notStarted) not started" }
        switch outcome.interruptedBy {
        case .hungUp: text += " (hung up by SIGHUP)"
        case .interrupted: text += " (interrupted by SIGINT)"
        case .terminated: text += " (terminated by SIGTERM)"
        default: break
        }
        return text + "\n"
    }
}

extension String {
    func trimmingTrailingSpaces() -> String {
        var copy = self
        while copy.last == " " { copy.removeLast() }
        return copy
    }
}

/// `1.5 MiB`, `512 B`.
enum ByteFormat {
    static func string(_ bytes: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(bytes)
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(bytes) B" : String(format: "%.1f", value) + " " + units[unit]
    }
}
