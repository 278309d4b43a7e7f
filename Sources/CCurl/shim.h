#ifndef HERALD_CCURL_SHIM_H
#define HERALD_CCURL_SHIM_H

// Typed wrappers over libcurl's variadic entry points. Swift cannot call C variadic functions
// ("'curl_easy_setopt' is unavailable: Variadic function is unavailable"), so every argument type
// and every callback signature Herald passes gets one `static inline` function here.

#include <curl/curl.h>
#include <linux/falloc.h>
#include <linux/magic.h>
#include <malloc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/vfs.h>
#include <unistd.h>

// MARK: - libcurl versions
//
// Herald builds against libcurl 7.76.1 and later (the oldest of the distributions README.md lists).
// Whatever Herald uses that is newer than that is reached only through a wrapper below, guarded by
// LIBCURL_VERSION_NUM with a fallback; Swift code never names such a symbol. .ci/check-libcurl-minimum.sh
// proves it: it compiles this header and the Herald module against headers with every newer symbol removed.
//
//   CURLOPT_PROTOCOLS_STR, CURLOPT_REDIR_PROTOCOLS_STR  7.85.0  → CURLOPT_PROTOCOLS / _REDIR_ bitmasks
//   CURLOPT_CAINFO_BLOB                                 7.77.0  → CURLE_NOT_BUILT_IN; Herald refuses an
//                                                                 in-memory CA bundle up front instead
//   CURLOPT_PREREQFUNCTION, CURLOPT_PREREQDATA          7.80.0  → CURLE_NOT_BUILT_IN; a transfer is tied to
//                                                                 its connection at its first response head
//   CURLOPT_QUICK_EXIT                                  7.87.0  → CURLE_NOT_BUILT_IN; removing a transfer
//                                                                 waits for its host name lookup to end

// MARK: - callback signatures

typedef size_t (*herald_curl_data_cb)(char *buffer, size_t size, size_t nitems, void *userdata);
typedef int (*herald_curl_xferinfo_cb)(void *clientp, curl_off_t dltotal, curl_off_t dlnow,
                                       curl_off_t ultotal, curl_off_t ulnow);
typedef int (*herald_curl_seek_cb)(void *userp, curl_off_t offset, int origin);
typedef int (*herald_curl_socket_cb)(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp);
typedef int (*herald_curl_timer_cb)(CURLM *multi, long timeout_ms, void *userp);
typedef curl_socket_t (*herald_curl_opensocket_cb)(void *clientp, curlsocktype purpose, struct curl_sockaddr *address);
typedef int (*herald_curl_closesocket_cb)(void *clientp, curl_socket_t item);
typedef int (*herald_curl_prereq_cb)(void *clientp, char *primary_ip, char *local_ip, int primary_port, int local_port);
typedef int (*herald_curl_debug_cb)(CURL *handle, curl_infotype type, char *data, size_t size, void *userptr);

// MARK: - curl_easy_setopt

static inline CURLcode herald_easy_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode herald_easy_setopt_off(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode herald_easy_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode herald_easy_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode herald_easy_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(handle, option, value);
}

/// The CA bundle file libcurl reads when none is set (`CURLINFO_CAINFO`, libcurl 7.84.0): its build's default,
/// such as Debian's `/etc/ssl/certs/ca-certificates.crt`. NULL when it has none, and before libcurl 7.84.0.
/// The text belongs to `handle`.
static inline const char *herald_easy_default_cainfo(CURL *handle) {
#if LIBCURL_VERSION_NUM >= 0x075400
    char *path = NULL;
    return curl_easy_getinfo(handle, CURLINFO_CAINFO, &path) == CURLE_OK ? path : NULL;
#else
    (void)handle;
    return NULL;
#endif
}

