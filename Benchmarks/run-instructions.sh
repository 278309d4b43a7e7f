#!/usr/bin/env bash
# make bench-instructions: instructions per request for Herald and for the C client (Benchmarks/CClient,
# libcurl multi + libuv) under `valgrind --tool=callgrind`, against the loopback nginx of
# make bench-transfers. Instruction counts don't depend on what else the machine does, so a change to
# the hot path can be judged without the noise of req/s.
#
# usage: Benchmarks/run-instructions.sh [--requests N] [--concurrency C] [--baseline B] [--runs R] [--top K]
#                                       [--protocol http1|https1|h2] [--threads] [--c-herald-fields] [--post N]
#                                       [--keep]
#
# Each client runs twice under callgrind, for B (default 200) and N (default 2000) GETs of 1 KiB with C
# (default 64) in flight; instructions per request = (Ir(N) − Ir(B)) / (N − B), so start-up and
# shut-down cancel out. The count still moves a little from run to run (how many events libuv and curl
# batch into one call depends on timing even under valgrind), so each client is measured R times (default
# 3) and every figure is printed with the median. Then Herald's top K (default 20) functions by self cost
# (Ir) of the last N run,
# from callgrind_annotate, demangled. Release builds: the C client at -O2, TransferBench with
# `swift build -c release`. --keep keeps the temp dir with the callgrind.out files.
#
# --protocol picks what the GETs go over: http1 (the default, plain HTTP/1.1), https1 (HTTP/1.1 over TLS
# 1.3, kept alive) or h2 (HTTP/2 over TLS 1.3, the requests multiplexed on one connection), against the
# throwaway authority and nginx servers of run-transfers.sh. --threads also prints, for each client, the
# instructions per request of every thread that ran at least 1% of them (callgrind --separate-threads),
# named by the function that costs it most, so the busiest thread (the loop's) can be compared with C's one.
# --c-herald-fields has the C client send the three request fields a Herald session sends by default
# (`User-Agent`, `Accept-Language`, `Accept-Encoding`, as CURLOPT_HTTPHEADER lines of the same length), which
# libcurl itself spends instructions on, so that the difference left is Herald's own.
# --post N makes every request a POST with a body of N bytes (C: CURLOPT_UPLOAD and a read callback, as Herald's
# engine sends a body), to a location where nginx reads the whole body before it answers with the same 1 KiB
# (it passes the request on to itself as a GET): a server that answered before reading the body would meet a
# libcurl 7.88 failure over HTTP/2 (Docs/Performance.md says which).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
requests=2000
baseline=200
concurrency=64
top=20
runs=3
keep=0
protocol=http1
threads=0
c_herald_fields=0
post_bytes=""

usage() { awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "${BASH_SOURCE[0]}"; }

while [ $# -gt 0 ]; do
    case "$1" in
        --requests) requests=${2:?}; shift 2 ;;
        --baseline) baseline=${2:?}; shift 2 ;;
        --concurrency) concurrency=${2:?}; shift 2 ;;
        --top) top=${2:?}; shift 2 ;;
        --runs) runs=${2:?}; shift 2 ;;
        --protocol) protocol=${2:?}; shift 2 ;;
        --threads) threads=1; shift ;;
        --c-herald-fields) c_herald_fields=1; shift ;;
        --post) post_bytes=${2:?}; shift 2 ;;
        --keep) keep=1; shift ;;
        -h | --help) usage; exit 0 ;;
        *) echo "run-instructions: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
    esac
done
[ -z "$post_bytes" ] || [[ "$post_bytes" =~ ^[0-9]+$ ]] || {
    echo "run-instructions: --post takes a number of bytes, not '$post_bytes'" >&2
    exit 2
}
for v in "$requests" "$baseline" "$concurrency" "$top" "$runs"; do
    [[ "$v" =~ ^[1-9][0-9]*$ ]] || { echo "run-instructions: '$v' is not a positive integer" >&2; exit 2; }
done
[ "$baseline" -lt "$requests" ] || { echo "run-instructions: --baseline must be below --requests" >&2; exit 2; }
case "$protocol" in http1 | https1 | h2) ;; *) echo "run-instructions: unknown protocol '$protocol'" >&2; exit 2 ;; esac

log() { echo "run-instructions: $*" >&2; }

# shellcheck source=nginx/bench-env.sh
source "$here/nginx/bench-env.sh"
command -v valgrind >/dev/null && command -v callgrind_annotate >/dev/null || apt_install valgrind

