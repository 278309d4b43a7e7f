/// What the engine's owner asks it to do with one of its transfers: the whole vocabulary between the layer above
/// and the engine. Commands go to the engine (``Engine/execute(_:on:)``), which carries them out on the loop
/// thread, in the order they were sent.
package enum TransferCommand: Sendable {
    /// Add the transfer to the connection pool.
    case start(Transfer)
    /// Pause receiving and sending (``Transfer/pause()``).
    case pause(Transfer)
    /// Continue a paused transfer where it stopped (``Transfer/unpause()``).
    case unpause(Transfer)
    /// A streamed body's consumer drained its buffer below the low watermark: continue receiving
    /// (``Transfer/consumerDidDrain()``). Not the user's resume; it posts nothing.
    case resumeReceiving(Transfer)
    /// A streamed body's reader has bytes (or the body's end, or a failure) for a transfer whose read callback
    /// paused for want of them: continue sending (``Transfer/bodyDidBecomeAvailable()``). Posts nothing.
    case bodyAvailable(Transfer)
    /// The task allowed the response its transfer is paused at (``Transfer/allowResponse()``).
    case allowResponse(Transfer)
    /// The data task became a download: the body goes to `sink`, and `delegate` hears about the transfer.
    case becomeDownload(Transfer, sink: TransferSink, delegate: any TransferDelegate)
    /// Stop the transfer and finish it with `error`.
    case remove(Transfer, error: TransferError)
    /// Close the session's connection pool: every transfer still in it finishes with `error`, and its
    /// connections, sockets and timers close (``MultiHandle/close(cancellingWith:)``).
    case closePool(TransferError)
}

extension MultiHandle {
    /// Carries out `command`. Loop thread only, outside curl callbacks.
    func perform(_ command: TransferCommand) {
        switch command {
        case .start(let transfer):
            add(transfer)
        case .pause(let transfer):
            transfer.pause()
            park(transfer)
        case .unpause(let transfer):
            if let error = transfer.unpause() {
                remove(transfer, error: error)
            } else {
                unpark(transfer)
            }
        case .resumeReceiving(let transfer):
            if let error = transfer.consumerDidDrain() { remove(transfer, error: error) }
        case .bodyAvailable(let transfer):
            transfer.bodyDidBecomeAvailable()
        case .allowResponse(let transfer):
            if let error = transfer.allowResponse() { remove(transfer, error: error) }
        case .becomeDownload(let transfer, let sink, let delegate):
            if let error = transfer.becomeDownload(sink: sink, delegate: delegate) {
                remove(transfer, error: error)
            }
        case .remove(let transfer, let error):
            remove(transfer, error: error)
        case .closePool(let error):
            close(cancellingWith: error)
        }
    }
}
