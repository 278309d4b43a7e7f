import Foundation

extension MetricsObserver.Instrument {
    /// The instrument's name as Prometheus's conventions (and OpenTelemetry's Prometheus exporter) spell it:
    /// `http_client_request_duration_seconds`, `http_client_response_body_size_bytes`,
    /// `herald_client_request_retries_total`. See ``MetricsObserver/prometheusName(_:unit:isCounter:)``.
    public var prometheusName: String {
        MetricsObserver.prometheusName(name, unit: unit, isCounter: kind == .counter)
    }
}

extension MetricsObserver {
    /// The Prometheus name of a metric named and measured as OpenTelemetry does.
    ///
    /// Every character a Prometheus name does not allow (the dots, first of all) becomes `_`; the unit
    /// follows as a suffix unless the name already ends with it: `s` is `_seconds`, `ms` `_milliseconds`,
    /// `By` `_bytes`; an annotation such as `{request}` and the dimensionless `1` add nothing. A counter
    /// ends with `_total`.
    /// - Parameters:
    ///   - name: The OpenTelemetry name, such as `http.client.request.duration`.
    ///   - unit: Its unit in UCUM, such as `s`.
    ///   - isCounter: Whether it is a monotonic counter.
    /// - Returns: A valid Prometheus metric name, such as `http_client_request_duration_seconds`.
    public static func prometheusName(_ name: String, unit: String, isCounter: Bool) -> String {
        var result = String(
            name.unicodeScalars.enumerated().map { index, scalar -> Character in
                let isLetter =
                    ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || scalar == "_"
                    || scalar == ":"
                let isDigit = ("0"..."9").contains(scalar)
                return isLetter || (isDigit && index > 0) ? Character(scalar) : "_"
            })
        if let suffix = prometheusUnitSuffixes[unit], !result.hasSuffix("_" + suffix) {
            result += "_" + suffix
        }
        if isCounter, !result.hasSuffix("_total") {
            result += "_total"
        }
        return result
    }

    /// A label name as Prometheus allows it: every character other than a letter, digit or `_` becomes `_`
    /// (`http.response.status_code` is `http_response_status_code`).
    /// - Parameter name: A dimension name.
    /// - Returns: The label name.
    public static func prometheusLabelName(_ name: String) -> String {
        String(
            name.unicodeScalars.enumerated().map { index, scalar -> Character in
                let isLetter = ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || scalar == "_"
                let isDigit = ("0"..."9").contains(scalar)
                return isLetter || (isDigit && index > 0) ? Character(scalar) : "_"
            })
    }

    /// Renames a metric this observer exports to its Prometheus name (``Instrument/prometheusName``), turns
    /// its dimension names into label names and drops the `unit` and `description` dimensions that
    /// ``Configuration/describesInstruments`` adds, which Prometheus would otherwise make labels of every
    /// series. Any other metric passes unchanged.
    ///
    /// Its shape is that of swift-prometheus's `PrometheusMetricsFactory.nameAndLabelSanitizer`. That
    /// factory looks a histogram's buckets up by the name this returns, so give it
    /// ``prometheusDurationBuckets`` and ``prometheusValueBuckets`` too, which are keyed by the Prometheus
    /// names: buckets keyed by the OpenTelemetry names would no longer be found.
    /// - Parameters:
    ///   - name: The swift-metrics label.
    ///   - dimensions: The swift-metrics dimensions.
    /// - Returns: The Prometheus name and labels.
    public static func prometheusNameAndLabels(
        _ name: String, _ dimensions: [(String, String)]
    ) -> (String, [(String, String)]) {
        guard let instrument = instrumentsByName[name] else { return (name, dimensions) }
        let labels = dimensions.compactMap { key, value in
            key == "unit" || key == "description" ? nil : (prometheusLabelName(key), value)
        }
        // swift-prometheus stops the process when one name is made both with and without labels (a connection
        // closed before it had a peer address, then one that had, without `server.address`): an instrument that
        // may carry attributes is never made without any.
        guard labels.isEmpty, !instrument.attributes.isEmpty else { return (instrument.prometheusName, labels) }
        return (instrument.prometheusName, [prometheusPlaceholderLabel])
    }

    /// The label ``prometheusNameAndLabels(_:_:)`` gives a metric that may carry attributes and has none:
    /// `herald_unlabeled="true"`, as the fleet sample's `HeraldPrometheusFactory` does.
    public static let prometheusPlaceholderLabel = (name: "herald_unlabeled", value: "true")

    /// The advised buckets of the timers (``advisedDurationBuckets``, ``advisedConnectionDurationBuckets``) as
    /// `Duration`s, keyed by the Prometheus names ``prometheusNameAndLabels(_:_:)`` gives:
    /// `http_client_request_duration_seconds`, `http_client_request_time_in_queue_seconds` and
    /// `http_client_connection_duration_seconds`. For swift-prometheus's `durationHistogramBuckets`.
    public static let prometheusDurationBuckets: [String: [Duration]] = Dictionary(
        uniqueKeysWithValues: instruments.compactMap { instrument in
            guard instrument.unit == "s", let buckets = instrument.buckets else { return nil }
            return (instrument.prometheusName, buckets.map { Duration.nanoseconds(Int64(($0 * 1e9).rounded())) })
        })

    /// The advised buckets of the recorders (``advisedBodySizeBuckets``), keyed by the Prometheus names
    /// ``prometheusNameAndLabels(_:_:)`` gives: `http_client_request_body_size_bytes` and
    /// `http_client_response_body_size_bytes`. For swift-prometheus's `valueHistogramBuckets`.
    public static let prometheusValueBuckets: [String: [Double]] = Dictionary(
        uniqueKeysWithValues: instruments.compactMap { instrument in
            guard instrument.unit != "s", let buckets = instrument.buckets else { return nil }
            return (instrument.prometheusName, buckets)
        })

    /// UCUM units and the suffix Prometheus's conventions give a metric measured in them.
    private static let prometheusUnitSuffixes: [String: String] = [
        "s": "seconds", "ms": "milliseconds", "us": "microseconds", "ns": "nanoseconds", "By": "bytes",
        "KiBy": "kibibytes", "MiBy": "mebibytes", "%": "percent",
    ]
}
