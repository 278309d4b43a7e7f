#!/usr/bin/env bash
# make bench-transfers: 1 KiB GETs against a loopback nginx, comparing Herald, Foundation's
# URLSession (FoundationNetworking), AsyncHTTPClient (`ahc`: its own event loop group, HTTP/1.1, a pool
# of as many connections as the concurrency) and a C client on libcurl multi + libuv (Benchmarks/CClient).
#
# For every concurrency and client it runs the client as its own process, takes the wall time
# of the measured phase from the client's own JSON line, and user+sys CPU and peak RSS of the
# whole process from wait4(2) (Benchmarks/CClient/rusage-run.c). Docs/Performance.md has the targets.
# Herald's clients run in TransferBench, which links no other HTTP client; URLSession and AsyncHTTPClient
# run in TransferBenchPeers (TransferBench execs it for them), so no client's RSS carries another's libraries.
#
# usage: Benchmarks/run-transfers.sh [--requests N] [--concurrency "1 16 64"]
#                                    [--clients "c urlsession herald ahc"] [--json FILE]
#                                    [--runs K] [--c-fresh-handles] [--keep]
#                                    [--large-mib N] [--skip-large] [--baseline BIN] [--baseline-client NAME]
#                                    [--protocols "http1 https1 h2"] [--tls-concurrency "1 64"]
#                                    [--tls-fresh "resumed full"] [--fresh-concurrency "1 16"] [--fresh-requests N]
#
# Clients: `c`, `urlsession`, `ahc` (future callbacks, which run on AsyncHTTPClient's event loop), `ahc-async`
# (Swift tasks awaiting its `execute(_:timeout:)`, off the event loop), and Herald's: `herald` (completion
# handlers), `herald-async` (Swift tasks awaiting data(for:)) and `herald-observed` (`herald` with the activity,
# logging and metrics observers; the logging observer at `info`). The large transfers run for c, urlsession,
# herald and ahc only.
#
# --baseline BIN adds the client `baseline`: another build's TransferBench (say, of an earlier commit) running
# its Herald client, interleaved with this checkout's runs, so that a change is measured against the code
# before it under the same conditions; only for the 1 KiB rows. As every run does, each starts the clients in a
# random order of its own (a client's place in the sequence moves its rate on a small machine), and the script adds, per
# concurrency, each run's herald/baseline ratio of req/s and their median: a pairing that takes out the
# machine's drift from one run to the next, which moves every client's rate by 10-30% here. With --runs 20 the
# median of the paired ratios tells a change of a few per cent from none; the median of three runs does not.
# --baseline-client NAME (default herald) is the Herald client the baseline runs and is paired with; it must
# be in --clients too.
#
# --runs K runs every client × concurrency K times (interleaved) and reports the run with the
# median req/s, which helps on a busy machine. --c-fresh-handles makes the C client create an
# easy handle per request instead of reusing one per slot. --keep keeps the temp dir (nginx
# config and logs, each client's output).
#
# Large transfers (the 1 GiB rows of Docs/Performance.md), after the 1 KiB rows: one GET of an N MiB file of random bytes
# (--large-mib, default 1024, large enough that a process's start-up is noise; generated once per run in the temp
# dir), per client, in three modes:
# download-file (C: fwrite to a file; URLSession: downloadTask(with:) moving the temporary file;
# Herald: downloadTask(with:progress:destination:completionHandler:); AsyncHTTPClient: its FileDownloadDelegate)
# and data-memory (C: one growing buffer; URLSession and Herald: a data task, Herald's with a
# DataResponseSerializer; AsyncHTTPClient: execute(request:), which collects the body), and stream (C: a write
# callback that counts the bytes; Herald: bytes(for:); AsyncHTTPClient: the async execute(_:timeout:)'s body
# sequence; each consumer counts every chunk's bytes and keeps none; URLSession on Linux has no streamed body).
# Each checks the size, and the script compares every downloaded file with the source (cmp) before deleting it.
# MiB/s is N MiB over the client's own wall time of the transfer (resume to the end of the completion
# handler, the move included); CPU seconds (and CPU milliseconds per MiB) and peak RSS are of the whole process,
# from wait4(2). Herald's targets: at least 0.9x C's MiB/s at most 1.3x its CPU per MiB, in both modes.
# `--protocols none --tls-fresh none` leaves out every 1 KiB row: the large rows alone.
# Each large run starts after a `sync` (not timed), so that writeback of earlier writes doesn't land in it.
# The source file stays mapped in memory for the whole run (CClient/hold-resident.c), so that no download
# waits for nginx to read back pages the kernel dropped.
# The C client uses Herald's curl receive buffer sizes (CURLOPT_BUFFERSIZE 512 KiB to a file and streamed, 64 KiB in memory),
# so the ratio compares the libraries, not the buffer size. --skip-large leaves them out.
# HTTPS (the TLS rows of Docs/Performance.md). The script makes a throwaway authority and a certificate for 127.0.0.1
# (ECDSA P-256, openssl, in its temp dir), and the same nginx serves the 1 KiB file over TLS 1.3 on four more
# loopback ports: `https1`, HTTP/1.1 with kept-alive connections; `h2`, HTTP/2 (offered in the handshake, ALPN)
# with kept-alive connections; and two that close the connection after every response (`keepalive_timeout 0`), so
# that every request opens a connection and makes a TLS handshake: `fresh-resumed`, which lets a client resume a
# session (session tickets and a session cache), and `fresh-full`, which doesn't (neither), so every handshake
# is a full one. The server, not a client option, decides each of these, so every client gets the same: URLSession
# on Linux has no setting for the HTTP version nor for connection reuse. Every client trusts the authority the
# way its users would: Herald through its session's security policy
# (SecurityPolicy.trustingCertificateAuthorities(pemFile:)), AsyncHTTPClient through its TLS configuration's trust
# roots, the C client with CURLOPT_CAINFO. URLSession on Linux has no way to: FoundationNetworking trusts libcurl's
# default bundle of authorities (`curl-config --ca`) and nothing else, with no server-trust challenge and no
# setting, and the environment (SSL_CERT_FILE, SSL_CERT_DIR, CURL_CA_BUNDLE) changes nothing. So the script runs
# it in a mount namespace of its own (unshare -m, as root; unshare -rm otherwise) where that bundle is a copy with
# the test authority added (a bind mount that the rest of the machine never sees), as a user would install an
# authority system-wide; without unshare, its TLS rows are reported as not measured. The mount's own few
# milliseconds of CPU are counted in its process's CPU. Herald, AsyncHTTPClient and the C client ask for HTTP/1.1 only on the
# HTTP/1.1 rows and allow HTTP/2 on the `h2` rows (the C client: CURL_HTTP_VERSION_2TLS and CURLOPT_PIPEWAIT, as
# Herald's engine sets them); on the fresh rows the C client also asks for a new connection per request
# (CURLOPT_FRESH_CONNECT, CURLOPT_FORBID_REUSE) and, on `fresh-full`, keeps no TLS sessions.
# --protocols picks the kinds of rows among http1 (the plain HTTP rows above), https1 and h2, at the
# concurrencies of --tls-concurrency (default "1 64") for the TLS ones; --tls-fresh picks the fresh rows
# ("resumed full" by default, "none" for none), at --fresh-concurrency (default "1 16") with --fresh-requests
# requests (default a 40th of --requests, so 500: URLSession makes about 30 fresh connections a second). nginx
# logs every TLS request (its connection, whether its handshake resumed a session, its protocol), and the table
# shows, per row, the connections the client used, the protocol and how many of those connections resumed a
# session: what the server saw, not what the client says.
#
# Missing a target (Docs/Performance.md) is reported, never fatal: the exit status is non-zero only for wrong bytes,
# failed transfers or clients that could not run.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
requests=20000
concurrencies="1 16 64"
clients="c urlsession herald ahc"
json_file=""
c_flags=()
keep=0
runs=1
large_mib=1024
skip_large=0
baseline_bin=""
baseline_client=herald
protocols="http1 https1 h2"
tls_concurrencies="1 64"
tls_fresh="resumed full"
fresh_concurrencies="1 16"
fresh_requests=""
# Herald's CURLOPT_BUFFERSIZE for each sink (Sources/HeraldEngine/Transfer+Configuration.swift).
c_file_buffer=$((512 * 1024))
c_memory_buffer=$((64 * 1024))
c_stream_buffer=$((512 * 1024))

