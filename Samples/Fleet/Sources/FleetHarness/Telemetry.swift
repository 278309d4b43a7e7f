import Foundation

/// One sample of a PromQL answer: a series' labels and its value at the query's time.
public struct PromSample: Sendable, CustomStringConvertible {
    /// The series' labels, `__name__` included when the query keeps it.
    public let labels: [String: String]
    /// The value (`NaN` when Prometheus says so, as `histogram_quantile` over no data does).
    public let value: Double

    /// `{label="value", …} value`.
    public var description: String {
        let labels = labels.sorted { $0.key < $1.key }.map { "\($0.key)=\"\($0.value)\"" }.joined(separator: ", ")
        return "{\(labels)} \(value)"
    }
}

/// Prometheus's `/api/v1/query` answer, as far as an instant vector goes.
struct PromQueryAnswer: Decodable {
    struct Result: Decodable {
        struct Value: Decodable {
            let number: Double
            init(from decoder: any Decoder) throws {
                var container = try decoder.unkeyedContainer()
                _ = try container.decode(Double.self)
                let text = try container.decode(String.self)
                guard let number = Double(text) ?? (text == "NaN" ? .nan : nil) else {
                    throw DecodingError.dataCorruptedError(
                        in: container, debugDescription: "not a sample value: \(text)")
                }
                self.number = number
            }
        }
        let metric: [String: String]
        let value: Value
    }
    struct Payload: Decodable {
        let resultType: String
        let result: [Result]
    }
    let status: String
    let data: Payload?
    let error: String?
}

/// An attribute value as the OTLP receiver reports it in JSON.
public enum AttributeValue: Decodable, Sendable, Equatable, CustomStringConvertible {
    case string(String)
    case int(Int64)
    case double(Double)
    case bool(Bool)
    case other(String)

    /// Decodes a JSON scalar; arrays and objects become ``other(_:)``.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .int(value)
        } else if let value = try? container.decode(Double.self) {
            self = .double(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else {
            self = .other("…")
        }
    }

    /// The value as text.
    public var description: String {
        switch self {
        case .string(let value): value
        case .int(let value): String(value)
        case .double(let value): String(value)
        case .bool(let value): String(value)
        case .other(let value): value
        }
    }
}

/// A span the OTLP receiver decoded from what a service exported.
public struct ExportedSpan: Decodable, Sendable {
    /// The exporting service's `service.name`.
    public let service: String
    /// The exporting service's resource attributes: `service.name`, `service.version`,
    /// `service.instance.id`, swift-otel's `telemetry.sdk.*`, ….
    public let resource: [String: AttributeValue]
    /// The trace id, 32 hex digits.
    public let traceId: String
    /// The span id, 16 hex digits.
    public let spanId: String
    /// The parent's span id, empty for a root span.
    public let parentSpanId: String
    /// The span's name.
    public let name: String
    /// `SPAN_KIND_SERVER`, `SPAN_KIND_CLIENT`, …
    public let kind: String
    /// Start, nanoseconds since the epoch.
    public let startTimeUnixNano: UInt64
    /// End, nanoseconds since the epoch.
    public let endTimeUnixNano: UInt64
    /// The span's attributes.
    public let attributes: [String: AttributeValue]
    /// `STATUS_CODE_UNSET`, `STATUS_CODE_OK` or `STATUS_CODE_ERROR`.
    public let statusCode: String

    /// The span's duration in milliseconds.
    public var milliseconds: Double {
        Double(endTimeUnixNano &- startTimeUnixNano) / 1_000_000
    }
}

/// A metric data point the OTLP receiver decoded from what a service exported.
public struct ExportedMetricPoint: Decodable, Sendable {
    /// The exporting service's `service.name`.
    public let service: String
    /// The exporting service's resource attributes.
    public let resource: [String: AttributeValue]
    /// The metric's name, as OpenTelemetry spells it.
    public let name: String
    /// `histogram`, `sum`, `gauge`, …
    public let kind: String
    /// The instrument's unit, such as `s` (empty when the exporter sent none).
    public let unit: String
    /// The point's attributes.
    public let attributes: [String: AttributeValue]
    /// A histogram's count.
    public let count: UInt64?
    /// A histogram's bucket boundaries.
    public let explicitBounds: [Double]?
}

/// A log record the OTLP receiver decoded from what a service exported.
public struct ExportedLogRecord: Decodable, Sendable {
    /// The exporting service's `service.name`.
    public let service: String
    /// The record's body: the log message.
    public let body: AttributeValue?
    /// The severity's name (`DEBUG`, `INFO`, …).
    public let severity: String
    /// The trace id the record was logged in, empty for none.
    public let traceId: String
    /// The span id the record was logged in, empty for none.
    public let spanId: String
    /// The record's attributes (the logger's metadata).
    public let attributes: [String: AttributeValue]
}

/// A trace's spans as a tree, printed one span a line.
public enum TraceTree {
    /// The spans of one trace, each under its parent; spans whose parent is not among them are roots.
    /// - Parameter spans: One trace's spans.
    /// - Returns: Lines such as `service-a  SERVER  GET /work  3.1 ms`, children indented under parents.
    public static func render(_ spans: [ExportedSpan]) -> [String] {
        let ids = Set(spans.map(\.spanId))
        let children = Dictionary(grouping: spans) { ids.contains($0.parentSpanId) ? $0.parentSpanId : "" }
        var lines: [String] = []
        func visit(_ span: ExportedSpan, prefix: String, isLast: Bool, isRoot: Bool) {
            let branch = isRoot ? "" : (isLast ? "└─ " : "├─ ")
            let kind = span.kind.replacingOccurrences(of: "SPAN_KIND_", with: "")
            var details: [String] = []
            for key in ["http.response.status_code", "server.address", "server.port", "network.protocol.version"] {
                if let value = span.attributes[key] { details.append("\(key)=\(value)") }
            }
            let duration = String(format: "%.1f ms", span.milliseconds)
            lines.append(
                "\(prefix)\(branch)[\(span.service)] \(kind) \"\(span.name)\" \(duration)  span \(span.spanId)"
                    + (details.isEmpty ? "" : "  " + details.joined(separator: " ")))
            let next = children[span.spanId, default: []].sorted { $0.startTimeUnixNano < $1.startTimeUnixNano }
            for (index, child) in next.enumerated() {
                visit(
                    child, prefix: isRoot ? prefix : prefix + (isLast ? "   " : "│  "), isLast: index == next.count - 1,
                    isRoot: false)
            }
        }
        for root in children["", default: []].sorted(by: { $0.startTimeUnixNano < $1.startTimeUnixNano }) {
            visit(root, prefix: "", isLast: true, isRoot: true)
        }
        return lines
    }
}
