#!/usr/bin/env bash
# make bench-cache: Herald's response cache against the loopback nginx of `make bench-transfers`.
#
# Row set 1, cached (default 1,000 GETs of a 10 KiB file nginx sends with `Cache-Control: max-age=3600`, at
# concurrency 1): answered from a DiskResponseCache (`disk`), from an InMemoryResponseCache (`memory`), and from
# the network with no cache (`network`). With a cache, one warm-up request fills it before the measured phase,
# so every measured request is a hit.
# Row set 2, uncacheable (default 20,000 GETs of a 1 KiB file nginx sends with `Cache-Control: no-store`, at
# concurrency 64): the same three sessions, where the cache can only cost (a lookup per request, nothing stored).
#
# Each row is `TransferBench --client herald --cache none|memory|disk` (Benchmarks/Sources/TransferBench), a
# process of its own: req/s is over its measured phase, and CPU per request is the whole process's user+sys
# CPU time (getrusage(RUSAGE_SELF), every thread) over that phase, divided by the requests.
#
# usage: Benchmarks/run-cache.sh [--requests N] [--concurrency C] [--uncacheable-requests N]
#                                [--uncacheable-concurrency C] [--runs K] [--baseline BIN] [--keep]
# --runs K runs every row K times, interleaved, and reports the run with the median req/s.
# --baseline BIN also runs every row with BIN, a TransferBench built from another commit (copy it out of
# Benchmarks/.build/release first), interleaved with this tree's, and reports its rows marked "baseline".
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
requests=1000
concurrency=1
uncacheable_requests=20000
uncacheable_concurrency=64
runs=1
keep=0
baseline=""

usage() { awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "${BASH_SOURCE[0]}"; }
while [ $# -gt 0 ]; do
    case "$1" in
        --requests) requests=${2:?}; shift 2 ;;
        --concurrency) concurrency=${2:?}; shift 2 ;;
        --uncacheable-requests) uncacheable_requests=${2:?}; shift 2 ;;
        --uncacheable-concurrency) uncacheable_concurrency=${2:?}; shift 2 ;;
        --runs) runs=${2:?}; shift 2 ;;
        --baseline) baseline=${2:?}; shift 2 ;;
        --keep) keep=1; shift ;;
        -h | --help) usage; exit 0 ;;
        *) echo "run-cache: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
    esac
done
for n in "$requests" "$concurrency" "$uncacheable_requests" "$uncacheable_concurrency" "$runs"; do
    [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "run-cache: '$n' is not a positive integer" >&2; exit 2; }
done

log() { echo "run-cache: $*" >&2; }
if [ -n "$baseline" ] && [ ! -x "$baseline" ]; then
    echo "run-cache: --baseline '$baseline' is not an executable" >&2
    exit 2
fi

# shellcheck source=nginx/bench-env.sh
source "$here/nginx/bench-env.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/herald-bench-cache.XXXXXX")
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

SWIFT=${SWIFT:-swift}
log "building TransferBench (release)"
"$SWIFT" build -c release --package-path "$here" --product TransferBench >&2
bench="$("$SWIFT" build -c release --package-path "$here" --show-bin-path)/TransferBench"

prefix="$work/nginx"
mkdir -p "$prefix/www/cacheable" "$prefix/www/uncacheable"
head -c 10240 /dev/urandom >"$prefix/www/cacheable/10k.bin"
head -c 1024 /dev/urandom >"$prefix/www/uncacheable/1k.bin"
chmod -R a+rX "$work"
start_nginx "$prefix"
base="http://127.0.0.1:$port"
cache_control() { curl -sI "$1" 2>/dev/null | tr -d '\r' | sed -n 's/^[Cc]ache-[Cc]ontrol: //p'; }
if command -v curl >/dev/null; then
    log "nginx on $base: /cacheable/10k.bin says Cache-Control: $(cache_control "$base/cacheable/10k.bin");" \
        "/uncacheable/1k.bin says Cache-Control: $(cache_control "$base/uncacheable/1k.bin")"
