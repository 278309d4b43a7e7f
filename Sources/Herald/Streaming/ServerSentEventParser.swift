/// Turns an event stream's bytes into ``ServerSentEvent``s, as the WHATWG HTML standard's "Interpreting an
/// event stream" says, a chunk at a time (chunks may split lines, and CRLF pairs, anywhere).
///
/// - A UTF-8 byte order mark at the very start of the stream is skipped (once).
/// - Lines end at CRLF, LF or CR; a blank line dispatches the event collected so far.
/// - A line starting with `:` is a comment. A line without a colon is a field name with an empty value; one
///   space after the colon is dropped from the value.
/// - `event` sets the type, `data` appends its value and an LF (the last LF is dropped at dispatch), `id`
///   sets the last event ID buffer unless the value contains NUL, another control character (a byte below
///   0x20 other than tab, or DEL: the reconnection sends the ID as a request field, where these are not
///   allowed) or is longer than ``maximumEventIDLength`` bytes (a blank line makes it the last event ID), `retry` sets the reconnection time when the value is
///   ASCII digits only; other fields are ignored.
/// - An event whose data buffer is empty is not dispatched (its type is reset; an `id` still counts).
/// - An incomplete event at the end of the stream is discarded (``endOfStream()``).
///
/// Text is decoded as UTF-8, an invalid sequence becoming U+FFFD. Field names are compared as bytes.
///
/// A line, or an event's data, longer than ``maximumEventSize`` bytes is not collected: the parser stops at
/// it, sets ``exceededMaximumEventSize`` and ignores the rest of the stream until ``endOfStream()``, so a server
/// that never ends a line or an event cannot make it hold more than that.
public struct ServerSentEventParser: Sendable {
    /// The default of ``maximumEventSize``: 16 MiB.
    public static let defaultMaximumEventSize = 16 << 20
    /// The longest `id` taken, in bytes: 64 KiB. A longer one is ignored, as one with a NUL is: a reconnection
    /// sends the last event ID as a request field, and libcurl refuses to send a request of more than 1 MiB,
    /// so a server's larger `id` would make every reconnection fail before anything is sent.
    public static let maximumEventIDLength = 64 << 10

    /// The most bytes one line, or one event's data, may take.
    public let maximumEventSize: Int
    /// Whether the stream sent a line or an event larger than ``maximumEventSize``; the parser then ignores
    /// the rest of the stream. Cleared by ``endOfStream()``.
    public private(set) var exceededMaximumEventSize = false
    /// The last event ID string: the `id` as of the last blank line (an event dispatched, or a block without
    /// data), what a reconnection sends as `Last-Event-ID`. An `id` in an event the stream never finished does
    /// not count, so a reconnection asks for that event again. Kept across ``endOfStream()``.
    public private(set) var lastEventID = ""
    /// The reconnection time the stream set with `retry`, in milliseconds; `nil` until it sets one. Kept
    /// across ``endOfStream()``.
    public private(set) var reconnectionTime: Int?

    /// The last event ID buffer: the latest `id` field, made the last event ID string at the next blank line.
    private var idBuffer = ""
    private var line: [UInt8] = []
    private var data: [UInt8] = []
    private var eventType: [UInt8] = []
    private var retryInEvent: Int?
    private var afterCR = false
    private var atStreamStart = true

    /// Creates a parser for a new stream.
    /// - Parameters:
    ///   - lastEventID: The last event ID to start from, as a reconnection knows it; default none.
    ///   - maximumEventSize: The most bytes one line, or one event's data, may take (at least 1); default
    ///     ``defaultMaximumEventSize``.
    public init(lastEventID: String = "", maximumEventSize: Int = Self.defaultMaximumEventSize) {
        self.lastEventID = lastEventID
        self.idBuffer = lastEventID
        self.maximumEventSize = max(1, maximumEventSize)
    }

    /// Parses the next bytes of the stream and returns the events they complete, in order.
    /// - Parameter bytes: The next bytes, any number, split anywhere.
    /// - Returns: The events dispatched by blank lines in these bytes.
    public mutating func parse(_ bytes: some Collection<UInt8>) -> [ServerSentEvent] {
        var events: [ServerSentEvent] = []
        guard !exceededMaximumEventSize else { return events }
        let handled: Void? = bytes.withContiguousStorageIfAvailable { buffer in
            consume(UnsafeRawBufferPointer(buffer), into: &events)
        }
        if handled == nil {
            let copy = Array(bytes)
            copy.withUnsafeBytes { consume($0, into: &events) }
        }
        return events
    }