usage() { awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "${BASH_SOURCE[0]}"; }

while [ $# -gt 0 ]; do
    case "$1" in
        --requests) requests=${2:?}; shift 2 ;;
        --concurrency) concurrencies=${2:?}; shift 2 ;;
        --clients) clients=${2:?}; shift 2 ;;
        --json) json_file=${2:?}; shift 2 ;;
        --c-fresh-handles) c_flags=(--fresh); shift ;;
        --keep) keep=1; shift ;;
        --runs) runs=${2:?}; shift 2 ;;
        --large-mib) large_mib=${2:?}; shift 2 ;;
        --skip-large) skip_large=1; shift ;;
        --baseline) baseline_bin=${2:?}; shift 2 ;;
        --baseline-client) baseline_client=${2:?}; shift 2 ;;
        --protocols) protocols=${2:?}; shift 2 ;;
        --tls-concurrency) tls_concurrencies=${2:?}; shift 2 ;;
        --tls-fresh) tls_fresh=${2:?}; shift 2 ;;
        --fresh-concurrency) fresh_concurrencies=${2:?}; shift 2 ;;
        --fresh-requests) fresh_requests=${2:?}; shift 2 ;;
        -h | --help) usage; exit 0 ;;
        *) echo "run-transfers: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
    esac
done
[[ "$requests" =~ ^[1-9][0-9]*$ ]] || { echo "run-transfers: --requests must be a positive integer" >&2; exit 2; }
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || { echo "run-transfers: --runs must be a positive integer" >&2; exit 2; }
[[ "$large_mib" =~ ^[1-9][0-9]*$ ]] || { echo "run-transfers: --large-mib must be a positive integer" >&2; exit 2; }
for n in $concurrencies $tls_concurrencies $fresh_concurrencies; do
    [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "run-transfers: bad concurrency '$n'" >&2; exit 2; }
done
[ -n "$fresh_requests" ] || fresh_requests=$(( requests / 40 > 0 ? requests / 40 : 1 ))
[[ "$fresh_requests" =~ ^[1-9][0-9]*$ ]] || { echo "run-transfers: --fresh-requests must be a positive integer" >&2; exit 2; }
[ "$protocols" != none ] || protocols=""
for p in $protocols; do
    case "$p" in http1 | https1 | h2) ;; *) echo "run-transfers: unknown protocol '$p'" >&2; exit 2 ;; esac
done
[ "$tls_fresh" != none ] || tls_fresh=""
for f in $tls_fresh; do
    case "$f" in resumed | full) ;; *) echo "run-transfers: --tls-fresh takes resumed, full or none, not '$f'" >&2; exit 2 ;; esac
done
# The rows: the plain HTTP ones named by their concurrency alone (as before the TLS rows), the others
# PROTOCOL:CONCURRENCY.
http1_concurrencies=""
[[ " $protocols " != *" http1 "* ]] || http1_concurrencies=$concurrencies
tls_rows=""
for p in https1 h2; do
    [[ " $protocols " == *" $p "* ]] || continue
    for n in $tls_concurrencies; do tls_rows+="$p:$n "; done
done
for f in $tls_fresh; do
    for n in $fresh_concurrencies; do tls_rows+="fresh-$f:$n "; done
done
rows="$http1_concurrencies $tls_rows"
for c in $clients; do
    case "$c" in
        c | urlsession | herald | herald-async | herald-observed | ahc | ahc-async) ;;
        *) echo "run-transfers: unknown client '$c'" >&2; exit 2 ;;
    esac
done
# The large transfers are measured for the named clients only, never for the baseline.
large_clients=$(for c in $clients; do case "$c" in c | urlsession | herald | ahc) printf '%s ' "$c" ;; esac; done)
if [ -n "$baseline_bin" ]; then
    [ -x "$baseline_bin" ] || { echo "run-transfers: --baseline $baseline_bin is not an executable" >&2; exit 2; }
    [[ " $clients " == *" $baseline_client "* ]] || {
        echo "run-transfers: --baseline-client $baseline_client is not in --clients" >&2
        exit 2
    }
    clients="$clients baseline"
