#ifndef HERALD_CCURL_SHIM_H
#define HERALD_CCURL_SHIM_H

// Typed wrappers over libcurl's variadic entry points. Swift cannot call C variadic functions
// ("'curl_easy_setopt' is unavailable: Variadic function is unavailable"), so every argument type
// and every callback signature Herald passes gets one `static inline` function here.

#include <curl/curl.h>
#include <stddef.h>

// MARK: - callback signatures

typedef size_t (*herald_curl_data_cb)(char *buffer, size_t size, size_t nitems, void *userdata);
typedef int (*herald_curl_xferinfo_cb)(void *clientp, curl_off_t dltotal, curl_off_t dlnow,
                                       curl_off_t ultotal, curl_off_t ulnow);
typedef int (*herald_curl_seek_cb)(void *userp, curl_off_t offset, int origin);
typedef int (*herald_curl_socket_cb)(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp);
typedef int (*herald_curl_timer_cb)(CURLM *multi, long timeout_ms, void *userp);

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

/// Sets a blob option (such as `CURLOPT_CAINFO_BLOB`); curl copies the bytes (`CURL_BLOB_COPY`), so they
/// need to live only for the duration of the call.
static inline CURLcode herald_easy_setopt_blob(CURL *handle, CURLoption option, const void *data, size_t length) {
    struct curl_blob blob;
    blob.data = (void *)data;
    blob.len = length;
    blob.flags = CURL_BLOB_COPY;
    return curl_easy_setopt(handle, option, &blob);
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

#endif
