/*
 * curl-uv-client: the C baseline for `make bench-transfers`.
 *
 * libcurl multi + libuv in the style of curl's docs/examples/multi-uv.c:
 * curl_multi_socket_action driven by one uv_poll_t per curl socket and one
 * uv_timer_t. It keeps CONCURRENCY transfers in flight until REQUESTS GETs have
 * completed, checks every one (status 200, expected body size), and prints one
 * JSON line with the wall time of that phase.
 *
 * Easy handles: by default CONCURRENCY easy handles are created up front and
 * reused (remove from the multi, add again); `--fresh` creates and cleans up
 * one easy handle per request instead. Either way the multi handle's
 * connection cache keeps HTTP/1.1 connections alive across requests.
 *
 * Large transfers (the 1 GiB rows of Docs/Performance.md) run one GET of the whole body:
 *   --download-to PATH  writes the body to PATH as it arrives (fwrite, stdio-buffered, like the
 *                       curl tool) and closes it when the transfer ends (no fsync); the script
 *                       compares PATH with the source.
 *   --in-memory         collects the body in one growing heap buffer (doubling realloc; glibc
 *                       grows large blocks with mremap, so growing does not copy).
 *   --stream            counts the body's bytes as they arrive and keeps none: what a consumer of a
 *                       streamed body that only looks at each chunk costs.
 * Each needs CONCURRENCY = REQUESTS = 1 and --expect-bytes, and prints
 *   {"client":"c","mode":"download-file"|"data-memory"|"stream","bytes":B,"seconds":S,...}
 * --buffer-size N sets CURLOPT_BUFFERSIZE (curl's default is 16 KiB).
 * --header LINE (repeatable) adds a request header line (CURLOPT_HTTPHEADER), to measure what the
 * request headers a library sends by default cost libcurl itself.
 * --post N makes every request a POST with a body of N bytes, sent the way Herald's engine sends a body
 * (CURLOPT_UPLOAD with CURLOPT_INFILESIZE_LARGE, CURLOPT_CUSTOMREQUEST "POST", and a read callback).
 *
 * HTTPS (the TLS rows of Docs/Performance.md), with the options Herald's engine sets:
 *   --cacert PATH         trusts the authority in PATH (CURLOPT_CAINFO) instead of the system's.
 *   --http2               offers HTTP/2 over TLS (CURLOPT_HTTP_VERSION CURL_HTTP_VERSION_2TLS) and makes a
 *                         transfer wait for a connection being opened to learn whether it multiplexes
 *                         (CURLOPT_PIPEWAIT), so that CONCURRENCY requests share one connection as streams;
 *                         without it every transfer asks for HTTP/1.1.
 *   --fresh-connections   a new connection for every request, closed after it (CURLOPT_FRESH_CONNECT,
 *                         CURLOPT_FORBID_REUSE): a TLS handshake per request.
 *   --no-session-reuse    no cache of TLS sessions (CURLOPT_SSL_SESSIONID_CACHE 0): every handshake is a
 *                         full one.
 * Always: the multi handle multiplexes (CURLMOPT_PIPELINING CURLPIPE_MULTIPLEX, libcurl's default since
 * 7.62), and every easy handle is attached to one share handle holding the TLS sessions
 * (CURLSHOPT_SHARE CURL_LOCK_DATA_SSL_SESSION, as Herald's session does), so a connection another easy
 * handle opens resumes the session an earlier one negotiated. One thread: the share needs no lock callbacks.
 *
 * usage: curl-uv-client [--fresh] [--expect-bytes N] [--buffer-size N] [--header LINE]...
 *                       [--cacert PATH] [--http2] [--fresh-connections] [--no-session-reuse] [--post N]
 *                       [--download-to PATH | --in-memory | --stream] URL CONCURRENCY REQUESTS
 */
#include <curl/curl.h>
#include <uv.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    uv_poll_t poll;
    curl_socket_t fd;
} socket_ctx;

typedef struct {
    CURL *easy;
    size_t bytes;
    FILE *file;         /* --download-to */
    char *buffer;       /* --in-memory */
    size_t capacity;
    long body_sent;     /* --post: body bytes handed to curl so far */
} transfer;