command -v objcopy >/dev/null || apt_install binutils
work=$(mktemp -d "${TMPDIR:-/tmp}/herald-bench-instructions.XXXXXX")
nginx_pid=""
cleanup() {
    local status=$?
    if [ -n "$nginx_pid" ] && kill -0 "$nginx_pid" 2>/dev/null; then
        kill -TERM "$nginx_pid" 2>/dev/null || true
        wait "$nginx_pid" 2>/dev/null || true
    fi
    if [ "$keep" = 1 ]; then log "kept $work"; else rm -rf "$work"; fi
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

log "building the C client (-O2) and TransferBench (release)"
"$CC" -O2 -g -Wall -o "$here/CClient/curl-uv-client" "$here/CClient/curl-uv-client.c" \
    $(pkg-config --cflags --libs libcurl libuv)
SWIFT=${SWIFT:-swift}
"$SWIFT" build -c release --package-path "$here" --product TransferBench >&2
# valgrind 3.19 (Debian 12) can't read the DWARF 5 that Swift emits and gives up; a copy without the
# debug sections keeps the symbol table, which is all that function names need.
objcopy --strip-debug "$("$SWIFT" build -c release --package-path "$here" --show-bin-path)/TransferBench" \
    "$work/TransferBench"
swift_bin="$work/TransferBench"

prefix="$work/nginx"
mkdir -p "$prefix/www"
head -c 1024 /dev/zero | tr '\0' 'h' >"$prefix/www/1k.bin"
c_options=() swift_options=()
if [ "$protocol" != http1 ]; then
    tls="$work/tls"
    make_throwaway_tls "$tls"
    h2_listen=""
    h2_directive=""
    c_options=(--cacert "$tls/ca.pem")
    swift_options=(--cacert "$tls/ca.pem" --http-version 1.1)
    if [ "$protocol" = h2 ]; then
        h2_listen_options
        c_options+=(--http2)
        swift_options=(--cacert "$tls/ca.pem" --http-version 2)
    fi
    nginx_extra_servers="    server { listen 127.0.0.1:@PORT+1@ ssl$h2_listen backlog=4096; $h2_directive
        ssl_certificate $tls/server.pem; ssl_certificate_key $tls/server.key; ssl_protocols TLSv1.3;
        server_name localhost; root @PREFIX@/www; location / { } @POST_LOCATION@ }"
fi
path=1k.bin
if [ -n "$post_bytes" ]; then
    # nginx reads the whole body before it passes the request on (proxy_request_buffering), to a plain server
    # of its own that answers the GET with the file.
    post_location="location = /post/1k.bin { proxy_pass http://127.0.0.1:@PORT+2@/1k.bin; proxy_method GET; }"
    nginx_extra_servers="${nginx_extra_servers:-}
    server { listen 127.0.0.1:@PORT+2@ backlog=4096; server_name localhost; root @PREFIX@/www; location / { }
        $post_location }"
    path=post/1k.bin
    c_options+=(--post "$post_bytes")
    swift_options+=(--post-bytes "$post_bytes")
fi
nginx_extra_servers=${nginx_extra_servers:-}
nginx_extra_servers=${nginx_extra_servers//@POST_LOCATION@/${post_location:-}}
if [ "$c_herald_fields" = 1 ]; then
    curl_version=$(curl-config --version 2>/dev/null | sed 's/^libcurl //')
    c_options+=(--header "User-Agent: Herald/0.0.0 libcurl/${curl_version:-7.88.1}" --header "Accept-Language: en;q=1"
        --header "Accept-Encoding: deflate, gzip, br, zstd")
fi
chmod -R a+rX "$work"
start_nginx "$prefix"
url="http://127.0.0.1:$port/$path"
[ -z "$post_bytes" ] || url="http://127.0.0.1:$((port + 2))/$path"
[ "$protocol" = http1 ] || url="https://127.0.0.1:$((port + 1))/$path"
log "nginx (pid $nginx_pid) serving $url ($protocol)"

# TransferBench runs its load on the main thread (valgrind 3.19 crashes in dispatchMain()'s thread exit).
export TRANSFERBENCH_NO_DISPATCH_MAIN=1

# Total instructions (Ir) of one callgrind run of `client` doing `n` requests; output in $work/client-n.out.
measure() { # client n
    local client=$1 n=$2 out="$work/$1-$2.out" cmd
    case "$client" in
        c) cmd=("$here/CClient/curl-uv-client" ${c_options[@]+"${c_options[@]}"} "$url" "$concurrency" "$n") ;;
        herald)
            cmd=("$swift_bin" --client herald --url "$url" --concurrency "$concurrency" --requests "$n"
                ${swift_options[@]+"${swift_options[@]}"})
            ;;
    esac
    local separate=()
    [ "$threads" = 0 ] || separate=(--separate-threads=yes)
    if ! valgrind --tool=callgrind ${separate[@]+"${separate[@]}"} --callgrind-out-file="$out" "${cmd[@]}" \
        >"$work/$client-$n.stdout" \
        2>"$work/$client-$n.stderr"; then
        log "$client with $n requests failed under callgrind:"
        tail -n 20 "$work/$client-$n.stderr" >&2
        exit 1
    fi
    grep -q '"failures":0' "$work/$client-$n.stdout" || {
        log "$client with $n requests reported failures: $(cat "$work/$client-$n.stdout")"
        exit 1
    }
    local total
    total=$(for file in $(outputs "$out"); do awk '/^(summary|totals):/ { print $2; exit }' "$file"; done |
        awk '{ sum += $1; n++ } END { if (n) printf "%.0f", sum }')
    [ -n "$total" ] || { log "no instruction total in $out"; exit 1; }
    echo "$total"
}

