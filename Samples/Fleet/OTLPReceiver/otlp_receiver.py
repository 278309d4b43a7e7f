"""A loopback OTLP/HTTP receiver for the fleet sample's tests and demo.

It accepts what an OTLP/HTTP exporter sends (protobuf bodies on /v1/traces, /v1/metrics and /v1/logs,
optionally gzip-compressed), decodes them with the opentelemetry-proto package, keeps them in memory and
answers queries in JSON:

    GET /spans     every span received: trace and span ids, parent, name, kind, service, resource, attributes
    GET /metrics   every metric data point received: name, kind, unit, service, resource, attributes, count or
                   value
    GET /logs      every log record received: service, body, severity, trace and span ids

A query may wait for news: `?after=N&wait=S` answers once more than N records of its kind are held, or
after S seconds (at most 60) with what there is. A test that expects an export then waits for the
exporter's request to arrive instead of polling.

It binds 127.0.0.1 only, on the port given (0: any free one), and prints `listening on PORT` once ready.

Its limits: an export needs a Content-Length (411 without one, or with Transfer-Encoding) of at most
MAXIMUM_BODY bytes (413 beyond), and decompresses to at most MAXIMUM_DECOMPRESSED bytes (413 beyond); a body
it cannot decode gets 400. It holds the last MAXIMUM_RECORDS records of each kind, dropping the oldest.
"""

import json
import signal
import sys
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

LOCK = threading.Lock()
# Notified whenever an export adds records; a waiting query sleeps on it.
CHANGED = threading.Condition(LOCK)
MAXIMUM_WAIT = 60.0
MAXIMUM_BODY = 16 * 1024 * 1024
MAXIMUM_DECOMPRESSED = 64 * 1024 * 1024
MAXIMUM_RECORDS = 100_000
SPANS = []
METRIC_POINTS = []
LOGS = []


def keep(records, store):
    """Adds an export's records to their store and wakes the queries waiting for news."""
    with CHANGED:
        store.extend(records)
        if len(store) > MAXIMUM_RECORDS:
            del store[:len(store) - MAXIMUM_RECORDS]
        CHANGED.notify_all()


def enum_name(enum, number):
    """The name of `number` in `enum`, or the number in decimal when it is not one the package knows (so that
    the field stays a string)."""
    try:
        return enum.Name(number)
    except ValueError:
        return str(number)


class TooLarge(Exception):
    """A body that decompresses to more than MAXIMUM_DECOMPRESSED bytes."""


def gunzip(body):
    decompressor = zlib.decompressobj(wbits=31)
    data = decompressor.decompress(body, MAXIMUM_DECOMPRESSED)
    if decompressor.unconsumed_tail:
        raise TooLarge()
    if not decompressor.eof:
        raise zlib.error("truncated gzip body")
    return data


def any_value(value):
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return attributes(value.kvlist_value.values)
    if kind == "bytes_value":
        return value.bytes_value.hex()
    return getattr(value, kind)


def attributes(key_values):
    return {kv.key: any_value(kv.value) for kv in key_values}


def service_name(resource):
    return attributes(resource.attributes).get("service.name", "")


def record_traces(body):
    request = trace_service_pb2.ExportTraceServiceRequest()
    request.ParseFromString(body)
    spans = []
    for resource_spans in request.resource_spans:
        service = service_name(resource_spans.resource)
        resource = attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                spans.append({
                    "service": service,
                    "resource": resource,
                    "traceId": span.trace_id.hex(),
                    "spanId": span.span_id.hex(),
                    "parentSpanId": span.parent_span_id.hex(),
                    "name": span.name,
                    "kind": enum_name(trace_pb2.Span.SpanKind, span.kind),
                    "startTimeUnixNano": span.start_time_unix_nano,
                    "endTimeUnixNano": span.end_time_unix_nano,
                    "attributes": attributes(span.attributes),
                    "statusCode": enum_name(trace_pb2.Status.StatusCode, span.status.code),
                })
    keep(spans, SPANS)
    return trace_service_pb2.ExportTraceServiceResponse()


