extension TransferStateMachine {
    /// How far the response being received has got, as far as the task's answer and the sink care.
    enum ResponseStage: Equatable {
        /// No body byte has reached the sink, and the task has not allowed the response.
        case head
        /// The task allowed the response; its first body byte has not reached the sink yet.
        case allowed
        /// The sink was told about the response at its first body byte; `wasAllowed` says whether the
        /// task had answered for it (an answer holds for the rest of the transfer).
        case body(wasAllowed: Bool)

        /// Whether the task has allowed the response (and so is not asked again in this transfer).
        var isAllowed: Bool {
            switch self {
            case .head, .body(wasAllowed: false): false
            case .allowed, .body(wasAllowed: true): true
            }
        }

        /// Whether the sink has been told about the response.
        var didBegin: Bool {
            guard case .body = self else { return false }
            return true
        }

        /// The stage once the sink has been told about the response.
        var begun: Self { .body(wasAllowed: isAllowed) }

        /// The stage at the next response head: no body yet, the task's answer kept.
        var restarted: Self { isAllowed ? .allowed : .head }
    }
}