/// The CA directory libcurl reads when none is set (`CURLINFO_CAPATH`, libcurl 7.84.0), such as Debian's
/// `/etc/ssl/certs`. NULL when it has none, and before libcurl 7.84.0. The text belongs to `handle`.
static inline const char *herald_easy_default_capath(CURL *handle) {
#if LIBCURL_VERSION_NUM >= 0x075400
    char *path = NULL;
    return curl_easy_getinfo(handle, CURLINFO_CAPATH, &path) == CURLE_OK ? path : NULL;
#else
    (void)handle;
    return NULL;
#endif
}

/// How long libcurl keeps a certificate store it built (`CURLOPT_CA_CACHE_TIMEOUT`, libcurl 7.87.0), in
/// seconds. Before libcurl 7.87.0 there is no store to keep: returns `CURLE_NOT_BUILT_IN`.
static inline CURLcode herald_easy_setopt_ca_cache_timeout(CURL *handle, long seconds) {
#if LIBCURL_VERSION_NUM >= 0x075700
    return curl_easy_setopt(handle, CURLOPT_CA_CACHE_TIMEOUT, seconds);
#else
    (void)handle;
    (void)seconds;
    return CURLE_NOT_BUILT_IN;
#endif
}

/// Lets removing a transfer whose host name is still being looked up leave the lookup's thread to end on its own
/// (`CURLOPT_QUICK_EXIT`, libcurl 7.87.0) instead of waiting for it: with the threaded resolver,
/// `curl_multi_remove_handle` (and curl's own timeout of a lookup) otherwise joins that thread, blocking the
/// caller until `getaddrinfo` returns. Before libcurl 7.87.0: `CURLE_NOT_BUILT_IN`, and the wait stays.
static inline CURLcode herald_easy_setopt_quick_exit(CURL *handle) {
#if LIBCURL_VERSION_NUM >= 0x075700
    return curl_easy_setopt(handle, CURLOPT_QUICK_EXIT, 1L);
#else
    (void)handle;
    return CURLE_NOT_BUILT_IN;
#endif
}

/// Whether these headers have `CURLOPT_CAINFO_BLOB` (libcurl 7.77.0), so a CA bundle can be given in memory.
static const int herald_has_cainfo_blob = LIBCURL_VERSION_NUM >= 0x074D00;

/// Trusts the PEM certificate authorities in `data` (`CURLOPT_CAINFO_BLOB`, copied by curl). Before libcurl
/// 7.77.0 there is no such option: returns `CURLE_NOT_BUILT_IN`.
static inline CURLcode herald_easy_setopt_cainfo_blob(CURL *handle, const void *data, size_t length) {
#if LIBCURL_VERSION_NUM >= 0x074D00
    struct curl_blob blob;
    blob.data = (void *)data;
    blob.len = length;
    blob.flags = CURL_BLOB_COPY;
    return curl_easy_setopt(handle, CURLOPT_CAINFO_BLOB, &blob);
#else
    (void)handle;
    (void)data;
    (void)length;
    return CURLE_NOT_BUILT_IN;
#endif
}

#if LIBCURL_VERSION_NUM < 0x075500
/// The `CURLPROTO_*` bit of the scheme `name[0..<length]` (case-insensitive), or 0 when curl has none.
static inline long herald_curlproto_named(const char *name, size_t length) {
    static const struct {
        const char *name;
        long bit;
    } table[] = {
        {"all", CURLPROTO_ALL},
        {"dict", CURLPROTO_DICT},   {"file", CURLPROTO_FILE},     {"ftp", CURLPROTO_FTP},
        {"ftps", CURLPROTO_FTPS},   {"gopher", CURLPROTO_GOPHER}, {"http", CURLPROTO_HTTP},
        {"https", CURLPROTO_HTTPS}, {"imap", CURLPROTO_IMAP},     {"imaps", CURLPROTO_IMAPS},
        {"ldap", CURLPROTO_LDAP},   {"ldaps", CURLPROTO_LDAPS},   {"pop3", CURLPROTO_POP3},
        {"pop3s", CURLPROTO_POP3S}, {"rtsp", CURLPROTO_RTSP},     {"scp", CURLPROTO_SCP},
        {"sftp", CURLPROTO_SFTP},   {"smb", CURLPROTO_SMB},       {"smbs", CURLPROTO_SMBS},
        {"smtp", CURLPROTO_SMTP},   {"smtps", CURLPROTO_SMTPS},   {"telnet", CURLPROTO_TELNET},
        {"tftp", CURLPROTO_TFTP},
#ifdef CURLPROTO_MQTT
        {"mqtt", CURLPROTO_MQTT},
#endif
#ifdef CURLPROTO_GOPHERS
        {"gophers", CURLPROTO_GOPHERS},
#endif
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        if (strlen(table[i].name) == length && strncasecmp(table[i].name, name, length) == 0) return table[i].bit;
    }
    return 0;
}
#endif