# The callgrind output files of one run: one, or one per thread (OUT-01, OUT-02, …) with --threads.
outputs() { # out
    if [ "$threads" = 0 ]; then echo "$1"; else ls "$1"-[0-9]*; fi
}

# "count name" per function of a callgrind output, summed over its threads' files.
self_costs() { # out
    local file
    for file in $(outputs "$1"); do
        callgrind_annotate --threshold=100 "$file" 2>/dev/null | grep -E '^ *[0-9,]+ ' |
            grep -v 'PROGRAM TOTALS' | sed -E 's/^ *([0-9,]+) +\([ 0-9.]+%\) +/\1 /; s/,//g'
    done | awk '{ c = $1; sub(/^[0-9]+ /, ""); sum[$0] += c } END { for (f in sum) printf "%.0f %s\n", sum[f], f }'
}

declare -A per_request runs_of
for client in c herald; do
    counts=()
    for run in $(seq 1 "$runs"); do
        log "$client, run $run of $runs: $baseline and $requests requests at concurrency $concurrency under callgrind"
        low=$(measure "$client" "$baseline")
        high=$(measure "$client" "$requests")
        counts+=("$(awk -v h="$high" -v l="$low" -v n="$requests" -v b="$baseline" \
            'BEGIN { printf "%.0f", (h - l) / (n - b) }')")
        log "$client: Ir($baseline) = $low, Ir($requests) = $high"
    done
    runs_of[$client]="${counts[*]}"
    per_request[$client]=$(printf '%s\n' "${counts[@]}" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
done

echo
what="1 KiB GETs"
[ -z "$post_bytes" ] || what="POSTs of $post_bytes bytes answered with 1 KiB"
echo "Instructions per request (callgrind, $what at concurrency $concurrency, (Ir($requests) - Ir($baseline)) / $((requests - baseline))), median of $runs runs:"
printf '  %-7s %10s   (runs: %s)\n' c "${per_request[c]}" "${runs_of[c]}" herald "${per_request[herald]}" "${runs_of[herald]}"
printf '  herald/c %.2fx\n' "$(awk -v h="${per_request[herald]}" -v c="${per_request[c]}" 'BEGIN { print h / c }')"
echo
echo "Herald's top $top functions by self cost per request (Ir($requests) - Ir($baseline) of each function, / $((requests - baseline))):"
demangle() { if command -v swift-demangle >/dev/null; then swift-demangle --simplified; else "$SWIFT" demangle --simplified; fi; }
# "count name" per function of each run (start-up and shut-down cancel out in the difference).
for n in "$baseline" "$requests"; do self_costs "$work/herald-$n.out" >"$work/herald-$n.self"; done
awk -v d="$((requests - baseline))" '
    NR == FNR { c = $1; sub(/^[0-9]+ /, ""); low[$0] = c; next }
    { c = $1; sub(/^[0-9]+ /, ""); printf "%10.0f  %s\n", (c - low[$0]) / d, $0 }' \
    "$work/herald-$baseline.self" "$work/herald-$requests.self" | sort -rn | awk -v k="$top" 'NR <= k' | demangle |
    sed "s|$work/||" | cut -c1-180

[ "$threads" = 1 ] || exit 0
# Threads are matched between the two runs by their number (the order they were made in); each is named by
# the function that costs it most in the larger run.
for client in c herald; do
    echo
    echo "$client: instructions per request by thread (threads with at least 1% of them), the last run:"
    for high_file in $(outputs "$work/$client-$requests.out"); do
        thread=${high_file##*-}
        low_file="$work/$client-$baseline.out-$thread"
        high=$(awk '/^(summary|totals):/ { print $2; exit }' "$high_file")
        low=0
        [ -f "$low_file" ] && low=$(awk '/^(summary|totals):/ { print $2; exit }' "$low_file")
        name=$(callgrind_annotate --threshold=100 "$high_file" 2>/dev/null | grep -E '^ *[0-9,]+ ' |
            grep -v 'PROGRAM TOTALS' | awk 'NR == 1' | sed -E 's/^ *[0-9,]+ +\([ 0-9.]+%\) +//' | demangle | cut -c1-100)
        awk -v h="$high" -v l="$low" -v d="$((requests - baseline))" -v t="$thread" -v name="$name" \
            -v all="${per_request[$client]}" '
            BEGIN { v = (h - l) / d; if (v >= all / 100) printf "  thread %s %10.0f  (%s)\n", t, v, name }'
    done
done
