#!/usr/bin/env bash
# make bench-instructions: instructions per request for Herald and for the C client (Benchmarks/CClient,
# libcurl multi + libuv) under `valgrind --tool=callgrind`, against the loopback nginx of
# make bench-transfers. Instruction counts don't depend on what else the machine does, so a change to
# the hot path can be judged without the noise of req/s.
#
# usage: Benchmarks/run-instructions.sh [--requests N] [--concurrency C] [--baseline B] [--runs R] [--top K] [--keep]
#
# Each client runs twice under callgrind, for B (default 200) and N (default 2000) GETs of 1 KiB with C
# (default 64) in flight; instructions per request = (Ir(N) − Ir(B)) / (N − B), so start-up and
# shut-down cancel out. The count still moves a little from run to run (how many events libuv and curl
# batch into one call depends on timing even under valgrind), so each client is measured R times (default
# 3) and every figure is printed with the median. Then Herald's top K (default 20) functions by self cost
# (Ir) of the last N run,
# from callgrind_annotate, demangled. Release builds: the C client at -O2, TransferBench with
# `swift build -c release`. --keep keeps the temp dir with the callgrind.out files.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
requests=2000
baseline=200
concurrency=64
top=20
runs=3
keep=0

usage() { awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "${BASH_SOURCE[0]}"; }

while [ $# -gt 0 ]; do
    case "$1" in
        --requests) requests=${2:?}; shift 2 ;;
        --baseline) baseline=${2:?}; shift 2 ;;
        --concurrency) concurrency=${2:?}; shift 2 ;;
        --top) top=${2:?}; shift 2 ;;
        --runs) runs=${2:?}; shift 2 ;;
        --keep) keep=1; shift ;;
        -h | --help) usage; exit 0 ;;
        *) echo "run-instructions: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
    esac
done
for v in "$requests" "$baseline" "$concurrency" "$top" "$runs"; do
    [[ "$v" =~ ^[1-9][0-9]*$ ]] || { echo "run-instructions: '$v' is not a positive integer" >&2; exit 2; }
done
[ "$baseline" -lt "$requests" ] || { echo "run-instructions: --baseline must be below --requests" >&2; exit 2; }

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
chmod -R a+rX "$work"
start_nginx "$prefix"
url="http://127.0.0.1:$port/1k.bin"
log "nginx (pid $nginx_pid) serving $url"

# TransferBench runs its load on the main thread (valgrind 3.19 crashes in dispatchMain()'s thread exit).
export TRANSFERBENCH_NO_DISPATCH_MAIN=1

# Total instructions (Ir) of one callgrind run of `client` doing `n` requests; output in $work/client-n.out.
measure() { # client n
    local client=$1 n=$2 out="$work/$1-$2.out" cmd
    case "$client" in
        c) cmd=("$here/CClient/curl-uv-client" "$url" "$concurrency" "$n") ;;
        herald) cmd=("$swift_bin" --client herald --url "$url" --concurrency "$concurrency" --requests "$n") ;;
    esac
    if ! valgrind --tool=callgrind --callgrind-out-file="$out" "${cmd[@]}" >"$work/$client-$n.stdout" \
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
    total=$(awk '/^(summary|totals):/ { print $2; exit }' "$out")
    [ -n "$total" ] || { log "no instruction total in $out"; exit 1; }
    echo "$total"
}

declare -A per_request runs_of
for client in c herald; do
    counts=()
    for run in $(seq 1 "$runs"); do
        log "$client, run $run of $runs: $baseline and $requests GETs at concurrency $concurrency under callgrind"
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
echo "Instructions per request (callgrind, 1 KiB GETs at concurrency $concurrency, (Ir($requests) - Ir($baseline)) / $((requests - baseline))), median of $runs runs:"
printf '  %-7s %10s   (runs: %s)\n' c "${per_request[c]}" "${runs_of[c]}" herald "${per_request[herald]}" "${runs_of[herald]}"
printf '  herald/c %.2fx\n' "$(awk -v h="${per_request[herald]}" -v c="${per_request[c]}" 'BEGIN { print h / c }')"
echo
echo "Herald's top $top functions by self cost per request (Ir($requests) - Ir($baseline) of each function, / $((requests - baseline))):"
demangle() { if command -v swift-demangle >/dev/null; then swift-demangle --simplified; else "$SWIFT" demangle --simplified; fi; }
# "count name" per function of each run (start-up and shut-down cancel out in the difference).
for n in "$baseline" "$requests"; do
    callgrind_annotate --threshold=100 "$work/herald-$n.out" 2>/dev/null | grep -E '^ *[0-9,]+ ' |
        grep -v 'PROGRAM TOTALS' | sed -E 's/^ *([0-9,]+) +\([ 0-9.]+%\) +/\1 /; s/,//g' >"$work/herald-$n.self"
done
awk -v d="$((requests - baseline))" '
    NR == FNR { c = $1; sub(/^[0-9]+ /, ""); low[$0] = c; next }
    { c = $1; sub(/^[0-9]+ /, ""); printf "%10.0f  %s\n", (c - low[$0]) / d, $0 }' \
    "$work/herald-$baseline.self" "$work/herald-$requests.self" | sort -rn | awk -v k="$top" 'NR <= k' | demangle |
    sed "s|$work/||" | cut -c1-180
