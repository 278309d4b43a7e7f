#ifndef HERALD_CUV_SHIM_H
#define HERALD_CUV_SHIM_H
#include <uv.h>
#include <errno.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* The engine's wake-up: an eventfd that the loop thread watches with a uv_poll_t. libuv 1.44's
   uv_async_send marks its handle busy, writes its own eventfd and only then marks it done, and the loop
   thread it wakes spins (up to 997 compare-and-swaps, then sched_yield) until the sender has returned
   from that write: on two cores, about 6% of the process's CPU one request at a time. */

/* A non-blocking, close-on-exec eventfd; -1 with errno set when the kernel refuses one. */
static inline int herald_wakeup_open(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }

/* Adds one to the eventfd's counter, which makes it readable: 0, or -1 with errno set. */
static inline int herald_wakeup_signal(int fd) {
    uint64_t one = 1;
    for (;;) {
        ssize_t written = write(fd, &one, sizeof one);
        if (written == (ssize_t)sizeof one) return 0;
        if (written < 0 && errno == EINTR) continue;
        /* EAGAIN: the counter is at its maximum, so the eventfd is readable already. */
        return written < 0 && errno == EAGAIN ? 0 : -1;
    }
}

/* Resets the eventfd's counter to zero (it is no longer readable until the next signal). */
static inline void herald_wakeup_clear(int fd) {
    uint64_t count;
    while (read(fd, &count, sizeof count) < 0 && errno == EINTR) {}
}
#endif
