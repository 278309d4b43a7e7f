/*
 * rusage-run: runs a command and writes its resource usage, from wait4(2), to a file.
 * Used by Benchmarks/run-transfers.sh instead of /usr/bin/time, whose -f output has
 * only 10 ms resolution for CPU time.
 *
 * usage: rusage-run OUTFILE COMMAND [ARG...]
 * OUTFILE gets one line: "<user µs> <sys µs> <max RSS KiB> <wall s>".
 * The exit status is the command's (128 + signal when it was killed). SIGINT, SIGTERM and
 * SIGHUP are forwarded to the command, so stopping the script stops the client too.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t child;

static void forward(int sig) {
    if (child > 0) kill(child, sig);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: rusage-run OUTFILE COMMAND [ARG...]\n");
        return 2;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 2;
    }
    if (pid == 0) {
        signal(SIGINT, SIG_DFL);
        execvp(argv[2], argv + 2);
        perror(argv[2]);
        _exit(127);
    }
    child = pid;
    struct sigaction sa = {0};
    sa.sa_handler = forward;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    int status = 0;
    struct rusage ru;
    pid_t waited;
    while ((waited = wait4(pid, &status, 0, &ru)) < 0 && errno == EINTR) {
    }
    if (waited < 0) {
        perror("wait4");
        return 2;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    FILE *out = fopen(argv[1], "w");
    if (!out) {
        perror(argv[1]);
        return 2;
    }
    long long user_us = (long long)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec;
    long long sys_us = (long long)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec;
    double wall = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    fprintf(out, "%lld %lld %ld %.6f\n", user_us, sys_us, ru.ru_maxrss, wall);
    fclose(out);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}