/// Limits the transfer, and any redirect curl itself would follow, to the comma-separated schemes in `list`
/// (such as `"http,https"`). From libcurl 7.85.0 through `CURLOPT_PROTOCOLS_STR` and
/// `CURLOPT_REDIR_PROTOCOLS_STR`; before it through the `CURLOPT_PROTOCOLS` bitmasks, with the same answers:
/// `CURLE_UNSUPPORTED_PROTOCOL` for a scheme curl does not know, `CURLE_BAD_FUNCTION_ARGUMENT` for an empty
/// list.
static inline CURLcode herald_easy_setopt_protocols(CURL *handle, const char *list) {
#if LIBCURL_VERSION_NUM >= 0x075500
    CURLcode code = curl_easy_setopt(handle, CURLOPT_PROTOCOLS_STR, list);
    return code != CURLE_OK ? code : curl_easy_setopt(handle, CURLOPT_REDIR_PROTOCOLS_STR, list);
#else
    long mask = 0;
    const char *cursor = list;
    while (*cursor != '\0') {
        const char *end = strchr(cursor, ',');
        if (end == NULL) end = cursor + strlen(cursor);
        if (end > cursor) {
            long bit = herald_curlproto_named(cursor, (size_t)(end - cursor));
            if (bit == 0) return CURLE_UNSUPPORTED_PROTOCOL;
            mask |= bit;
        }
        cursor = *end == ',' ? end + 1 : end;
    }
    if (mask == 0) return CURLE_BAD_FUNCTION_ARGUMENT;
    CURLcode code = curl_easy_setopt(handle, CURLOPT_PROTOCOLS, mask);
    return code != CURLE_OK ? code : curl_easy_setopt(handle, CURLOPT_REDIR_PROTOCOLS, mask);
#endif
}

static inline CURLcode herald_easy_setopt_data_cb(CURL *handle, CURLoption option, herald_curl_data_cb value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode herald_easy_setopt_xferinfo_cb(CURL *handle, herald_curl_xferinfo_cb value) {
    return curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, value);
}

static inline CURLcode herald_easy_setopt_seek_cb(CURL *handle, herald_curl_seek_cb value) {
    return curl_easy_setopt(handle, CURLOPT_SEEKFUNCTION, value);
}

/// Hands libcurl's informational text and traffic to `debug` with `context` (`CURLOPT_DEBUGFUNCTION`,
/// `CURLOPT_DEBUGDATA`) and turns it on (`CURLOPT_VERBOSE`); the function first, so nothing goes to stderr.
static inline CURLcode herald_easy_setopt_debug(CURL *handle, herald_curl_debug_cb debug, void *context) {
    CURLcode code = curl_easy_setopt(handle, CURLOPT_DEBUGFUNCTION, debug);
    if (code == CURLE_OK) code = curl_easy_setopt(handle, CURLOPT_DEBUGDATA, context);
    if (code == CURLE_OK) code = curl_easy_setopt(handle, CURLOPT_VERBOSE, 1L);
    return code;
}

// MARK: - connections

