/*
 * hold-resident: keeps a file's pages in memory until it is stopped. Used by
 * Benchmarks/run-transfers.sh for the large source file nginx serves, so that every client's
 * download reads it from the page cache and none from the disk.
 *
 * Why: a kernel may reclaim page-cache pages that look idle even with plenty of memory free. The
 * project's machine runs DAMON with a `pageout` scheme for unmapped, non-anonymous pages idle for a
 * minute (up to 128 MiB a second), so between the large rows the source file was dropped in part,
 * and whichever download came next paid for reading it back. Mapped pages escape that scheme (it
 * filters on "unmapped"); only locked pages escape reclaim altogether. This maps the whole file
 * shared and read-only, faulting every page in (MAP_POPULATE), and locks it if allowed
 * (RLIMIT_MEMLOCK, usually 8 MiB for an unprivileged user; a failure to lock is reported and the
 * mapping kept).
 *
 * usage: hold-resident FILE
 * Prints "resident N bytes (locked|mapped)" once the pages are in, then waits for SIGTERM, SIGINT or
 * SIGHUP, or for its parent to end (it asks for SIGTERM then, so a killed script leaves no holder).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: hold-resident FILE\n");
        return 2;
    }
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGHUP);
    sigprocmask(SIG_BLOCK, &stop, NULL);
    pid_t parent = getppid();
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) return 0; /* the parent ended before the request */

    int fd = open(argv[1], O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "hold-resident: %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        fprintf(stderr, "hold-resident: %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    if (st.st_size == 0) {
        fprintf(stderr, "hold-resident: %s: empty file\n", argv[1]);
        return 1;
    }
    size_t length = (size_t)st.st_size;
    void *pages = mmap(NULL, length, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0);
    if (pages == MAP_FAILED) {
        fprintf(stderr, "hold-resident: mmap %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    close(fd);
    int locked = mlock(pages, length) == 0;
    if (!locked) fprintf(stderr, "hold-resident: mlock: %s (the pages stay mapped)\n", strerror(errno));
    printf("resident %zu bytes (%s)\n", length, locked ? "locked" : "mapped");
    fflush(stdout);

    int sig = 0;
    sigwait(&stop, &sig);
    munmap(pages, length);
    return 0;
}