fi

json_field() { sed -n "s/.*\"$2\":\"\{0,1\}\([^,\"}]*\).*/\1/p" "$1" | tail -n 1; }
declare -A rps cpu
status=0

run_one() { # set cache run [baseline]
    local set=$1 cache=$2 tag="$1-$2${4:+-base}#$3" binary=$bench url n total bytes
    [ -n "${4:-}" ] && binary=$4
    if [ "$set" = cached ]; then
        url="$base/cacheable/10k.bin" n=$concurrency total=$requests bytes=10240
    else
        url="$base/uncacheable/1k.bin" n=$uncacheable_concurrency total=$uncacheable_requests bytes=1024
    fi
    local rc=0
    "$binary" --client herald --cache "$cache" --url "$url" --concurrency "$n" --requests "$total" \
        --expect-bytes "$bytes" >"$work/$tag.out" 2>"$work/$tag.err" || rc=$?
    local seconds failures done_requests cpu_us
    seconds=$(json_field "$work/$tag.out" seconds)
    failures=$(json_field "$work/$tag.out" failures)
    done_requests=$(json_field "$work/$tag.out" requests)
    cpu_us=$(json_field "$work/$tag.out" cpu_us)
    if [ "$rc" != 0 ] || [ -z "$seconds" ] || [ -z "$cpu_us" ] || [ "$done_requests" != "$total" ] || [ "${failures:-1}" != 0 ]; then
        log "$set/$cache failed (exit $rc, ${failures:-?} failures, ${done_requests:-?} requests):"
        sed 's/^/    /' "$work/$tag.err" | tail -n 20 >&2
        status=1
        return 0
    fi
    rps[$tag]=$(awk -v r="$total" -v s="$seconds" 'BEGIN { printf "%.0f", r / s }')
    cpu[$tag]=$(awk -v r="$total" -v u="$cpu_us" 'BEGIN { printf "%.1f", u / r }')
    log "$(printf '%-12s %-8s %-8s run %-2s %8s req/s %8s µs CPU/req' "$set" "$cache" "${4:+baseline}" "$3" "${rps[$tag]}" "${cpu[$tag]}")"
}

labels() { case "$1" in none) echo network ;; *) echo "$1" ;; esac; }
log "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
for run in $(seq "$runs"); do
    for set in cached uncacheable; do
        for cache in disk memory none; do
            run_one "$set" "$cache" "$run"
            if [ -n "$baseline" ]; then run_one "$set" "$cache" "$run" "$baseline"; fi
        done
    done
done

echo
echo "Response cache benchmark, loopback nginx, $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)$([ "$runs" -gt 1 ] && echo ", median of $runs runs")"
printf '%-44s %-36s %10s %13s\n' row "served by" "req/s" "CPU µs/req"
for set in cached uncacheable; do
    for variant in "" ${baseline:+-base}; do
    for cache in disk memory none; do
        tag="$set-$cache$variant"
        chosen=$(for run in $(seq "$runs"); do
            if [ -n "${rps[$tag#$run]:-}" ]; then echo "${rps[$tag#$run]} $run"; fi
        done | sort -n | awk '{ line[NR] = $2 } END { if (NR) print line[int((NR + 1) / 2)] }')
        if [ "$set" = cached ]; then
            row="$requests GETs of 10 KiB, max-age, c=$concurrency"
            served=$(labels "$cache")
        else
            row="$uncacheable_requests GETs of 1 KiB, no-store, c=$uncacheable_concurrency"
            served="network"
            [ "$cache" = none ] && served="network (cache off)" || served="network ($cache cache on)"
        fi
        [ -n "$variant" ] && served="$served, baseline"
        if [ -z "$chosen" ]; then
            printf '%-44s %-36s %10s\n' "$row" "$served" FAILED
        else
            printf '%-44s %-36s %10s %13s\n' "$row" "$served" "${rps[$tag#$chosen]}" "${cpu[$tag#$chosen]}"
        fi
    done
    done
done
exit "$status"