/// Has curl open and close this handle's sockets through `open` and `close`, both given `context`
/// (`CURLOPT_OPENSOCKETFUNCTION`, `CURLOPT_CLOSESOCKETFUNCTION` and their data). A connection keeps the close
/// function and data of the handle that opened it until it closes, so `context` must outlive the multi handle.
static inline CURLcode herald_easy_setopt_socket_functions(CURL *handle, herald_curl_opensocket_cb open,
                                                           herald_curl_closesocket_cb close, void *context) {
    CURLcode code = curl_easy_setopt(handle, CURLOPT_OPENSOCKETFUNCTION, open);
    if (code == CURLE_OK) code = curl_easy_setopt(handle, CURLOPT_OPENSOCKETDATA, context);
    if (code == CURLE_OK) code = curl_easy_setopt(handle, CURLOPT_CLOSESOCKETFUNCTION, close);
    if (code == CURLE_OK) code = curl_easy_setopt(handle, CURLOPT_CLOSESOCKETDATA, context);
    return code;
}

/// Whether these headers have `CURLOPT_PREREQFUNCTION` (libcurl 7.80.0): a call once a transfer's connection
/// is established or reused, before its request is sent.
static const int herald_has_prereq = LIBCURL_VERSION_NUM >= 0x075000;

/// Calls `prereq` with `context` once the transfer has a connection, before its request is sent
/// (`CURLOPT_PREREQFUNCTION`). Before libcurl 7.80.0 there is no such option: returns `CURLE_NOT_BUILT_IN`.
static inline CURLcode herald_easy_setopt_prereq(CURL *handle, herald_curl_prereq_cb prereq, void *context) {
#if LIBCURL_VERSION_NUM >= 0x075000
    CURLcode code = curl_easy_setopt(handle, CURLOPT_PREREQFUNCTION, prereq);
    return code != CURLE_OK ? code : curl_easy_setopt(handle, CURLOPT_PREREQDATA, context);
#else
    (void)handle;
    (void)prereq;
    (void)context;
    return CURLE_NOT_BUILT_IN;
#endif
}

/// Points the pre-request callback already set on `handle` at `context` (`CURLOPT_PREREQDATA`); before
/// libcurl 7.80.0, `CURLE_NOT_BUILT_IN`.
static inline CURLcode herald_easy_setopt_prereq_data(CURL *handle, void *context) {
#if LIBCURL_VERSION_NUM >= 0x075000
    return curl_easy_setopt(handle, CURLOPT_PREREQDATA, context);
#else
    (void)handle;
    (void)context;
    return CURLE_NOT_BUILT_IN;
#endif
}

/// Whether the socket curl asks for is one of a connection (`CURLSOCKTYPE_IPCXN`), not an accepted one.
static inline bool herald_socket_is_connection(curlsocktype purpose) { return purpose == CURLSOCKTYPE_IPCXN; }

/// Opens the socket curl asks for, closed on exec; `CURL_SOCKET_BAD` when the system refuses (errno set).
static inline curl_socket_t herald_open_socket(const struct curl_sockaddr *address) {
    int descriptor = socket(address->family, address->socktype | SOCK_CLOEXEC, address->protocol);
    return descriptor < 0 ? CURL_SOCKET_BAD : descriptor;
}

/// Writes the IP address of `address` as text into `text` (at least INET6_ADDRSTRLEN bytes) and its port into
/// `port`; false for an address that is not IPv4 or IPv6.
static inline bool herald_address_text(const struct sockaddr *address, char *text, size_t size, int *port) {
    if (address->sa_family == AF_INET) {
        const struct sockaddr_in *ip4 = (const struct sockaddr_in *)address;
        *port = ntohs(ip4->sin_port);
        return inet_ntop(AF_INET, &ip4->sin_addr, text, (socklen_t)size) != NULL;
    }
    if (address->sa_family == AF_INET6) {
        const struct sockaddr_in6 *ip6 = (const struct sockaddr_in6 *)address;
        *port = ntohs(ip6->sin6_port);
        return inet_ntop(AF_INET6, &ip6->sin6_addr, text, (socklen_t)size) != NULL;
    }
    return false;
}

