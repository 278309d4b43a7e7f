import CCurl
import Foundation

/// A finished transfer's easy handle, out of its multi handle, on its way back to its pool inside the
/// transfer's outcome. On the thread that completes the task ``settle()`` reads the transfer's metrics
/// from it, and then it goes back to the pool, so that the loop thread, which every transfer of the engine
/// shares, does neither: reading the metrics is some sixteen `curl_easy_getinfo` calls.
///
/// Only a handle the pool has promised a place (``EasyHandlePool/reserveReturn()``) travels: with the idle
/// ones, the handles on their way back never outnumber the pool's places, however far the completion queue
/// falls behind (each keeps curl's receive buffer, 64 KiB or more). Any other finished handle is read and
/// freed on the loop thread, as a failed transfer's is.
///
/// curl keeps what the metrics read (times, sizes, addresses, the HTTP version) in the handle until it is
/// reset or runs again, and a handle out of its multi handle belongs to no connection, so the one thread
/// that holds this value may read it and hand it back. Not copyable, and its `deinit` gives the handle back:
/// after ``settle()``, or when an outcome is dropped before it was settled, exactly once.
struct FinishedEasyHandle: ~Copyable {
    private let easy: UnsafeMutableRawPointer
    private let pool: EasyHandlePool
    private let profile: EasyHandleProfile?
    private let startDate: Date

    /// A handle that `pool` has promised a place to.
    init(
        _ easy: UnsafeMutableRawPointer, returningTo pool: EasyHandlePool, profile: EasyHandleProfile?, startDate: Date
    ) {
        self.easy = easy
        self.pool = pool
        self.profile = profile
        self.startDate = startDate
    }

    /// The transfer's metrics; then (in `deinit`) the handle goes back to its pool.
    consuming func settle() -> TransferMetrics {
        TransferMetrics(easyHandle: easy, startDate: startDate)
    }

    deinit {
        pool.give(easy, profile: profile, reserved: true)
    }
}
