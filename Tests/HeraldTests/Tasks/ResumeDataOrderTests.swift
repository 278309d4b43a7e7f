import Dispatch
import Foundation
import Herald
import HeraldNotifications
import HeraldTesting
import Testing

/// A caller that keeps the bytes of a cancelled download (a CLI's `--continue`) reads the resume data in the task's
/// completion handler: the resume data handler must have run by then, whichever queue completions run on.
@Suite("Resume data reaches its handler before the task's completion handler")
struct ResumeDataOrderTests {
    @Test(
        "cancel(byProducingResumeData:): resume data handler, then completion handler, both on the completion queue",
        arguments: [false, true])
    func resumeDataBeforeCompletion(callerSuppliesQueue: Bool) async throws {
        let server = try await TestServer.start()
        let queue = DispatchQueue(label: "resume-data-order.completion")
        let session = SessionManager(
            notificationCenter: NotificationHub(), completionQueue: callerSuppliesQueue ? queue : nil)
        let calls = Locked<[String]>([])
        let completed = OneShot<Void>()
        let sessionQueue = session.completionQueue
        let cancel = ActionAtProgress<DownloadTask> { task in
            task.cancel(byProducingResumeData: { data in
                dispatchPrecondition(condition: .onQueue(sessionQueue))
                calls.withLock { $0.append("resume data \(data == nil ? "nil" : "present")") }
            })
        }
        let task = try session.downloadTask(
            with: Request(url: server.url("/bytes/2097152?\(stoppedBodyQuery(key: "order"))")),
            progress: cancel.handler,
            completionHandler: { _, _, error in
                calls.withLock { $0.append("completion \(error?.code.description ?? "none")") }
                completed.send(())
            })
        cancel.attach(task)
        task.resume()
        try await completed.value()
        #expect(calls.withLock { $0 } == ["resume data present", "completion cancelled"])
        session.invalidate(cancelingTasks: true)
        try? FileManager.default.removeItem(at: task.temporaryURL)
        try await server.shutdown()
    }
}