/// The peer address of the socket curl is about to connect, as text, and its port.
static inline bool herald_socket_peer_text(const struct curl_sockaddr *address, char *text, size_t size, int *port) {
    return herald_address_text(&address->addr, text, size, port);
}

/// The local port `descriptor` is bound to (set once the connection was started), or -1.
static inline int herald_socket_local_port(int descriptor) {
    struct sockaddr_storage storage;
    socklen_t length = sizeof storage;
    if (getsockname(descriptor, (struct sockaddr *)&storage, &length) != 0) return -1;
    if (storage.ss_family == AF_INET) return ntohs(((struct sockaddr_in *)&storage)->sin_port);
    if (storage.ss_family == AF_INET6) return ntohs(((struct sockaddr_in6 *)&storage)->sin6_port);
    return -1;
}

/// Closes a socket curl is done with; 0, or 1 when the system refused (curl ignores the answer).
static inline int herald_close_socket(curl_socket_t descriptor) { return close(descriptor) == 0 ? 0 : 1; }

// MARK: - curl_easy_getinfo

static inline CURLcode herald_easy_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode herald_easy_getinfo_off(CURL *handle, CURLINFO info, curl_off_t *value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode herald_easy_getinfo_string(CURL *handle, CURLINFO info, char **value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode herald_easy_getinfo_pointer(CURL *handle, CURLINFO info, void **value) {
    return curl_easy_getinfo(handle, info, value);
}

// MARK: - curl_multi_setopt

static inline CURLMcode herald_multi_setopt_long(CURLM *handle, CURLMoption option, long value) {
    return curl_multi_setopt(handle, option, value);
}

static inline CURLMcode herald_multi_setopt_pointer(CURLM *handle, CURLMoption option, void *value) {
    return curl_multi_setopt(handle, option, value);
}

static inline CURLMcode herald_multi_setopt_socket_cb(CURLM *handle, herald_curl_socket_cb value) {
    return curl_multi_setopt(handle, CURLMOPT_SOCKETFUNCTION, value);
}

static inline CURLMcode herald_multi_setopt_timer_cb(CURLM *handle, herald_curl_timer_cb value) {
    return curl_multi_setopt(handle, CURLMOPT_TIMERFUNCTION, value);
}

// MARK: - share handles

/// A share handle with one mutex per kind of data it may guard. Easy handles are configured on whichever
/// thread prepares their transfer while others run on the engine's loop, so libcurl's accesses to the share
/// (its count of attached handles, the cached TLS sessions) are locked.
typedef struct herald_share {
    CURLSH *share;
    pthread_mutex_t mutexes[CURL_LOCK_DATA_LAST];
} herald_share;

static inline void herald_share_lock(CURL *handle, curl_lock_data data, curl_lock_access access, void *userptr) {
    (void)handle;
    (void)access;
    herald_share *owner = (herald_share *)userptr;
    if ((int)data >= 0 && data < CURL_LOCK_DATA_LAST) pthread_mutex_lock(&owner->mutexes[data]);
}

static inline void herald_share_unlock(CURL *handle, curl_lock_data data, void *userptr) {
    (void)handle;
    herald_share *owner = (herald_share *)userptr;
    if ((int)data >= 0 && data < CURL_LOCK_DATA_LAST) pthread_mutex_unlock(&owner->mutexes[data]);
}

/// A share handle holding TLS sessions (`CURL_LOCK_DATA_SSL_SESSION`), so that a connection one easy handle
/// opens can resume the session another handle's connection negotiated with the same server; NULL when
/// libcurl refuses (out of memory). Attach it with `CURLOPT_SHARE`; free it with `herald_share_free`.
static inline herald_share *herald_share_make_tls_sessions(void) {
    herald_share *owner = (herald_share *)calloc(1, sizeof(herald_share));
    if (owner == NULL) return NULL;
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++) pthread_mutex_init(&owner->mutexes[i], NULL);
    owner->share = curl_share_init();
    if (owner->share == NULL || curl_share_setopt(owner->share, CURLSHOPT_USERDATA, (void *)owner) != CURLSHE_OK ||
        curl_share_setopt(owner->share, CURLSHOPT_LOCKFUNC, herald_share_lock) != CURLSHE_OK ||
        curl_share_setopt(owner->share, CURLSHOPT_UNLOCKFUNC, herald_share_unlock) != CURLSHE_OK ||
        curl_share_setopt(owner->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION) != CURLSHE_OK) {
        if (owner->share != NULL) curl_share_cleanup(owner->share);
        for (int i = 0; i < CURL_LOCK_DATA_LAST; i++) pthread_mutex_destroy(&owner->mutexes[i]);
        free(owner);
        return NULL;
    }
    return owner;
}

/// The share handle to pass to `CURLOPT_SHARE`.
static inline CURLSH *herald_share_handle(herald_share *owner) { return owner->share; }

/// Frees the share and its mutexes; false, freeing nothing, while an easy handle still uses it
/// (`CURLSHE_IN_USE`): libcurl would lock its mutexes again.
static inline bool herald_share_free(herald_share *owner) {
    if (curl_share_cleanup(owner->share) != CURLSHE_OK) return false;
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++) pthread_mutex_destroy(&owner->mutexes[i]);
    free(owner);
    return true;
}

