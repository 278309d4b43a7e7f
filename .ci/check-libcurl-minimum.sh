#!/usr/bin/env bash
# Shows that Herald builds against the oldest libcurl it claims (README.md, "Supported platforms").
#
# There is no old libcurl on the machine, so the check makes old headers: a copy of the installed ones with
# LIBCURL_VERSION_NUM lowered to the minimum, every identifier Herald uses that is newer than the minimum
# deleted (versions from .ci/libcurl-symbols.txt), and the deprecation attributes that only 7.87+ headers
# carry switched off. Against them it
#   1. compiles Sources/CCurl/shim.h with warnings as errors (the #if branches for old libcurl);
#   2. builds the Herald module (the Swift engine must reach newer options only through the shim); the
#      CCurl module it compiled is checked to come from the lowered headers;
#   3. runs a probe of the guarded wrappers built both ways against the installed libcurl, which must
#      print the same results (the CURLOPT_PROTOCOLS fallback answers as CURLOPT_PROTOCOLS_STR does).
# MINIMUM=7.81.0 .ci/check-libcurl-minimum.sh checks another version; SCRATCH is its build directory.
set -euo pipefail
cd "$(dirname "$0")/.."
MINIMUM=${MINIMUM:-7.76.1}
SCRATCH=${SCRATCH:-.build-libcurl-min}
SWIFT=${SWIFT:-swift}
CC=${CC:-$(command -v clang || command -v cc)}

include_dir=$(pkg-config --variable=includedir libcurl)
[ -f "$include_dir/curl/curlver.h" ] || { echo "no curl/curlver.h under $include_dir" >&2; exit 1; }
headers="$PWD/$SCRATCH/libcurl-$MINIMUM/include"
rm -rf "$SCRATCH/libcurl-$MINIMUM" && mkdir -p "$headers" "$SCRATCH/libcurl-$MINIMUM/pkgconfig"
cp -R "$include_dir/curl" "$headers/"

# Which identifiers Herald uses (comments included: harmless), and which of them are newer than MINIMUM.
newer=$(python3 - "$MINIMUM" "$headers/curl" <<'PY'
import pathlib, re, sys
minimum, curl_dir = tuple(int(p) for p in sys.argv[1].split(".")), pathlib.Path(sys.argv[2])
table = {}
for line in open(".ci/libcurl-symbols.txt"):
    if line.strip() and not line.startswith("#"):
        name, version = line.split()
        table[name] = tuple(int(p) for p in version.split("."))
sources = [pathlib.Path("Sources/CCurl/shim.h")] + sorted(
    path for target in ("Sources/HeraldEngine", "Sources/Herald") for path in pathlib.Path(target).rglob("*.swift"))
used = set()
for path in sources:
    used |= {m for m in re.findall(r"\b(CURL[A-Za-z0-9_]*|curl_[a-z_]+)\b", path.read_text()) if not m.endswith("_")}
unknown = sorted(used - table.keys())
if unknown:
    sys.exit("not in .ci/libcurl-symbols.txt (add each with the version that introduced it): " + " ".join(unknown))
newer = sorted(name for name in used if table[name] > minimum)
# Delete each newer identifier's declaration lines (an enum entry, a typecheck-gcc.h alternative, a
# #define); a mention inside a string literal (a deprecation message) is not a declaration.
strings = re.compile(r'"(?:[^"\\]|\\.)*"')
for header in curl_dir.glob("*.h"):
    lines = header.read_text().splitlines(keepends=True)
    kept = [l for l in lines if not any(re.search(rf"\b{n}\b", strings.sub("", l)) for n in newer)]
    header.write_text("".join(kept))
for name in newer:
    for header in curl_dir.glob("*.h"):
        if re.search(rf"\b{name}\b", strings.sub("", header.read_text())):
            sys.exit(f"{name} is still declared in {header}")
print(" ".join(newer))
PY
)
IFS=. read -r major minor patch <<< "$MINIMUM"
number=$(printf '0x%02x%02x%02x' "$major" "$minor" "$patch")
sed -i -e "s/^#define LIBCURL_VERSION \".*\"/#define LIBCURL_VERSION \"$MINIMUM\"/" \
    -e "s/^#define LIBCURL_VERSION_NUM 0x[0-9a-fA-F]*/#define LIBCURL_VERSION_NUM $number/" \
    -e "s/^#define LIBCURL_VERSION_MINOR .*/#define LIBCURL_VERSION_MINOR $minor/" \
    -e "s/^#define LIBCURL_VERSION_PATCH .*/#define LIBCURL_VERSION_PATCH $patch/" \
    -e "s|^#define LIBCURL_VERSION_NUM|/* headers made old by check-libcurl-minimum.sh: no deprecation attributes (7.87+) */\n#define CURL_DISABLE_DEPRECATION 1\n#define LIBCURL_VERSION_NUM|" \
    "$headers/curl/curlver.h"