static uv_loop_t *loop;
static uv_timer_t timeout_timer;
static CURLM *multi;
static const char *url;
static long requests_total;
static long started, completed, failures;
static size_t expect_bytes = 1024;
static int fresh_handles;
static transfer *transfers; /* CONCURRENCY slots */
static const char *download_path; /* --download-to */
static int in_memory;            /* --in-memory */
static int stream_only;          /* --stream */
static long buffer_size;         /* --buffer-size, 0: curl's default */
static struct curl_slist *extra_headers; /* --header lines, on every easy handle */
static const char *ca_file;      /* --cacert */
static int http2;                /* --http2 */
static int fresh_connections;    /* --fresh-connections */
static int no_session_reuse;     /* --no-session-reuse */
static long post_bytes = -1;     /* --post N: the body's size; -1: GET */
static CURLSH *tls_sessions;     /* the share every easy handle is attached to */
static const char *last_http_version = "?"; /* of the last response (CURLINFO_HTTP_VERSION) */

static size_t on_write(char *data, size_t size, size_t nmemb, void *user) {
    (void)data;
    transfer *t = user;
    t->bytes += size * nmemb;
    return size * nmemb;
}

static size_t on_write_file(char *data, size_t size, size_t nmemb, void *user) {
    transfer *t = user;
    size_t n = size * nmemb;
    if (fwrite(data, 1, n, t->file) != n) {
        perror(download_path);
        return 0; /* makes curl fail the transfer with CURLE_WRITE_ERROR */
    }
    t->bytes += n;
    return n;
}

static size_t on_write_memory(char *data, size_t size, size_t nmemb, void *user) {
    transfer *t = user;
    size_t n = size * nmemb;
    if (t->bytes + n > t->capacity) {
        size_t capacity = t->capacity ? t->capacity : 64 * 1024;
        while (capacity < t->bytes + n) capacity *= 2;
        char *grown = realloc(t->buffer, capacity);
        if (!grown) {
            fprintf(stderr, "out of memory growing the body buffer to %zu bytes\n", capacity);
            return 0;
        }
        t->buffer = grown;
        t->capacity = capacity;
    }
    memcpy(t->buffer + t->bytes, data, n);
    t->bytes += n;
    return n;
}

/* --post: the body, N bytes of 'a'. */
static size_t on_read(char *buffer, size_t size, size_t nmemb, void *user) {
    transfer *t = user;
    size_t n = (size_t)(post_bytes - t->body_sent);
    if (n > size * nmemb) n = size * nmemb;
    memset(buffer, 'a', n);
    t->body_sent += (long)n;
    return n;
}

static CURL *make_easy(transfer *t) {
    CURL *easy = curl_easy_init();
    if (!easy) {
        fprintf(stderr, "curl_easy_init failed\n");
        exit(1);
    }
    curl_easy_setopt(easy, CURLOPT_URL, url);
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(easy, CURLOPT_HTTP_VERSION, http2 ? (long)CURL_HTTP_VERSION_2TLS : (long)CURL_HTTP_VERSION_1_1);
    if (http2) curl_easy_setopt(easy, CURLOPT_PIPEWAIT, 1L);
    if (ca_file) curl_easy_setopt(easy, CURLOPT_CAINFO, ca_file);
    if (fresh_connections) {
        curl_easy_setopt(easy, CURLOPT_FRESH_CONNECT, 1L);
        curl_easy_setopt(easy, CURLOPT_FORBID_REUSE, 1L);
    }
    if (no_session_reuse) curl_easy_setopt(easy, CURLOPT_SSL_SESSIONID_CACHE, 0L);
    if (tls_sessions) curl_easy_setopt(easy, CURLOPT_SHARE, tls_sessions);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION,
                     download_path ? on_write_file : in_memory ? on_write_memory : on_write);
    if (buffer_size > 0) curl_easy_setopt(easy, CURLOPT_BUFFERSIZE, buffer_size);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, t);
    curl_easy_setopt(easy, CURLOPT_PRIVATE, t);
    if (extra_headers) curl_easy_setopt(easy, CURLOPT_HTTPHEADER, extra_headers);
    if (post_bytes >= 0) {
        curl_easy_setopt(easy, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(easy, CURLOPT_INFILESIZE_LARGE, (curl_off_t)post_bytes);
        curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, "POST");
        curl_easy_setopt(easy, CURLOPT_READFUNCTION, on_read);
        curl_easy_setopt(easy, CURLOPT_READDATA, t);
    }
    return easy;
}

/* Starts the next request in slot t, if any are left. */
static void start_next(transfer *t) {
    if (started >= requests_total) return;
    started++;
    t->bytes = 0;
    t->body_sent = 0;
    if (download_path) {
        t->file = fopen(download_path, "wb");
        if (!t->file) {
            perror(download_path);
            exit(1);
        }
    }
    if (!t->easy) t->easy = make_easy(t);
    CURLMcode rc = curl_multi_add_handle(multi, t->easy);
    if (rc != CURLM_OK) {
        fprintf(stderr, "curl_multi_add_handle: %s\n", curl_multi_strerror(rc));
        exit(1);
    }
}

