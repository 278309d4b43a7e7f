import Foundation
import HeraldEngine

/// How a task's transfer ended, in public values: what the task's machine, its hooks and its completion see.
///
/// The fields live in one copy-on-write box: an outcome is about 370 bytes, and on its way from the loop
/// thread through the task's state machine to the completion handler it is copied about a dozen times
/// (into closures, effects, the task's transition). A copy of the box is one retain; only a write to an
/// outcome that shares its box copies the fields.
struct TaskOutcome: Sendable {
    private var box: Box

    init(
        response: HTTPResponse?, body: Data, file: DownloadedFile? = nil, error: HeraldError?,
        metrics: TransferMetrics?, source: ResponseSource = .network
    ) {
        box = Box(
            Fields(response: response, body: body, file: file, error: error, metrics: metrics, source: source))
    }

    /// The public form of how a transfer ended. Loop thread.
    init(_ outcome: TransferOutcome) {
        self.init(
            response: outcome.response.map { HTTPResponse($0) }, body: outcome.body, file: outcome.file,
            error: outcome.error.map { HeraldError($0) }, metrics: outcome.metrics.map { TransferMetrics($0) })
    }

    var response: HTTPResponse? {
        get { box.fields.response }
        _modify { yield &uniqueBox().fields.response }
    }
    /// The body collected in memory; empty for downloads.
    var body: Data {
        get { box.fields.body }
        _modify { yield &uniqueBox().fields.body }
    }
    /// The file the body was written to, for downloads.
    var file: DownloadedFile? {
        get { box.fields.file }
        _modify { yield &uniqueBox().fields.file }
    }
    var error: HeraldError? {
        get { box.fields.error }
        _modify { yield &uniqueBox().fields.error }
    }
    var metrics: TransferMetrics? {
        get { box.fields.metrics }
        _modify { yield &uniqueBox().fields.metrics }
    }
    /// Where the response came from: the network, the session's response cache, or the cache after a `304`.
    var source: ResponseSource {
        get { box.fields.source }
        _modify { yield &uniqueBox().fields.source }
    }
    /// Whether the session's response cache answered without the network.
    var isFromCache: Bool { source == .cache }

    /// The box, copied first if another outcome shares it.
    private mutating func uniqueBox() -> Box {
        if !isKnownUniquelyReferenced(&box) { box = Box(box.fields) }
        return box
    }

    private struct Fields {
        var response: HTTPResponse?
        var body: Data
        var file: DownloadedFile?
        var error: HeraldError?
        var metrics: TransferMetrics?
        var source: ResponseSource
    }

    private final class Box: @unchecked Sendable {
        // Safety: a box is only written through `uniqueBox()`, when the outcome writing it holds the only
        // reference; a box that two outcomes (or two threads) read is never written, only copied.
        @exclusivity(unchecked) var fields: Fields

        init(_ fields: Fields) { self.fields = fields }
    }
}
