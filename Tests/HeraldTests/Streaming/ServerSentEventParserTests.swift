import Herald
import Testing

/// The event-stream parser against the WHATWG HTML standard's "Server-sent events" section: its examples,
/// then the rules its "Interpreting an event stream" steps spell out, each edge on its own.
@Suite("Server-sent event parsing as the WHATWG HTML standard says")
struct ServerSentEventParserTests {
    /// Parses `text` in one chunk, then ends the stream.
    private static func events(_ text: String) -> [ServerSentEvent] {
        var parser = ServerSentEventParser()
        let events = parser.parse(Array(text.utf8))
        parser.endOfStream()
        return events
    }

    @Test("the standard's stock-ticker example: three data lines make one event joined with LF")
    func multiLineData() {
        #expect(Self.events("data: YHOO\ndata: +2\ndata: 10\n\n") == [ServerSentEvent(data: "YHOO\n+2\n10")])
    }

    @Test("the standard's second example: a comment, ids, an id field without a value resetting the last ID")
    func commentsAndIDs() {
        let text = ": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n\n"
        #expect(
            Self.events(text) == [
                ServerSentEvent(id: "1", data: "first event"),
                ServerSentEvent(id: "", data: "second event"),
                // One space after the colon is dropped, the second is kept.
                ServerSentEvent(id: "", data: " third event"),
            ])
    }

    @Test("the standard's third example: empty data, a data of one LF, and an incomplete last block discarded")
    func emptyDataAndIncompleteLastEvent() {
        #expect(
            Self.events("data\n\ndata\ndata\n\ndata:") == [ServerSentEvent(data: ""), ServerSentEvent(data: "\n")])
    }

    @Test("the standard's fourth example: a space after the colon is optional")
    func optionalSpace() {
        #expect(
            Self.events("data:test\n\ndata: test\n\n") == [
                ServerSentEvent(data: "test"), ServerSentEvent(data: "test"),
            ])
    }

    @Test("CRLF, LF and CR all end lines, mixed in one stream")
    func lineEnds() {
        let events = Self.events("data: a\r\ndata: b\rdata: c\n\r\nevent: e\rdata: d\r\r")
        #expect(events == [ServerSentEvent(data: "a\nb\nc"), ServerSentEvent(event: "e", data: "d")])
    }

    @Test("a CRLF split between two chunks ends one line, not two (no empty line dispatches early)")
    func crlfSplitAcrossChunks() {
        var parser = ServerSentEventParser()
        #expect(parser.parse(Array("data: a\r".utf8)) == [])
        // Were this LF a line of its own, it would dispatch "a" alone here.
        #expect(parser.parse(Array("\ndata: b\r".utf8)) == [])
        #expect(parser.parse(Array("\n\r\n".utf8)) == [ServerSentEvent(data: "a\nb")])
    }

    @Test("every split of the standard's examples into two chunks parses as the whole does")
    func everySplitPoint() {
        let text = Array(
            "\u{FEFF}: c\r\nid: 7\r\nevent: add\r\ndata: x\r\ndata\r\n\r\ndata: y\rretry: 20\r\r:z\ndata: w\n\n".utf8)
        let whole = Self.events(String(decoding: text, as: UTF8.self))
        #expect(whole.count == 3)
        for split in 0...text.count {
            var parser = ServerSentEventParser()
            let events = parser.parse(text[..<split]) + parser.parse(text[split...])
            #expect(events == whole, "split at \(split)")
        }
    }

    @Test("a byte order mark is skipped at the start of the stream only, even when it arrives byte by byte")
    func byteOrderMark() {
        var parser = ServerSentEventParser()
        for byte in [0xEF, 0xBB, 0xBF] as [UInt8] { #expect(parser.parse([byte]) == []) }
        #expect(parser.parse(Array("data: a\n\n".utf8)) == [ServerSentEvent(data: "a")])
        // Later, the same bytes are part of a field name that isn't `data`: the line is ignored.
        #expect(parser.parse(Array("\u{FEFF}data: b\n\ndata: c\n\n".utf8)) == [ServerSentEvent(data: "c")])
    }

    @Test("a line without a colon is a field with an empty value; unknown fields are ignored")
    func fieldsWithoutColon() {
        #expect(Self.events("data\ndata\nfoo: bar\nbaz\n\n") == [ServerSentEvent(data: "\n")])
    }

    @Test("the event type applies to its own event only; the default is message")
    func eventType() {
        #expect(
            Self.events("event: add\ndata: 1\n\ndata: 2\n\n") == [
                ServerSentEvent(event: "add", data: "1"), ServerSentEvent(event: "message", data: "2"),
            ])
    }

    @Test("a block without data dispatches nothing, but sets the last event ID and resets the type")
    func blockWithoutData() {
        var parser = ServerSentEventParser()
        #expect(parser.parse(Array("id: 5\nevent: ignored\n\n".utf8)) == [])
        #expect(parser.lastEventID == "5")
        #expect(
            parser.parse(Array("data: after\n\n".utf8)) == [ServerSentEvent(id: "5", event: "message", data: "after")])
    }

    @Test("an id containing NUL is ignored; the last event ID carries over to later events")
    func idWithNull() {
        let events = Self.events("id: 1\ndata: a\n\nid: 2\u{0}x\ndata: b\n\n")
        #expect(events == [ServerSentEvent(id: "1", data: "a"), ServerSentEvent(id: "1", data: "b")])
    }

    @Test("an id with a control character other than tab is ignored, as a reconnection could not send it")
    func idWithControlCharacter() {
        for ignored in ["2\u{1}x", "2\u{1B}[0m", "2\u{7F}", "2\u{0B}"] {
            let events = Self.events("id: 1\ndata: a\n\nid: \(ignored)\ndata: b\n\n")
            #expect(events.map(\.id) == ["1", "1"], "\(ignored.debugDescription)")
        }
        let tabbed = Self.events("id: 1\t2\ndata: a\n\n")
        #expect(tabbed.map(\.id) == ["1\t2"])
    }

    @Test("an id longer than 64 KiB is ignored, as a reconnection could not send it; one of 64 KiB is taken")
    func overlongID() {
        let longest = String(repeating: "i", count: ServerSentEventParser.maximumEventIDLength)
        let events = Self.events("id: 1\ndata: a\n\nid: \(longest)x\ndata: b\n\nid: \(longest)\ndata: c\n\n")
        #expect(events.map(\.id) == ["1", "1", longest])
        #expect(events.map(\.data) == ["a", "b", "c"])
    }

    @Test("retry takes ASCII digits only; other values are ignored; a retry-only block dispatches nothing")
    func retry() {
        var parser = ServerSentEventParser()
        #expect(parser.parse(Array("retry: 1500\n\n".utf8)) == [])
        #expect(parser.reconnectionTime == 1500)
        for ignored in ["retry: 15x", "retry: +5", "retry: -1", "retry: 1.5", "retry:", "retry: 1 "] {
            #expect(parser.parse(Array("\(ignored)\n\n".utf8)) == [])
            #expect(parser.reconnectionTime == 1500, "\(ignored)")
        }
        #expect(parser.parse(Array("retry: 0\ndata: x\n\n".utf8)) == [ServerSentEvent(data: "x", retry: 0)])
        #expect(parser.reconnectionTime == 0)
    }

    @Test("invalid UTF-8 becomes U+FFFD")
    func invalidUTF8() {
        var parser = ServerSentEventParser()
        let events = parser.parse(Array("data: a".utf8) + [0xFF] + Array("b\n\n".utf8))
        #expect(events == [ServerSentEvent(data: "a\u{FFFD}b")])
    }

    @Test("the end of a stream discards the incomplete event; the last event ID and retry survive it")
    func endOfStream() {
        var parser = ServerSentEventParser()
        #expect(
            parser.parse(Array("id: 3\nretry: 10\ndata: 3\n\nid: 4\ndata: half".utf8)) == [
                ServerSentEvent(id: "3", data: "3", retry: 10)
            ])
        parser.endOfStream()
        // `id: 4` belongs to the event that never ended: a reconnection asks from 3, so event 4 isn't lost.
        #expect(parser.lastEventID == "3")
        #expect(parser.reconnectionTime == 10)
        // The next connection's stream starts clean: no leftover data or id joins its first event.
        #expect(parser.parse(Array("data: next\n\n".utf8)) == [ServerSentEvent(id: "3", data: "next")])
    }

    @Test("a parser started from a last event ID gives it to events until the stream sets another")
    func startingLastEventID() {
        var parser = ServerSentEventParser(lastEventID: "41")
        #expect(
            parser.parse(Array("data: x\n\nid: 42\ndata: y\n\n".utf8)) == [
                ServerSentEvent(id: "41", data: "x"), ServerSentEvent(id: "42", data: "y"),
            ])
    }

    @Test("a line longer than the limit: the events before it are returned, the rest ignored until the stream ends")
    func lineOverLimit() {
        var parser = ServerSentEventParser(maximumEventSize: 16)
        #expect(parser.maximumEventSize == 16)
        let text = "data: a\n\ndata: " + String(repeating: "x", count: 20) + "\n\ndata: b\n\n"
        #expect(parser.parse(Array(text.utf8)) == [ServerSentEvent(data: "a")])
        #expect(parser.exceededMaximumEventSize)
        // Nothing more is parsed from this stream, whatever follows.
        #expect(parser.parse(Array("data: c\n\n".utf8)).isEmpty)
        parser.endOfStream()
        #expect(!parser.exceededMaximumEventSize)
        #expect(parser.parse(Array("data: d\n\n".utf8)) == [ServerSentEvent(data: "d")])
    }

    @Test("a line without an end, arriving a chunk at a time, stops at the limit; so does data over many lines")
    func growingOverLimit() {
        var parser = ServerSentEventParser(maximumEventSize: 16)
        for _ in 0..<3 { #expect(parser.parse(Array("xxxxx".utf8)).isEmpty) }
        #expect(!parser.exceededMaximumEventSize)  // 15 bytes: within the limit
        #expect(parser.parse(Array("xx".utf8)).isEmpty)
        #expect(parser.exceededMaximumEventSize)
        var lines = ServerSentEventParser(maximumEventSize: 16)
        // Each data line adds its value and an LF: 6 + 6 fit, the third would make 18.
        #expect(lines.parse(Array("data: 12345\ndata: 12345\n".utf8)).isEmpty)
        #expect(!lines.exceededMaximumEventSize)
        #expect(lines.parse(Array("data: 12345\n\n".utf8)).isEmpty)
        #expect(lines.exceededMaximumEventSize)
    }
}