/* Drains completions after every curl_multi_socket_action. */
static void check_multi_info(void) {
    CURLMsg *msg;
    int pending;
    while ((msg = curl_multi_info_read(multi, &pending))) {
        if (msg->msg != CURLMSG_DONE) continue;
        CURL *easy = msg->easy_handle;
        CURLcode result = msg->data.result;
        transfer *t = NULL;
        long status = 0;
        curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&t);
        curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
        long version = 0;
        curl_easy_getinfo(easy, CURLINFO_HTTP_VERSION, &version);
        last_http_version = version == CURL_HTTP_VERSION_2_0 ? "2" : version == CURL_HTTP_VERSION_1_1 ? "1.1" : "?";
        curl_multi_remove_handle(multi, easy);
        if (t->file && fclose(t->file) != 0) {
            perror(download_path);
            result = CURLE_WRITE_ERROR;
        }
        t->file = NULL;
        if (result != CURLE_OK || status != 200 || t->bytes != expect_bytes) {
            if (failures < 5)
                fprintf(stderr, "transfer failed: %s, status %ld, %zu bytes\n",
                        curl_easy_strerror(result), status, t->bytes);
            failures++;
        }
        completed++;
        if (fresh_handles) {
            curl_easy_cleanup(easy);
            t->easy = NULL;
        }
        start_next(t);
    }
    if (completed >= requests_total) uv_stop(loop);
}

static void on_poll(uv_poll_t *handle, int status, int events) {
    socket_ctx *ctx = handle->data;
    int flags = 0;
    int running;
    if (status < 0) flags = CURL_CSELECT_ERR;
    if (events & UV_READABLE) flags |= CURL_CSELECT_IN;
    if (events & UV_WRITABLE) flags |= CURL_CSELECT_OUT;
    curl_multi_socket_action(multi, ctx->fd, flags, &running);
    check_multi_info();
}

static void on_timeout(uv_timer_t *timer) {
    (void)timer;
    int running;
    curl_multi_socket_action(multi, CURL_SOCKET_TIMEOUT, 0, &running);
    check_multi_info();
}

static int start_timeout(CURLM *m, long timeout_ms, void *userp) {
    (void)m;
    (void)userp;
    if (timeout_ms < 0) {
        uv_timer_stop(&timeout_timer);
    } else {
        /* 0 means "call socket_action now", but never from inside this callback: a 0 ms uv
         * timer runs it on the next loop iteration. (multi-uv.c rounds 0 up to 1 ms, which
         * costs a whole millisecond per request at concurrency 1.) */
        uv_timer_start(&timeout_timer, on_timeout, (uint64_t)timeout_ms, 0);
    }
    return 0;
}

static void on_close(uv_handle_t *handle) { free(handle->data); }