// MARK: - CURLMsg

/// The easy handle a multi message is about.
static inline CURL *herald_msg_easy(const CURLMsg *msg) { return msg->easy_handle; }

/// Whether the message reports a finished transfer.
static inline int herald_msg_is_done(const CURLMsg *msg) { return msg->msg == CURLMSG_DONE; }

/// The transfer's result; only meaningful when `herald_msg_is_done` is true.
static inline CURLcode herald_msg_result(const CURLMsg *msg) { return msg->data.result; }

// MARK: - versions

/// libcurl's version information for the version these headers describe (`CURLVERSION_NOW` is a macro).
static inline curl_version_info_data *herald_curl_version_info(void) { return curl_version_info(CURLVERSION_NOW); }

// MARK: - constants Swift does not import (macros built from casts)

static const long herald_writefunc_pause = (long)CURL_WRITEFUNC_PAUSE;
static const long herald_curlauth_basic = (long)CURLAUTH_BASIC;
static const long herald_curlauth_digest = (long)CURLAUTH_DIGEST;
static const long herald_readfunc_pause = (long)CURL_READFUNC_PAUSE;
static const long herald_readfunc_abort = (long)CURL_READFUNC_ABORT;
static const curl_socket_t herald_socket_timeout = CURL_SOCKET_TIMEOUT;

// MARK: - files

// glibc declares fallocate(2) only under _GNU_SOURCE, which Swift's Glibc module is built without.
extern int fallocate(int fd, int mode, off_t offset, off_t length);

// Reserves the file's blocks for [offset, offset + length) without changing its size
// (FALLOC_FL_KEEP_SIZE): 0, or -1 with errno set (EOPNOTSUPP where the file system has no such thing).
static inline int herald_reserve_file_blocks(int fd, off_t offset, off_t length) {
    return fallocate(fd, FALLOC_FL_KEEP_SIZE, offset, length);
}

// Whether the file open at `fd` is on ext2, ext3 or ext4 (which share one magic number); false if
// fstatfs fails. Swift's Glibc module has no <sys/vfs.h>.
static inline bool herald_file_is_on_ext4(int fd) {
    struct statfs info;
    return fstatfs(fd, &info) == 0 && info.f_type == EXT4_SUPER_MAGIC;
}

// MARK: - memory

// How many bytes a block from malloc really holds (Swift's Glibc module doesn't export <malloc.h>).
static inline size_t herald_malloc_usable_size(void *pointer) { return malloc_usable_size(pointer); }

#endif