fi
if [ -n "$json_file" ]; then
    case "$json_file" in /*) ;; *) json_file="$PWD/$json_file" ;; esac
    mkdir -p "$(dirname "$json_file")"
fi

log() { echo "run-transfers: $*" >&2; }

# ---------------------------------------------------------------- system dependencies, nginx
# shellcheck source=nginx/bench-env.sh
source "$here/nginx/bench-env.sh"
# ---------------------------------------------------------------- work dir, nginx lifetime
work=$(mktemp -d "${TMPDIR:-/tmp}/herald-bench-transfers.XXXXXX")
nginx_pid=""
client_pid=""
holder_pid=""
cleanup() {
    local status=$?
    if [ -n "$holder_pid" ]; then
        kill -TERM "$holder_pid" 2>/dev/null || true
        wait "$holder_pid" 2>/dev/null || true
    fi
    if [ -n "$client_pid" ]; then
        kill -TERM "$client_pid" 2>/dev/null || true # rusage-run passes it on to the client
        wait "$client_pid" 2>/dev/null || true
    fi
    if [ -n "$nginx_pid" ] && kill -0 "$nginx_pid" 2>/dev/null; then
        kill -TERM "$nginx_pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$nginx_pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$nginx_pid" 2>/dev/null || true
        wait "$nginx_pid" 2>/dev/null || true
    fi
    if [ "$keep" = 1 ]; then log "kept $work"; else rm -rf "$work"; fi
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------- build the clients
log "building the C client and the rusage wrapper"
"$CC" -O2 -Wall -o "$here/CClient/curl-uv-client" "$here/CClient/curl-uv-client.c" \
    $(pkg-config --cflags --libs libcurl libuv)
"$CC" -O2 -Wall -o "$work/rusage-run" "$here/CClient/rusage-run.c"
"$CC" -O2 -Wall -o "$work/hold-resident" "$here/CClient/hold-resident.c"

swift_bin=""
herald_download_missing=0
if [[ " $clients " == *" urlsession "* || " $clients " == *" herald"* || " $clients " == *" ahc"* ]]; then
    SWIFT=${SWIFT:-swift}
    # Without `herald` in --clients, TransferBench is built without its Herald client
    # (HeraldClient.swift, TRANSFERBENCH_NO_HERALD), so URLSession-only runs don't need Herald's
    # session API to compile.
    swift_flags=()
    if [[ " $clients " != *" herald"* ]]; then
        swift_flags=(-Xswiftc -DTRANSFERBENCH_NO_HERALD)
        build_note=", without the Herald client"
    elif ! grep -rqsPzo 'func\s+downloadTask\s*\(\s*with\s+request\s*:\s*Request' "$here/../Sources/Herald"; then
        # Herald's download API isn't in this checkout yet: build without the Herald download client
        # (HeraldDownloadClient.swift) and leave that row out rather than fail to compile.
        swift_flags=(-Xswiftc -DTRANSFERBENCH_NO_HERALD_DOWNLOAD)
        herald_download_missing=1
        build_note=", without the Herald download client: Herald has no downloadTask(with:progress:destination:completionHandler:)"
    fi
    log "building TransferBench and TransferBenchPeers (release${build_note:-})"
    # TransferBench holds Herald's clients and hands --client urlsession|ahc to TransferBenchPeers, so each
    # client's peak RSS is that of a process which loads only that client.
    "$SWIFT" build -c release --package-path "$here" --product TransferBench "${swift_flags[@]}" >&2
    # Only when a peer runs: building NIO and AsyncHTTPClient in release takes minutes on a small machine.
    if [[ " $clients " == *" urlsession "* || " $clients " == *" ahc"* ]]; then
        "$SWIFT" build -c release --package-path "$here" --product TransferBenchPeers >&2
    fi
    swift_bin="$("$SWIFT" build -c release --package-path "$here" --show-bin-path)/TransferBench"
fi

# ---------------------------------------------------------------- start nginx
prefix="$work/nginx"
mkdir -p "$prefix/www" "$prefix/temp"
head -c 1024 /dev/zero | tr '\0' 'h' >"$prefix/www/1k.bin"
large_bytes=$((large_mib * 1024 * 1024))
if [ "$skip_large" = 0 ]; then
    log "generating the $large_mib MiB source file (random bytes)"
    head -c "$large_bytes" /dev/urandom >"$prefix/www/large.bin"
    [ "$(stat -c %s "$prefix/www/large.bin")" = "$large_bytes" ] || { log "could not generate $prefix/www/large.bin"; exit 1; }
    # On disk now, so that its writeback doesn't land in the middle of a measured download.
    sync "$prefix/www/large.bin"
    # And in memory until the end, mapped (and locked where allowed): the kernel may drop page-cache pages
    # that look idle, and then a download would wait for nginx to read the file back from the disk
    # (CClient/hold-resident.c says when).
    mkfifo "$work/hold.fifo"
    "$work/hold-resident" "$prefix/www/large.bin" >"$work/hold.fifo" 2>"$work/hold.err" &
    holder_pid=$!
    holder_line=""
    read -r holder_line <"$work/hold.fifo" || true
    if [ -n "$holder_line" ]; then
        log "source file $holder_line$(sed 's/^hold-resident: / — /' "$work/hold.err" | head -n 1)"
    else
        log "could not keep the source file in memory: $(head -n 1 "$work/hold.err")"
        holder_pid=""
    fi
    mkdir -p "$work/downloads"
fi
# ---------------------------------------------------------------- HTTPS: a throwaway authority and certificate
nginx_extra_servers=""
urlsession_tls="" urlsession_tls_missing="" unshare_flags=() system_bundle=""
if [ -n "$tls_rows" ]; then
    tls="$work/tls"
    make_throwaway_tls "$tls"
    # URLSession's way to trust the authority: libcurl's default bundle, with it added, in a namespace of its own.
    urlsession_tls=""
    if [[ " $clients " == *" urlsession "* ]]; then
        system_bundle=$(curl-config --ca 2>/dev/null || true)
        [ -n "$system_bundle" ] || system_bundle=/etc/ssl/certs/ca-certificates.crt
        unshare_flags=(-m)
        [ "$(id -u)" = 0 ] || unshare_flags=(-r -m)
        if [ -f "$system_bundle" ] && cat "$system_bundle" "$tls/ca.pem" >"$tls/system-bundle.pem" &&
            unshare "${unshare_flags[@]}" sh -c 'mount --bind "$1" "$2" && grep -q "$3" "$2"' sh \
                "$tls/system-bundle.pem" "$system_bundle" "$(sed -n 2p "$tls/ca.pem")" 2>"$tls/unshare.log"; then
            urlsession_tls=1
        else
            urlsession_tls_missing="not measured: URLSession trusts only libcurl's bundle ($system_bundle), and it could not be given one with the test authority in a mount namespace: $(head -n 1 "$tls/unshare.log")"
            log "URLSession's TLS rows are $urlsession_tls_missing"
        fi
    fi
    h2_listen_options
    # One line per TLS request: the connection's serial number, whether its handshake resumed a session, the
    # protocol. Every request's line is written when it ends, so the log is complete when a client exits.
    tls_common="ssl_certificate $tls/server.pem; ssl_certificate_key $tls/server.key; ssl_protocols TLSv1.3;
        server_name localhost; root @PREFIX@/www; access_log @PREFIX@/tls-access.log benchtls; location / { }"
    resumable="ssl_session_cache shared:bench:10m; ssl_session_tickets on;"
    nginx_extra_servers="    log_format benchtls '\$connection \$ssl_session_reused \$server_protocol \$status';
    server { listen 127.0.0.1:@PORT+1@ ssl backlog=4096; $tls_common $resumable }
    server { listen 127.0.0.1:@PORT+2@ ssl$h2_listen backlog=4096; $h2_directive $tls_common $resumable }
    server { listen 127.0.0.1:@PORT+3@ ssl backlog=4096; keepalive_timeout 0; $tls_common $resumable }
    server { listen 127.0.0.1:@PORT+4@ ssl backlog=4096; keepalive_timeout 0; $tls_common
        ssl_session_cache off; ssl_session_tickets off; }"
fi
chmod -R a+rX "$work"

start_nginx "$prefix"
url="http://127.0.0.1:$port/1k.bin"
log "nginx $("$NGINX" -v 2>&1 | sed 's|.*/||') (pid $nginx_pid) serving $url"
if [ -n "$tls_rows" ]; then
    log "and over TLS 1.3: https1 https://127.0.0.1:$((port + 1)), h2 https://127.0.0.1:$((port + 2)), fresh-resumed" \
        "https://127.0.0.1:$((port + 3)), fresh-full https://127.0.0.1:$((port + 4)) (/1k.bin)"
