#!/usr/bin/env bash
# make fuzz: builds Herald's libFuzzer targets and runs each for FUZZ_SECONDS (default 60): response heads and file
# names (headers), resume data (resume-data), the JSON parser (json), server-sent events (sse), Set-Cookie fields
# (set-cookie), the cookie file (cookie-file), WWW-Authenticate challenges (auth-challenge), Cache-Control, Age and
# HTTP dates (cache-control), Content-Range (content-range), Retry-After (retry-after), the disk cache's stored
# response heads (stored-head), routing-netlink datagrams (netlink), public suffix lists and IDNA host names
# (public-suffix). Fuzz/HeraldFuzzTargets.swift says what each checks; FUZZ_TARGETS picks some.
#
# The fuzz entry point (Fuzz/HeraldFuzzTargets.swift) is compiled into the Herald module itself with
# `swiftc -sanitize=fuzzer,address`, so the internal parsers are reachable without @testable (and HeraldEngine's
# package ones, one package name for all) and everything is instrumented: each module Herald depends on first,
# then Herald's sources plus the entry point.
#
# Corpora start from Fuzz/Corpus/<target> and grow in $BUILD/corpus/<target> (the checked-in seeds are not
# modified). A crash leaves its input in $BUILD/crashes/<target>-crash-…; copy it to
# Fuzz/Regressions/<target>/ (FuzzRegressionTests replays it in make test) together with the fix. Exit status non-zero when any target crashed.
set -euo pipefail
cd "$(dirname "$0")/.."
SWIFTC=${SWIFTC:-swiftc}
FUZZ_SECONDS=${FUZZ_SECONDS:-60}
BUILD=${FUZZ_BUILD:-.build-fuzz}
TARGETS=${FUZZ_TARGETS:-"headers resume-data json sse set-cookie cookie-file auth-challenge cache-control content-range
    retry-after stored-head netlink public-suffix"}
mkdir -p "$BUILD/modules" "$BUILD/crashes"

flags=(-sanitize=fuzzer,address -parse-as-library -swift-version 6 -package-name herald -O -g)
root=$(pwd)
# The C modules' headers: system libraries (CCurl, CUV, CIDN2, CSQLite) and the package's own C targets.
includes=(-I modules -I "$root/Sources/CCurl" -I "$root/Sources/CUV" -I "$root/Sources/CIDN2" -I "$root/Sources/CSQLite"
    -I "$root/Sources/CHeraldThread/include" -I "$root/Sources/CNetlink/include")
echo "fuzz: building (swiftc ${flags[*]})"
# The package's C targets: HeraldNotifications keeps its per-thread state in a C thread-local (CHeraldThread),
# reachability makes the socket calls Swift can't spell in CNetlink.
for target in CHeraldThread CNetlink; do
    clang -fsanitize=fuzzer-no-link,address -O2 -g -c Sources/$target/*.c -I Sources/$target/include \
        -o "$BUILD/$target.o"
done
# Builds the Swift module $1 from the sources under $2 into $BUILD/$1.o and its interface into $BUILD/modules.
# Run from the build directory: the driver leaves a $1-*.swiftmodule for the debugger in the current one.
build_module() {
    local name=$1 sources=$2
    (cd "$BUILD" && "$SWIFTC" "${flags[@]}" -module-name "$name" -wmo -emit-module "${includes[@]}" \
        -emit-module-path "modules/$name.swiftmodule" -c $(find "$sources" -name '*.swift' | sort) -o "$name.o" \
        2> >(grep -v "Cannot export local symbol" >&2))
}
build_module HeraldNotifications "$root/Sources/HeraldNotifications"
# Herald carries a task's trace context through swift-distributed-tracing's Instrumentation module: built the
# same way from the package's checkout (resolved, not built, by SwiftPM).
swift package resolve >/dev/null
build_module Instrumentation "$root/.build/checkouts/swift-distributed-tracing/Sources/Instrumentation"
# The targets Herald is made of, in dependency order; the fuzz entry point is compiled into Herald itself.
for module in HeraldEngine HeraldCookies HeraldNetlink; do
    build_module "$module" "$root/Sources/$module"
done
(cd "$BUILD" && "$SWIFTC" "${flags[@]}" -module-name Herald -wmo "${includes[@]}" \
    -D HERALD_FUZZ_BUILD $(find "$root/Sources/Herald" -name '*.swift' | sort) "$root/Fuzz/HeraldFuzzTargets.swift" \
    "$root/Tests/HeraldTests/Reliability/FuzzChecks.swift" \
    HeraldNotifications.o Instrumentation.o HeraldEngine.o HeraldCookies.o HeraldNetlink.o CHeraldThread.o CNetlink.o \
    -lcurl -luv -lidn2 -lsqlite3 -o herald-fuzz \
    2> >(grep -v "Cannot export local symbol" >&2))

# Partial files the resume-data seeds name, so that decoding succeeds and the round trip is exercised.
mkdir -p /tmp/herald-fuzz
head -c 100 /dev/zero > /tmp/herald-fuzz/download-1-seed.part
head -c 100 /dev/zero > /tmp/herald-fuzz/download-2-seed.part

status=0
for target in $TARGETS; do
    corpus="$BUILD/corpus/$target"
    mkdir -p "$corpus"
    cp -n Fuzz/Corpus/"$target"/* "$corpus"/ 2>/dev/null || true
    echo "fuzz: $target for $FUZZ_SECONDS s"
    log="$BUILD/$target.log"
    # A hard stop a little after libFuzzer's own, in case a crash report hangs.
    if HERALD_FUZZ_TARGET=$target ASAN_OPTIONS=detect_leaks=0 timeout $((FUZZ_SECONDS + 60)) \
        "$BUILD/herald-fuzz" -max_total_time="$FUZZ_SECONDS" -max_len=8192 -timeout=10 -print_final_stats=1 \
        -artifact_prefix="$BUILD/crashes/$target-" "$corpus" > "$log" 2>&1; then
        echo "fuzz: $target: no crash; $(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}') inputs," \
            "corpus $(ls "$corpus" | wc -l) files, $(grep -E '^#[0-9]+.*cov:' "$log" | tail -1 | grep -oE 'cov: [0-9]+')"
    else
        echo "fuzz: $target: FAILED, see $log and $BUILD/crashes/"
        tail -30 "$log"
        status=1
    fi
done
exit $status
