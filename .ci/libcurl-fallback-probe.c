// Runs the shim's version-guarded wrappers against the libcurl on this machine. check-libcurl-minimum.sh
// compiles it twice — with the real headers and with headers lowered to the minimum — and requires both
// builds to print the same lines: the fallback must answer as the newer option does.
#include "shim.h"
#include <stdio.h>

int main(void) {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) return 2;
    const char *lists[] = {"http,https", "https", "HTTP,Https", "http,,https", "http,gopher", "all", "file",
                           "nonsense",   "http,nonsense", "",  ","};
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++) {
        CURL *easy = curl_easy_init();
        if (easy == NULL) return 2;
        CURLcode set = herald_easy_setopt_protocols(easy, lists[i]);
        // A local file: no traffic. Only a list with "file" (or "all") may read it.
        int performed = -1;  // not attempted
        if (set == CURLE_OK) {
            curl_easy_setopt(easy, CURLOPT_URL, "file:///dev/null");
            performed = (int)curl_easy_perform(easy);
        }
        printf("protocols \"%s\": set %d, file:///dev/null %d\n", lists[i], (int)set, performed);
        curl_easy_cleanup(easy);
    }
    curl_global_cleanup();
    return 0;
}