fi
tls_log="$prefix/tls-access.log"

# ---------------------------------------------------------------- run
json_field() { sed -n "s/.*\"$2\":\"\{0,1\}\([^,\"}]*\).*/\1/p" "$1" | tail -n 1; }

declare -A rps cpu rss secs fails
status=0

declare -A vconns vproto vresumed

row_protocol() { case "$1" in *:*) echo "${1%%:*}" ;; *) echo http1 ;; esac; }
row_concurrency() { echo "${1##*:}"; }
row_requests() { case "$1" in fresh-*) echo "$fresh_requests" ;; *) echo "$requests" ;; esac; }

run_one() { # client row run → results under "client-row#run" (row: CONCURRENCY, or PROTOCOL:CONCURRENCY)
    local client=$1 row=$2 tag="$1-$2#$3"
    local proto n row_url count cmd c_extra=() swift_extra=()
    proto=$(row_protocol "$row") n=$(row_concurrency "$row") count=$(row_requests "$row")
    case "$proto" in
        http1) row_url=$url ;;
        https1) row_url="https://127.0.0.1:$((port + 1))/1k.bin" ;;
        h2) row_url="https://127.0.0.1:$((port + 2))/1k.bin" ;;
        fresh-resumed) row_url="https://127.0.0.1:$((port + 3))/1k.bin" ;;
        fresh-full) row_url="https://127.0.0.1:$((port + 4))/1k.bin" ;;
    esac
    if [ "$proto" != http1 ]; then
        c_extra=(--cacert "$tls/ca.pem")
        swift_extra=(--cacert "$tls/ca.pem" --http-version 1.1)
        case "$proto" in
            h2) c_extra+=(--http2); swift_extra=(--cacert "$tls/ca.pem" --http-version 2) ;;
            fresh-resumed) c_extra+=(--fresh-connections) ;;
            fresh-full) c_extra+=(--fresh-connections --no-session-reuse) ;;
        esac
    fi
    case "$client" in
        c) cmd=("$here/CClient/curl-uv-client" "${c_flags[@]}" "${c_extra[@]}" "$row_url" "$n" "$count") ;;
        urlsession)
            cmd=("$swift_bin" --client "$client" --url "$row_url" --concurrency "$n" --requests "$count")
            if [ "$proto" != http1 ]; then
                # In a mount namespace where libcurl's bundle holds the test authority (see the header).
                cmd=(unshare "${unshare_flags[@]}" sh -c 'mount --bind "$1" "$2" && shift 2 && exec "$@"' sh
                    "$tls/system-bundle.pem" "$system_bundle" "${cmd[@]}")
            fi ;;
        herald | herald-async | ahc | ahc-async)
            cmd=("$swift_bin" --client "$client" --url "$row_url" --concurrency "$n" --requests "$count"
                "${swift_extra[@]}") ;;
        herald-observed)
            cmd=("$swift_bin" --client "$client" --log-level info --url "$row_url" --concurrency "$n"
                --requests "$count" "${swift_extra[@]}") ;;
        baseline)
            cmd=("$baseline_bin" --client "$baseline_client" --url "$row_url" --concurrency "$n" --requests "$count")
            if [ "$baseline_client" = herald-observed ]; then cmd+=(--log-level info); fi ;;
    esac
    local log_before=0
    if [ "$proto" != http1 ]; then log_before=$(wc -l <"$tls_log"); fi
    local rc=0
    # In the background so that a signal to this script interrupts `wait` and runs the trap.
    "$work/rusage-run" "$work/$tag.rusage" "${cmd[@]}" >"$work/$tag.out" 2>"$work/$tag.err" &
    client_pid=$!
    wait "$client_pid" || rc=$?
    client_pid=""
    local seconds failures done_requests
    seconds=$(json_field "$work/$tag.out" seconds)
    failures=$(json_field "$work/$tag.out" failures)
    done_requests=$(json_field "$work/$tag.out" requests)
    if [ -z "$seconds" ] || [ "$done_requests" != "$count" ] || [ "${failures:-1}" != 0 ]; then
        log "$client ($proto) at concurrency $n failed (exit $rc, ${failures:-?} failures, ${done_requests:-?} requests):"
        sed 's/^/    /' "$work/$tag.err" | tail -n 20 >&2
        status=1
        if [ -z "$seconds" ]; then return 0; fi
    fi
    [ "$rc" = 0 ] || status=1
    local user_us sys_us maxrss_kib _wall
    read -r user_us sys_us maxrss_kib _wall <"$work/$tag.rusage"
    secs[$tag]=$seconds
    fails[$tag]=${failures:-null}
    rps[$tag]=$(awk -v r="$count" -v s="$seconds" 'BEGIN { printf "%.0f", r / s }')
    cpu[$tag]=$(awk -v r="$count" -v u="$user_us" -v s="$sys_us" 'BEGIN { printf "%.1f", (u + s) / r }')
    rss[$tag]=$(awk -v k="$maxrss_kib" 'BEGIN { printf "%.1f", k / 1024 }')
    local handles seen=""
    handles=$(json_field "$work/$tag.out" handles)
    if [ "$proto" != http1 ]; then
        # What nginx saw of this run: its requests' connections, their protocol, how many handshakes resumed.
        local summary
        summary=$(tail -n +"$((log_before + 1))" "$tls_log" | awk '
            { requests++; proto[$3]++; if (!($1 in conn)) { conn[$1] = 1; conns++; if ($2 == "r") resumed++ } }
            END { best = ""; for (p in proto) if (best == "" || proto[p] > proto[best]) best = p
                  printf "%d %s %d %d", conns, (best == "" ? "?" : best), resumed, requests }')
        local s_conns s_proto s_resumed s_requests
        read -r s_conns s_proto s_resumed s_requests <<<"$summary"
        vconns[$tag]=$s_conns vproto[$tag]=${s_proto#HTTP/} vresumed[$tag]=$s_resumed
        seen=" (nginx: $s_requests requests on $s_conns connections, $s_proto, $s_resumed resumed)"
    fi
    log "$(printf '%-10s %-14s c=%-3s run %-2s %8s req/s %8s µs CPU/req %7s MiB%s%s' "$client" "$proto" "$n" "$3" \
        "${rps[$tag]}" "${cpu[$tag]}" "${rss[$tag]}" "${handles:+ ($handles easy handles)}" "$seen")"
}

log "$requests GETs of 1 KiB per run; concurrency: ${http1_concurrencies:-none}${tls_rows:+; TLS rows: $tls_rows(fresh rows: $fresh_requests GETs)}; clients: $clients"
log "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
for run in $(seq "$runs"); do
    for row in $rows; do
        # A random order per run and row: a client's place in the sequence moves its rate on a small machine, and
        # a fixed order would give every run the same bias.
        order=$(printf '%s\n' $clients | shuf | tr '\n' ' ')
        for client in $order; do
            # The baseline (another build, maybe without the HTTPS options) runs the plain HTTP rows only.
            if [ "$client" = baseline ] && [[ "$row" == *:* ]]; then continue; fi
            if [ "$client" = urlsession ] && [[ "$row" == *:* ]] && [ -z "$urlsession_tls" ]; then continue; fi
            run_one "$client" "$row" "$run"
        done
    done
done

# Keep the run with the median req/s (the lower middle one for an even count).
for n in $rows; do
    for client in $clients; do
        tag="$client-$n"
        chosen=$(for run in $(seq "$runs"); do
            if [ -n "${rps[$tag#$run]:-}" ]; then echo "${rps[$tag#$run]} $run"; fi
        done | sort -n | awk '{ line[NR] = $2 } END { if (NR) print line[int((NR + 1) / 2)] }')
        [ -n "$chosen" ] || continue
        rps[$tag]=${rps[$tag#$chosen]} cpu[$tag]=${cpu[$tag#$chosen]} rss[$tag]=${rss[$tag#$chosen]}
        secs[$tag]=${secs[$tag#$chosen]} fails[$tag]=${fails[$tag#$chosen]}
        if [ -n "${vconns[$tag#$chosen]:-}" ]; then
            vconns[$tag]=${vconns[$tag#$chosen]} vproto[$tag]=${vproto[$tag#$chosen]}
            vresumed[$tag]=${vresumed[$tag#$chosen]}
        fi
    done
done

# ---------------------------------------------------------------- large transfers
large_modes="download-file data-memory stream"
declare -A lsecs lmbps lcpu lrss lskip

run_large() { # client mode run → results under "client-mode#run"
    local client=$1 mode=$2 tag="$1-$2#$3"
    local dest="$work/downloads/$client.bin"
    local cmd
    rm -f "$dest"
    # Start every large run with no dirty pages waiting for writeback (ours were deleted with their
    # files; this flushes whatever else on the machine wrote meanwhile). Not timed.
    sync
    case "$client/$mode" in
        c/download-file) cmd=("$here/CClient/curl-uv-client" --buffer-size "$c_file_buffer" --expect-bytes "$large_bytes"
            --download-to "$dest" "$large_url" 1 1) ;;
        c/data-memory) cmd=("$here/CClient/curl-uv-client" --buffer-size "$c_memory_buffer" --expect-bytes "$large_bytes"
            --in-memory "$large_url" 1 1) ;;
        c/stream) cmd=("$here/CClient/curl-uv-client" --buffer-size "$c_stream_buffer" --expect-bytes "$large_bytes"
            --stream "$large_url" 1 1) ;;
        *) cmd=("$swift_bin" --client "$client" --url "$large_url" --mode "$mode" --expect-bytes "$large_bytes")
            if [ "$mode" = download-file ]; then cmd+=(--destination "$dest"); fi ;;
    esac
    local rc=0
    "$work/rusage-run" "$work/$tag.rusage" "${cmd[@]}" >"$work/$tag.out" 2>"$work/$tag.err" &
    client_pid=$!
    wait "$client_pid" || rc=$?
    client_pid=""
    local seconds failures bytes problem=""
    seconds=$(json_field "$work/$tag.out" seconds)
    failures=$(json_field "$work/$tag.out" failures)
    bytes=$(json_field "$work/$tag.out" bytes)
    if [ -z "$seconds" ] || [ "$rc" != 0 ] || [ "${failures:-1}" != 0 ]; then
        problem="exit $rc, ${failures:-?} failures"
    elif [ "$bytes" != "$large_bytes" ]; then
        problem="client saw ${bytes:-?} bytes, expected $large_bytes"
    elif [ "$mode" = download-file ]; then
        local size
        size=$(stat -c %s "$dest" 2>/dev/null || echo missing)
        if [ "$size" != "$large_bytes" ]; then
            problem="$dest has $size bytes, expected $large_bytes"
        elif ! cmp -s "$prefix/www/large.bin" "$dest"; then
            problem="$dest differs from the source: $(cmp "$prefix/www/large.bin" "$dest" 2>&1 | head -n 1)"
        fi
    fi
    rm -f "$dest"
    if [ -n "$problem" ]; then
        log "$client $mode failed ($problem):"
        sed 's/^/    /' "$work/$tag.err" | tail -n 20 >&2
        status=1
        return 0
    fi
    local user_us sys_us maxrss_kib _wall
    read -r user_us sys_us maxrss_kib _wall <"$work/$tag.rusage"
    lsecs[$tag]=$seconds
    lmbps[$tag]=$(awk -v b="$large_bytes" -v s="$seconds" 'BEGIN { printf "%.1f", b / 1048576 / s }')
    lcpu[$tag]=$(awk -v u="$user_us" -v s="$sys_us" 'BEGIN { printf "%.3f", (u + s) / 1e6 }')
    lrss[$tag]=$(awk -v k="$maxrss_kib" 'BEGIN { printf "%.1f", k / 1024 }')
    local checked="size checked"
    [ "$mode" != download-file ] || checked="size checked, cmp with the source ok"
    log "$(printf '%-10s %-13s run %-2s %8s MiB/s %7s s CPU %7s MiB peak RSS (%s)' "$client" "$mode" "$3" \
        "${lmbps[$tag]}" "${lcpu[$tag]}" "${lrss[$tag]}" "$checked")"
}

if [ "$skip_large" = 0 ]; then
    large_url="http://127.0.0.1:$port/large.bin"
    log "large transfers: one GET of $large_mib MiB per client and mode ($large_url)"
    for run in $(seq "$runs"); do
        for mode in $large_modes; do
            for client in $(printf '%s\n' $large_clients | shuf | tr '\n' ' '); do
                if [ "$client/$mode" = urlsession/stream ]; then
                    lskip[$client-$mode]="not measured: URLSession on Linux has no streamed body"
                    continue
                fi
                if [ "$client/$mode" = herald/download-file ] && [ "$herald_download_missing" = 1 ]; then
                    lskip[$client-$mode]="not measured: Herald has no downloadTask(with:progress:destination:completionHandler:) in this checkout"
                    continue
                fi
                run_large "$client" "$mode" "$run"
            done
        done
    done
    # Keep the run with the median MiB/s (the lower middle one for an even count).
    for mode in $large_modes; do
        for client in $large_clients; do
            tag="$client-$mode"
            chosen=$(for run in $(seq "$runs"); do
                if [ -n "${lmbps[$tag#$run]:-}" ]; then echo "${lmbps[$tag#$run]} $run"; fi
            done | sort -n | awk '{ line[NR] = $2 } END { if (NR) print line[int((NR + 1) / 2)] }')
            [ -n "$chosen" ] || continue
            lsecs[$tag]=${lsecs[$tag#$chosen]} lmbps[$tag]=${lmbps[$tag#$chosen]}
            lcpu[$tag]=${lcpu[$tag#$chosen]} lrss[$tag]=${lrss[$tag#$chosen]}
        done
    done
fi

# ---------------------------------------------------------------- report
pf() { case "$1" in true) printf PASS ;; false) printf MISS ;; *) printf '?' ;; esac; }
ratio() { # numerator denominator
    if [ -n "$1" ] && [ -n "$2" ]; then
        awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b }'
    fi
}

echo
median=""
if [ "$runs" -gt 1 ]; then median=" (median of $runs runs)"; fi
if [ -n "$http1_concurrencies" ]; then
echo "Transfer benchmark: $requests GETs of 1 KiB$median, loopback nginx, $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-11s %5s %9s %10s %11s %13s %8s\n' client conc failures seconds "req/s" "CPU µs/req" "RSS MiB"
fi
for n in $http1_concurrencies; do
    for client in $clients; do
        tag="$client-$n"
        if [ -z "${secs[$tag]:-}" ]; then
            printf '%-11s %5s %9s\n' "$client" "$n" FAILED
            continue
        fi
        printf '%-11s %5s %9s %10s %11s %13s %8s\n' "$client" "$n" "${fails[$tag]}" "${secs[$tag]}" \
            "${rps[$tag]}" "${cpu[$tag]}" "${rss[$tag]}"
    done
done

ratio_lines=""
for n in $http1_concurrencies; do
    line=""
    for pair in herald/urlsession herald/c herald/ahc herald-async/c herald-async/ahc herald-async/ahc-async \
        herald-observed/c "$baseline_client/baseline" baseline/c ahc/c ahc-async/c c/urlsession; do
        a=${pair%/*} b=${pair#*/}
        r=$(ratio "${rps[$a-$n]:-}" "${rps[$b-$n]:-}")
        [ -n "$r" ] || continue
        cr=$(ratio "${cpu[$a-$n]:-}" "${cpu[$b-$n]:-}")
        line+=$(printf '  %s %sx (%sx)' "$pair" "$r" "$cr")
    done
    if [ -n "$line" ]; then ratio_lines+="  concurrency $n:$line"$'\n'; fi
done
if [ -n "$ratio_lines" ]; then
    echo
    echo "Ratios of req/s (of CPU per request in parentheses, lower is better):"
    printf '%s' "$ratio_lines"
fi
# Against a baseline: the runs paired, each run's herald/baseline ratio of req/s and CPU per request.
if [ -n "$baseline_bin" ]; then
    echo
    echo "$baseline_client/baseline, run by run (req/s; CPU per request in parentheses)" \
        "and the median of the runs' ratios:"
    for n in $http1_concurrencies; do
        pairs=""
        for run in $(seq "$runs"); do
            a=${rps[$baseline_client-$n#$run]:-} b=${rps[baseline-$n#$run]:-}
            [ -n "$a" ] && [ -n "$b" ] || continue
            pairs+="$a $b ${cpu[$baseline_client-$n#$run]} ${cpu[baseline-$n#$run]}"$'\n'
        done
        [ -n "$pairs" ] || continue
        printf '%s' "$pairs" | awk -v n="$n" '
            { r[NR] = $1 / $2; c[NR] = $3 / $4; if (r[NR] >= 1) up++
              line = line sprintf(" %.3f (%.3f)", r[NR], c[NR]) }
            function median(v, count,   i, j, t) {
                for (i = 2; i <= count; i++) { t = v[i]; for (j = i - 1; j >= 1 && v[j] > t; j--) v[j + 1] = v[j]; v[j + 1] = t }
                return count % 2 ? v[(count + 1) / 2] : (v[count / 2] + v[count / 2 + 1]) / 2 }
            END { printf "  concurrency %s: median %.3fx (CPU %.3fx), %d of %d runs >= 1x:%s\n", n, median(r, NR), median(c, NR), up, NR, line }'
    done
fi
if [ -n "${rps[herald-64]:-}" ]; then
    echo "Targets at 64 concurrent (Docs/Performance.md): herald/c >= 0.9x at <= 1.3x its CPU, herald/ahc > 1x"
fi

# ---------------------------------------------------------------- the TLS rows
if [ -n "$tls_rows" ]; then
    echo
    echo "HTTPS over TLS 1.3 (throwaway ECDSA P-256 certificate), GETs of 1 KiB$median: $requests per run," \
        "$fresh_requests on the fresh rows"
    echo "conns, proto, resumed: what nginx saw (connections used, protocol, connections whose handshake resumed a session)"
    echo "vs AHC: herald-async against ahc-async when it ran, every other Herald client against ahc"
    printf '%-14s %-16s %5s %9s %11s %8s %6s %9s %7s %6s %6s %8s\n' row client conc "req/s" "CPU µs/req" "RSS MiB" \
        "vs C" "CPU vs C" "vs AHC" conns proto resumed
    for row in $tls_rows; do
        for client in $clients; do
            [ "$client" != baseline ] || continue
            tag="$client-$row"
            if [ "$client" = urlsession ] && [ -z "$urlsession_tls" ]; then
                printf '%-14s %-16s %5s %s\n' "$(row_protocol "$row")" "$client" "$(row_concurrency "$row")" \
                    "not measured (below)"
                continue
            fi
            if [ -z "${secs[$tag]:-}" ]; then
                printf '%-14s %-16s %5s %9s\n' "$(row_protocol "$row")" "$client" "$(row_concurrency "$row")" FAILED
                continue
            fi
            vs_c="" cpu_c="" vs_a=""
            if [ "$client" != c ]; then
                vs_c=$(ratio "${rps[$tag]}" "${rps[c-$row]:-}")
                cpu_c=$(ratio "${cpu[$tag]}" "${cpu[c-$row]:-}")
            fi
            # Each client against AsyncHTTPClient's API of its kind: `herald-async` against `ahc-async` when that
            # ran, the others against `ahc`.
            peer=ahc
            if [ "$client" = herald-async ] && [ -n "${rps[ahc-async-$row]:-}" ]; then peer=ahc-async; fi
            case "$client" in ahc | ahc-async) ;; *) vs_a=$(ratio "${rps[$tag]}" "${rps[$peer-$row]:-}") ;; esac
            printf '%-14s %-16s %5s %9s %11s %8s %6s %9s %7s %6s %6s %8s\n' "$(row_protocol "$row")" "$client" \
                "$(row_concurrency "$row")" "${rps[$tag]}" "${cpu[$tag]}" "${rss[$tag]}" "${vs_c:+${vs_c}x}" \
                "${cpu_c:+${cpu_c}x}" "${vs_a:+${vs_a}x}" "${vconns[$tag]:-?}" "${vproto[$tag]:-?}" "${vresumed[$tag]:-?}"
        done
    done
fi
if [ -n "$urlsession_tls_missing" ]; then echo "URLSession's TLS rows: $urlsession_tls_missing"; fi
# Verdicts: Herald (`herald`) ahead of AsyncHTTPClient on every row, at least 0.85x the C client's req/s on every TLS
# row, and at most 1.3x its CPU per request on the TLS rows with 64 in flight.
if [ -n "$tls_rows" ] && [[ " $clients " == *" herald "* ]]; then
    echo "Targets (Docs/Performance.md, reported, never fatal): herald/ahc > 1x on every row; on the TLS rows" \
        "herald/c >= 0.85x, and herald's CPU per request <= 1.3x C's with 64 in flight"
    for row in $rows; do
        line=""
        r=$(ratio "${rps[herald-$row]:-}" "${rps[ahc-$row]:-}")
        if [ -n "$r" ]; then line+=" $(pf "$(awk -v r="$r" 'BEGIN { print (r > 1) ? "true" : "false" }')") herald/ahc ${r}x;"; fi
        if [[ "$row" == *:* ]]; then
            r=$(ratio "${rps[herald-$row]:-}" "${rps[c-$row]:-}")
            if [ -n "$r" ]; then line+=" $(pf "$(awk -v r="$r" 'BEGIN { print (r >= 0.85) ? "true" : "false" }')") herald/c ${r}x;"; fi
            if [ "$(row_concurrency "$row")" = 64 ]; then
                r=$(ratio "${cpu[herald-$row]:-}" "${cpu[c-$row]:-}")
                if [ -n "$r" ]; then line+=" $(pf "$(awk -v r="$r" 'BEGIN { print (r <= 1.3) ? "true" : "false" }')") CPU/req herald/c ${r}x;"; fi
            fi
        fi
        [ -z "$line" ] || printf '  %-20s%s\n' "$(row_protocol "$row") c=$(row_concurrency "$row"):" "${line%;}"
    done
fi

# Target verdicts for Herald's large rows: "PASS"/"MISS" plus the numbers, or empty when not measured.
cpu_per_mib() { # CPU seconds → CPU milliseconds per MiB of the large body
    awk -v c="$1" -v m="$large_mib" 'BEGIN { printf "%.2f", c * 1000 / m }'
}

large_verdict() { # mode → sets verdict (one line) and meets (true/false/null)
    verdict="" meets=null
    local mode=$1 tag="herald-$1"
    [ -n "${lmbps[$tag]:-}" ] || return 0
    # Against C: MiB/s at least 0.9x its, at most 1.3x its CPU per MiB.
    local r ok_speed=null cpu_r ok_cpu=null ok_rss over ahc_r ok_ahc=true
    r=$(ratio "${lmbps[$tag]}" "${lmbps[c-$mode]:-}")
    cpu_r=$(ratio "${lcpu[$tag]}" "${lcpu[c-$mode]:-}")
    if [ -n "$r" ] && [ -n "$cpu_r" ]; then
        ok_speed=$(awk -v r="$r" 'BEGIN { print (r >= 0.9) ? "true" : "false" }')
        ok_cpu=$(awk -v r="$cpu_r" 'BEGIN { print (r <= 1.3) ? "true" : "false" }')
        verdict="$(pf "$ok_speed") ${r}x the C client's MiB/s (target >= 0.9x); "
        verdict+="$(pf "$ok_cpu") ${cpu_r}x its CPU per MiB (target <= 1.3x); "
    else
        verdict="(no C row to compare with); "
    fi
    case "$mode" in
        download-file)
            ok_rss=$(awk -v m="${lrss[$tag]}" 'BEGIN { print (m <= 32) ? "true" : "false" }')
            verdict+="$(pf "$ok_rss") peak RSS ${lrss[$tag]} MiB (target <= 32 MiB)"
            ;;
        stream)
            # Nothing is kept: the process's size, as to a file.
            ok_rss=$(awk -v m="${lrss[$tag]}" 'BEGIN { print (m <= 32) ? "true" : "false" }')
            verdict+="$(pf "$ok_rss") peak RSS ${lrss[$tag]} MiB (target <= 32 MiB)"
            if [ -n "${lmbps[ahc-$mode]:-}" ]; then
                ahc_r=$(ratio "${lmbps[$tag]}" "${lmbps[ahc-$mode]}")
                ok_ahc=$(awk -v r="$ahc_r" 'BEGIN { print (r > 1) ? "true" : "false" }')
                verdict+="; $(pf "$ok_ahc") ${ahc_r}x AsyncHTTPClient's MiB/s (target: ahead of it)"
            fi
            ;;
        data-memory)
            over=$(awk -v m="${lrss[$tag]}" -v b="$large_mib" 'BEGIN { printf "%.1f", m - b }')
            ok_rss=$(awk -v o="$over" 'BEGIN { print (o <= 32) ? "true" : "false" }')
            verdict+="$(pf "$ok_rss") peak RSS ${lrss[$tag]} MiB = body + $over MiB (target <= body + 32 MiB)"
            if [ -n "${lrss[urlsession-$mode]:-}" ]; then
                verdict+="; URLSession $(ratio "${lrss[urlsession-$mode]}" "$large_mib")x the body (reference: 2.1x)"
            fi
            ;;
    esac
    meets=$ok_rss
    for ok in "$ok_speed" "$ok_cpu" "$ok_ahc"; do
        if [ "$ok" = false ]; then meets=false; elif [ "$ok" = null ] && [ "$meets" = true ]; then meets=null; fi
    done
}

if [ "$skip_large" = 0 ]; then
    echo
    echo "Large transfers: one GET of $large_mib MiB$median; sizes checked, downloaded files compared with the source (cmp)"
    printf '%-11s %-14s %9s %9s %8s %10s %9s %7s %9s %8s %7s\n' client mode seconds "MiB/s" "CPU s" "CPU ms/MiB" \
        "RSS MiB" "vs C" "CPU vs C" "vs URLS" "vs AHC"
    for mode in $large_modes; do
        for client in $large_clients; do
            tag="$client-$mode"
            if [ -n "${lskip[$tag]:-}" ]; then
                printf '%-11s %-14s %s\n' "$client" "$mode" "${lskip[$tag]}"
                continue
            fi
            if [ -z "${lsecs[$tag]:-}" ]; then
                printf '%-11s %-14s %9s\n' "$client" "$mode" FAILED
                continue
            fi
            vs_c="" vs_u="" vs_a="" cpu_vs_c=""
            [ "$client" = c ] || vs_c=$(ratio "${lmbps[$tag]}" "${lmbps[c-$mode]:-}")
            [ "$client" = c ] || cpu_vs_c=$(ratio "${lcpu[$tag]}" "${lcpu[c-$mode]:-}")
            [ "$client" = urlsession ] || vs_u=$(ratio "${lmbps[$tag]}" "${lmbps[urlsession-$mode]:-}")
            [ "$client" = ahc ] || vs_a=$(ratio "${lmbps[$tag]}" "${lmbps[ahc-$mode]:-}")
            printf '%-11s %-14s %9s %9s %8s %10s %9s %7s %9s %8s %7s\n' "$client" "$mode" "${lsecs[$tag]}" \
                "${lmbps[$tag]}" "${lcpu[$tag]}" "$(cpu_per_mib "${lcpu[$tag]}")" "${lrss[$tag]}" "${vs_c:+${vs_c}x}" \
                "${cpu_vs_c:+${cpu_vs_c}x}" "${vs_u:+${vs_u}x}" "${vs_a:+${vs_a}x}"
        done
    done
    if [[ " $clients " == *" herald "* ]]; then
        echo "Targets from Docs/Performance.md (reported, never fatal):"
        for mode in $large_modes; do
            large_verdict "$mode"
            if [ -n "$verdict" ]; then
                echo "  $mode: $verdict"
            else
                echo "  $mode: not measured${lskip[herald-$mode]:+ (${lskip[herald-$mode]#not measured: })}"
            fi
        done
    fi
fi

if [ -n "$json_file" ]; then
    {
        echo "["
        first=1
        for n in $http1_concurrencies; do
            for client in $clients; do
                tag="$client-$n"
                [ -n "${secs[$tag]:-}" ] || continue
                extra=""
                if [ "$client" = herald ]; then
                    r=$(ratio "${rps[herald-$n]}" "${rps[urlsession-$n]:-}")
                    if [ -n "$r" ]; then extra+=", \"req_per_s_vs_urlsession\": $r"; fi
                    r=$(ratio "${rps[herald-$n]}" "${rps[c-$n]:-}")
                    if [ -n "$r" ]; then extra+=", \"req_per_s_vs_c\": $r"; fi
                    r=$(ratio "${rps[herald-$n]}" "${rps[ahc-$n]:-}")
                    if [ -n "$r" ]; then extra+=", \"req_per_s_vs_ahc\": $r"; fi
                elif [ "$client" = ahc ]; then
                    r=$(ratio "${rps[ahc-$n]}" "${rps[c-$n]:-}")
                    if [ -n "$r" ]; then extra+=", \"req_per_s_vs_c\": $r"; fi
                fi
                [ $first = 1 ] || echo ","
                first=0
                printf '  {"client": "%s", "concurrency": %s, "requests": %s, "failures": %s, "seconds": %s, "req_per_s": %s, "cpu_us_per_req": %s, "peak_rss_mib": %s%s}' \
                    "$client" "$n" "$requests" "${fails[$tag]}" "${secs[$tag]}" "${rps[$tag]}" "${cpu[$tag]}" \
                    "${rss[$tag]}" "$extra"
            done
        done
        for row in $tls_rows; do
            for client in $clients; do
                tag="$client-$row"
                [ -n "${secs[$tag]:-}" ] || continue
                extra=""
                for peer in c ahc urlsession; do
                    [ "$client" != "$peer" ] || continue
                    r=$(ratio "${rps[$tag]}" "${rps[$peer-$row]:-}")
                    if [ -n "$r" ]; then extra+=", \"req_per_s_vs_$peer\": $r"; fi
                done
                r=$(ratio "${cpu[$tag]}" "${cpu[c-$row]:-}")
                if [ "$client" != c ] && [ -n "$r" ]; then extra+=", \"cpu_per_req_vs_c\": $r"; fi
                [ $first = 1 ] || echo ","
                first=0
                printf '  {"client": "%s", "protocol": "%s", "concurrency": %s, "requests": %s, "failures": %s, "seconds": %s, "req_per_s": %s, "cpu_us_per_req": %s, "peak_rss_mib": %s, "server_connections": %s, "server_protocol": "%s", "server_resumed": %s%s}' \
                    "$client" "$(row_protocol "$row")" "$(row_concurrency "$row")" "$(row_requests "$row")" \
                    "${fails[$tag]}" "${secs[$tag]}" "${rps[$tag]}" "${cpu[$tag]}" "${rss[$tag]}" \
                    "${vconns[$tag]:-null}" "${vproto[$tag]:-}" "${vresumed[$tag]:-null}" "$extra"
            done
        done
        if [ "$skip_large" = 0 ]; then
            for mode in $large_modes; do
                for client in $large_clients; do
                    tag="$client-$mode"
                    [ -n "${lsecs[$tag]:-}" ] || continue
                    extra=""
                    if [ "$client" = herald ]; then
                        r=$(ratio "${lmbps[$tag]}" "${lmbps[c-$mode]:-}")
                        if [ -n "$r" ]; then extra+=", \"mb_per_s_vs_c\": $r"; fi
                        r=$(ratio "${lmbps[$tag]}" "${lmbps[urlsession-$mode]:-}")
                        if [ -n "$r" ]; then extra+=", \"mb_per_s_vs_urlsession\": $r"; fi
                        r=$(ratio "${lmbps[$tag]}" "${lmbps[ahc-$mode]:-}")
                        if [ -n "$r" ]; then extra+=", \"mb_per_s_vs_ahc\": $r"; fi
                        large_verdict "$mode"
                        extra+=", \"meets_target\": $meets"
                    elif [ "$client" = ahc ]; then
                        r=$(ratio "${lmbps[$tag]}" "${lmbps[c-$mode]:-}")
                        if [ -n "$r" ]; then extra+=", \"mb_per_s_vs_c\": $r"; fi
                    fi
                    [ $first = 1 ] || echo ","
                    first=0
                    printf '  {"client": "%s", "mode": "%s", "bytes": %s, "seconds": %s, "mb_per_s": %s, "cpu_s": %s, "peak_rss_mib": %s%s}' \
                        "$client" "$mode" "$large_bytes" "${lsecs[$tag]}" "${lmbps[$tag]}" "${lcpu[$tag]}" "${lrss[$tag]}" \
                        "$extra"
                done
            done
        fi
        echo
        echo "]"
    } >"$json_file"
    log "wrote $json_file"
fi
exit "$status"