def record_metrics(body):
    request = metrics_service_pb2.ExportMetricsServiceRequest()
    request.ParseFromString(body)
    points = []
    for resource_metrics in request.resource_metrics:
        service = service_name(resource_metrics.resource)
        resource = attributes(resource_metrics.resource.attributes)
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                kind = metric.WhichOneof("data")
                if kind is None:
                    continue
                for point in getattr(metric, kind).data_points:
                    entry = {"service": service, "resource": resource, "name": metric.name, "kind": kind,
                             "unit": metric.unit, "attributes": attributes(point.attributes)}
                    if kind in ("histogram", "exponential_histogram"):
                        entry["count"] = point.count
                        entry["sum"] = point.sum
                    if kind == "histogram":
                        entry["explicitBounds"] = list(point.explicit_bounds)
                        entry["bucketCounts"] = list(point.bucket_counts)
                    if kind in ("sum", "gauge"):
                        entry["value"] = point.as_double if point.WhichOneof("value") == "as_double" else point.as_int
                    points.append(entry)
    keep(points, METRIC_POINTS)
    return metrics_service_pb2.ExportMetricsServiceResponse()


def record_logs(body):
    request = logs_service_pb2.ExportLogsServiceRequest()
    request.ParseFromString(body)
    records = []
    for resource_logs in request.resource_logs:
        service = service_name(resource_logs.resource)
        for scope_logs in resource_logs.scope_logs:
            for record in scope_logs.log_records:
                records.append({
                    "service": service,
                    "body": any_value(record.body),
                    "severity": record.severity_text,
                    "traceId": record.trace_id.hex(),
                    "spanId": record.span_id.hex(),
                    "attributes": attributes(record.attributes),
                })
    keep(records, LOGS)
    return logs_service_pb2.ExportLogsServiceResponse()


EXPORTS = {"/v1/traces": record_traces, "/v1/metrics": record_metrics, "/v1/logs": record_logs}
QUERIES = {"/spans": SPANS, "/metrics": METRIC_POINTS, "/logs": LOGS}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass

    def answer(self, status, content_type, body):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def refuse(self, status, text):
        """Answers `status` and closes the connection: the body that was not read must not be taken for the
        next request."""
        self.close_connection = True
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(text)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(text)

    def do_POST(self):  # noqa: N802 - the base class's name
        if self.headers.get("Transfer-Encoding") is not None:
            return self.refuse(411, b"Transfer-Encoding is not supported: send a Content-Length\n")
        field = self.headers.get("Content-Length")
        if field is None:
            return self.refuse(411, b"Content-Length required\n")
        # isdigit() alone takes "²" and other Unicode digits that int() refuses.
        if not (field.strip().isascii() and field.strip().isdigit()):
            return self.refuse(400, b"malformed Content-Length\n")
        length = int(field)
        if length > MAXIMUM_BODY:
            return self.refuse(413, f"body over {MAXIMUM_BODY} bytes\n".encode())
        body = self.rfile.read(length)
        if len(body) < length:
            self.close_connection = True
            return
        record = EXPORTS.get(self.path)
        if record is None:
            return self.answer(404, "text/plain", b"no such OTLP signal\n")
        try:
            if self.headers.get("Content-Encoding", "").lower() == "gzip":
                body = gunzip(body)
            response = record(body)
        except TooLarge:
            return self.answer(413, "text/plain", f"body decompresses to over {MAXIMUM_DECOMPRESSED} bytes\n".encode())
        except (DecodeError, zlib.error, ValueError, OSError, EOFError) as error:
            return self.answer(400, "text/plain", f"undecodable OTLP body: {error}\n".encode())
        self.answer(200, "application/x-protobuf", response.SerializeToString())

    def do_GET(self):  # noqa: N802 - the base class's name
        url = urlsplit(self.path)
        store = QUERIES.get(url.path)
        if store is None:
            return self.answer(404, "text/plain", b"unknown query\n")
        try:
            query = parse_qs(url.query, strict_parsing=bool(url.query))
            after = int(query.get("after", ["0"])[-1])
            wait = float(query.get("wait", ["0"])[-1])
        except ValueError as error:
            return self.answer(400, "text/plain", f"bad query: {error}\n".encode())
        if after < 0 or not 0 <= wait <= MAXIMUM_WAIT:
            return self.answer(400, "text/plain", f"after must be >= 0, wait within 0...{MAXIMUM_WAIT}\n".encode())
        with CHANGED:
            CHANGED.wait_for(lambda: len(store) > after, timeout=wait)
            body = json.dumps(store).encode()
        self.answer(200, "application/json", body)


def main():
    # The harness stops the receiver with SIGTERM, but a child inherits its parent's signal mask, and the
    # Swift thread that starts the receiver has SIGTERM blocked: unblock it and handle it.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
    signal.signal(signal.SIGINT, lambda signum, frame: sys.exit(0))
    try:
        port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
        if not 0 <= port <= 65535:
            raise ValueError
    except ValueError:
        print(f"otlp_receiver: the port must be a number within 0...65535, not {sys.argv[1]!r}", file=sys.stderr)
        sys.exit(2)
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    print(f"listening on {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