static int handle_socket(CURL *easy, curl_socket_t s, int action, void *userp, void *socketp) {
    (void)easy;
    (void)userp;
    socket_ctx *ctx = socketp;
    switch (action) {
    case CURL_POLL_IN:
    case CURL_POLL_OUT:
    case CURL_POLL_INOUT: {
        if (!ctx) {
            ctx = malloc(sizeof *ctx);
            ctx->fd = s;
            uv_poll_init_socket(loop, &ctx->poll, s);
            ctx->poll.data = ctx;
            curl_multi_assign(multi, s, ctx);
        }
        int events = 0;
        if (action != CURL_POLL_IN) events |= UV_WRITABLE;
        if (action != CURL_POLL_OUT) events |= UV_READABLE;
        uv_poll_start(&ctx->poll, events, on_poll);
        break;
    }
    case CURL_POLL_REMOVE:
        if (ctx) {
            /* Synchronously: curl closes the fd right after this returns. */
            uv_poll_stop(&ctx->poll);
            uv_close((uv_handle_t *)&ctx->poll, on_close);
            curl_multi_assign(multi, s, NULL);
        }
        break;
    default:
        return -1;
    }
    return 0;
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void usage(void) {
    fprintf(stderr, "usage: curl-uv-client [--fresh] [--expect-bytes N] [--buffer-size N] [--header LINE]...\n"
                    "                      [--cacert PATH] [--http2] [--fresh-connections] [--no-session-reuse] [--post N]\n"
                    "                      [--download-to PATH | --in-memory | --stream] URL CONCURRENCY REQUESTS\n");
    exit(2);
}

int main(int argc, char **argv) {
    int argi = 1;
    for (; argi < argc && strncmp(argv[argi], "--", 2) == 0; argi++) {
        if (strcmp(argv[argi], "--fresh") == 0) {
            fresh_handles = 1;
        } else if (strcmp(argv[argi], "--expect-bytes") == 0 && argi + 1 < argc) {
            expect_bytes = (size_t)strtoull(argv[++argi], NULL, 10);
        } else if (strcmp(argv[argi], "--buffer-size") == 0 && argi + 1 < argc) {
            buffer_size = strtol(argv[++argi], NULL, 10);
        } else if (strcmp(argv[argi], "--download-to") == 0 && argi + 1 < argc) {
            download_path = argv[++argi];
        } else if (strcmp(argv[argi], "--in-memory") == 0) {
            in_memory = 1;
        } else if (strcmp(argv[argi], "--stream") == 0) {
            stream_only = 1;
        } else if (strcmp(argv[argi], "--cacert") == 0 && argi + 1 < argc) {
            ca_file = argv[++argi];
        } else if (strcmp(argv[argi], "--http2") == 0) {
            http2 = 1;
        } else if (strcmp(argv[argi], "--fresh-connections") == 0) {
            fresh_connections = 1;
        } else if (strcmp(argv[argi], "--no-session-reuse") == 0) {
            no_session_reuse = 1;
        } else if (strcmp(argv[argi], "--post") == 0 && argi + 1 < argc) {
            char *end;
            post_bytes = strtol(argv[++argi], &end, 10);
            if (*end != '\0' || post_bytes < 0) usage();
        } else if (strcmp(argv[argi], "--header") == 0 && argi + 1 < argc) {
            struct curl_slist *grown = curl_slist_append(extra_headers, argv[++argi]);
            if (!grown) {
                fprintf(stderr, "curl_slist_append failed\n");
                exit(1);
            }
            extra_headers = grown;
        } else {
            usage();
        }
    }
    if (argc - argi != 3) usage();
    url = argv[argi];
    long concurrency = strtol(argv[argi + 1], NULL, 10);
    requests_total = strtol(argv[argi + 2], NULL, 10);
    if (concurrency < 1 || requests_total < 1) usage();
    if ((download_path || in_memory || stream_only) &&
        (concurrency != 1 || requests_total != 1 || (!!download_path + in_memory + stream_only) > 1))
        usage();

    if (curl_global_init(CURL_GLOBAL_ALL) != CURLE_OK) {
        fprintf(stderr, "curl_global_init failed\n");
        return 1;
    }
    loop = uv_default_loop();
    uv_timer_init(loop, &timeout_timer);

    tls_sessions = curl_share_init();
    if (!tls_sessions || curl_share_setopt(tls_sessions, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION) != CURLSHE_OK) {
        fprintf(stderr, "cannot make the share of TLS sessions\n");
        return 1;
    }

    multi = curl_multi_init();
    curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, handle_socket);
    curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION, start_timeout);
    curl_multi_setopt(multi, CURLMOPT_MAX_HOST_CONNECTIONS, concurrency);
    curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, concurrency);
    curl_multi_setopt(multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);

    transfers = calloc((size_t)concurrency, sizeof *transfers);
    double t0 = now_seconds();
    for (long i = 0; i < concurrency; i++) start_next(&transfers[i]);
    uv_run(loop, UV_RUN_DEFAULT);
    double seconds = now_seconds() - t0;

    if (download_path || in_memory || stream_only) {
        printf("{\"client\":\"c\",\"mode\":\"%s\",\"requests\":%ld,\"failures\":%ld,\"bytes\":%zu,"
               "\"seconds\":%.6f}\n",
               download_path ? "download-file" : in_memory ? "data-memory" : "stream", completed, failures,
               transfers[0].bytes, seconds);
    } else {
        printf("{\"client\":\"c\",\"concurrency\":%ld,\"requests\":%ld,\"failures\":%ld,"
               "\"seconds\":%.6f,\"handles\":\"%s\",\"http_version\":\"%s\"}\n",
               concurrency, completed, failures, seconds, fresh_handles ? "fresh" : "reused", last_http_version);
    }
    fflush(stdout);

    for (long i = 0; i < concurrency; i++)
        if (transfers[i].easy) curl_easy_cleanup(transfers[i].easy);
    free(transfers[0].buffer);
    curl_multi_cleanup(multi); /* fires REMOVE for cached connections */
    curl_share_cleanup(tls_sessions); /* after every easy handle attached to it */
    uv_close((uv_handle_t *)&timeout_timer, NULL);
    uv_run(loop, UV_RUN_DEFAULT); /* run close callbacks */
    uv_loop_close(loop);
    free(transfers);
    curl_global_cleanup();
    return failures ? 1 : 0;
}