grep -q "LIBCURL_VERSION_NUM $number" "$headers/curl/curlver.h"
echo "libcurl headers lowered to $MINIMUM ($number); removed: ${newer:-nothing}"

# 1. The shim, with warnings as errors.
printf '#include "shim.h"\nint main(void) { return 0; }\n' > "$SCRATCH/libcurl-$MINIMUM/shim-only.c"
"$CC" -std=gnu11 -Wall -Wextra -Werror -Wno-unused-const-variable -I "$headers" -I Sources/CCurl \
    -o /dev/null -c "$SCRATCH/libcurl-$MINIMUM/shim-only.c"
echo "shim.h compiles against the $MINIMUM headers"

# 2. The Herald module, with pkg-config pointing at the lowered headers. SwiftPM does not track C headers as
#    inputs, so the previous run's build (not its dependency checkouts) is removed to force a real compile.
rm -rf "$SCRATCH"/x86_64-* "$SCRATCH"/debug "$SCRATCH"/debug.yaml "$SCRATCH"/build.db
sed -e "s|^includedir=.*|includedir=$headers|" "$(pkg-config --variable=pcfiledir libcurl)/libcurl.pc" \
    > "$SCRATCH/libcurl-$MINIMUM/pkgconfig/libcurl.pc"
PKG_CONFIG_PATH="$PWD/$SCRATCH/libcurl-$MINIMUM/pkgconfig" \
    "$SWIFT" build --scratch-path "$SCRATCH" --target Herald -Xswiftc -warnings-as-errors
modules=$(find "$SCRATCH" -name 'CCurl-*.pcm' -newer "$headers/curl/curlver.h")
[ -n "$modules" ] || { echo "no CCurl module was compiled for this run" >&2; exit 1; }
for module in $modules; do
    # (Into a file first: grep -q closing the pipe early would fail `strings` under pipefail.)
    strings "$module" > "$SCRATCH/libcurl-$MINIMUM/module-strings.txt"
    grep -qF "$headers/curl/curl.h" "$SCRATCH/libcurl-$MINIMUM/module-strings.txt" ||
        { echo "$module was not built from $headers" >&2; exit 1; }
    if grep -qxF "$include_dir/curl/curl.h" "$SCRATCH/libcurl-$MINIMUM/module-strings.txt"; then
        echo "$module read the installed headers" >&2
        exit 1
    fi
done
echo "Herald builds against the $MINIMUM headers"

# 3. The guarded wrappers at run time, old branch and new branch, against the installed libcurl.
libs=$(pkg-config --libs libcurl)
"$CC" -std=gnu11 -Wall -Werror -Wno-unused-const-variable -I "$headers" -I Sources/CCurl \
    -o "$SCRATCH/libcurl-$MINIMUM/probe-old" .ci/libcurl-fallback-probe.c $libs
"$CC" -std=gnu11 -Wall -Werror -Wno-unused-const-variable -I "$include_dir" -I Sources/CCurl \
    -o "$SCRATCH/libcurl-$MINIMUM/probe-new" .ci/libcurl-fallback-probe.c $libs
"$SCRATCH/libcurl-$MINIMUM/probe-new" > "$SCRATCH/libcurl-$MINIMUM/probe-new.txt"
"$SCRATCH/libcurl-$MINIMUM/probe-old" > "$SCRATCH/libcurl-$MINIMUM/probe-old.txt"
diff -u "$SCRATCH/libcurl-$MINIMUM/probe-new.txt" "$SCRATCH/libcurl-$MINIMUM/probe-old.txt"
# And the answers themselves: http/https only never read a file; an unknown scheme is refused.
grep -qx 'protocols "http,https": set 0, file:///dev/null 1' "$SCRATCH/libcurl-$MINIMUM/probe-old.txt"
grep -qx 'protocols "file": set 0, file:///dev/null 0' "$SCRATCH/libcurl-$MINIMUM/probe-old.txt"
grep -qx 'protocols "nonsense": set 1, file:///dev/null -1' "$SCRATCH/libcurl-$MINIMUM/probe-old.txt"
echo "the $MINIMUM fallbacks answer as the $(pkg-config --modversion libcurl) options do:"
cat "$SCRATCH/libcurl-$MINIMUM/probe-old.txt"