    /// The stream ended: the incomplete line and event (its `id` too) are discarded, and the parser is ready for
    /// the next connection's stream (its BOM skipped again); the last event ID and the reconnection time stay.
    public mutating func endOfStream() {
        idBuffer = lastEventID
        line.removeAll(keepingCapacity: true)
        data.removeAll(keepingCapacity: true)
        eventType.removeAll(keepingCapacity: true)
        retryInEvent = nil
        afterCR = false
        atStreamStart = true
        exceededMaximumEventSize = false
    }

    private mutating func consume(_ bytes: UnsafeRawBufferPointer, into events: inout [ServerSentEvent]) {
        var start = 0
        let count = bytes.count
        if atStreamStart, count > 0 {
            // The BOM may arrive split over chunks: collect up to three bytes before deciding.
            let bom: [UInt8] = [0xEF, 0xBB, 0xBF]
            while start < count, line.count < 3, bytes[start] == bom[line.count] {
                line.append(bytes[start])
                start += 1
            }
            if line.count == 3 {
                line.removeAll(keepingCapacity: true)
                atStreamStart = false
            } else if start < count {
                // Not a BOM: what was collected is the start of the first line.
                atStreamStart = false
            } else {
                return
            }
        }
        var index = start
        while index < count {
            let byte = bytes[index]
            if byte == 0x0A || byte == 0x0D {
                if byte == 0x0A, afterCR, index == start, line.isEmpty {
                    // The LF of a CRLF whose CR ended the line.
                    afterCR = false
                } else {
                    guard fits(line.count + (index - start)) else { return }
                    line.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[start..<index]))
                    processLine(into: &events)
                    guard !exceededMaximumEventSize else { return }
                    line.removeAll(keepingCapacity: true)
                    afterCR = byte == 0x0D
                }
                start = index + 1
            }
            index += 1
        }
        if start < count {
            guard fits(line.count + (count - start)) else { return }
            line.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[start..<count]))
            afterCR = false
        }
    }

    /// Whether `size` bytes are within ``maximumEventSize``; if not, drops the line and event being collected
    /// and marks the stream as over the limit.
    private mutating func fits(_ size: Int) -> Bool {
        guard size > maximumEventSize else { return true }
        exceededMaximumEventSize = true
        line.removeAll()
        data.removeAll()
        eventType.removeAll()
        return false
    }

    private mutating func processLine(into events: inout [ServerSentEvent]) {
        guard let first = line.first else { return dispatch(into: &events) }
        if first == UInt8(ascii: ":") { return }
        let colon = line.firstIndex(of: UInt8(ascii: ":"))
        let nameEnd = colon ?? line.count
        var valueStart = colon.map { $0 + 1 } ?? line.count
        if valueStart < line.count, line[valueStart] == UInt8(ascii: " ") { valueStart += 1 }
        let name = line[0..<nameEnd]
        let value = line[valueStart..<line.count]
        if name.elementsEqual("data".utf8) {
            guard fits(data.count + value.count + 1) else { return }
            data.append(contentsOf: value)
            data.append(0x0A)
        } else if name.elementsEqual("event".utf8) {
            eventType = Array(value)
        } else if name.elementsEqual("id".utf8) {
            // The standard ignores only an ID with NUL; one with another control character is ignored too, as
            // it could not be sent back in `Last-Event-ID` and the reconnection would fail for good.
            if value.count <= Self.maximumEventIDLength,
                !value.contains(where: { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F })
            {
                idBuffer = String(decoding: value, as: UTF8.self)
            }
        } else if name.elementsEqual("retry".utf8) {
            guard !value.isEmpty, value.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
                return
            }
            // All digits: a value too large for an Int saturates rather than being ignored.
            let milliseconds = Int(String(decoding: value, as: UTF8.self)) ?? Int.max
            reconnectionTime = milliseconds
            retryInEvent = milliseconds
        }
    }

    private mutating func dispatch(into events: inout [ServerSentEvent]) {
        defer {
            data.removeAll(keepingCapacity: true)
            eventType.removeAll(keepingCapacity: true)
            retryInEvent = nil
        }
        lastEventID = idBuffer
        guard !data.isEmpty else { return }
        data.removeLast()
        events.append(
            ServerSentEvent(
                id: lastEventID,
                event: eventType.isEmpty ? "message" : String(decoding: eventType, as: UTF8.self),
                data: String(decoding: data, as: UTF8.self), retry: retryInEvent))
    }
}
