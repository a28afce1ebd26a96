#!/usr/bin/env bash
# The Debian package: `cpack -G DEB` from the build, unpacked into a clean prefix with
# `dpkg -x` (no root), the unpacked stepcast run from another folder on a bundled scenario;
# its Depends name the package of every shared library the binary loads (dpkg -S; itself or a virtual package it provides) and every
# one of them is installed here. Skipped (77) where dpkg-deb is missing.
#
# usage: deb_check.sh --build BUILD_DIR --cpack CPACK [--keep DIR]   (--keep: copy the .deb there)
set -euo pipefail

build="" cpack="cpack" keep=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --cpack) cpack="$2"; shift 2 ;;
    --keep) keep="$2"; shift 2 ;;
    *) echo "deb_check.sh: unknown option $1" >&2; exit 99 ;;
  esac
done
if ! command -v dpkg-deb >/dev/null || ! command -v dpkg >/dev/null; then
  echo "skipped: dpkg-deb is missing (not a Debian system): the .deb cannot be built or unpacked"
  exit 77
fi
unset STEPCAST_DATA_DIR STEPCAST_CATALOG_PATH

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$cpack" -G DEB --config "$build/CPackConfig.cmake" -B "$tmp/out" >"$tmp/cpack.log" 2>&1 ||
  { cat "$tmp/cpack.log" >&2; fail "cpack -G DEB"; }
deb="$(ls "$tmp"/out/stepcast_*.deb)"
echo "built $(basename "$deb") ($(du -k "$deb" | cut -f1) KiB)"
depends="$(dpkg-deb -f "$deb" Depends)"
echo "Depends: $depends"

dpkg -x "$deb" "$tmp/root"
bin="$tmp/root/usr/bin/stepcast"
[ -x "$bin" ] || fail "no usr/bin/stepcast in the package"

# Every shared library the binary loads comes from a package named in Depends, installed here.
names="$(echo "$depends" | tr ',|' '\n\n' | sed 's/(.*//; s/[[:space:]]//g' | grep -v '^$')"
# The libraries the binary itself needs (ELF NEEDED; ldd also lists their own dependencies,
# which their packages declare), where the loader finds them.
needed="$(objdump -p "$bin" | awk '$1 == "NEEDED" {print $2}')"
libs="$(ldd "$bin" | awk -v needed="$needed" 'BEGIN {n = split(needed, a, "\n"); for (i = 1; i <= n; i++) want[a[i]] = 1}
  /=> \// && ($1 in want) {print $3}')"
[ -n "$libs" ] || fail "ldd lists no shared library of $bin"
for lib in $libs; do
  owner="$(dpkg -S "$(readlink -f "$lib")" 2>/dev/null || dpkg -S "$lib" 2>/dev/null || true)"
  [ -n "$owner" ] || continue  # a library outside any package (e.g. a local build) is not ours to declare
  pkg="${owner%%:*}"
  # Named itself, or through a virtual package it provides (shlibs may name libboost-regex1.74.0-icu72,
  # which libboost-regex1.74.0 provides).
  named=""
  echo "$names" | grep -qxF "$pkg" && named=1
  for virtual in $(dpkg-query -W -f='${Provides}' "$pkg" 2>/dev/null | tr ',' '\n' | sed 's/(.*//; s/[[:space:]]//g'); do
    echo "$names" | grep -qxF "$virtual" && named=1
  done
  [ -n "$named" ] || fail "Depends lacks $pkg (for $lib)"
  dpkg-query -W -f='${Status}\n' "$pkg" 2>/dev/null | grep -q "install ok installed" || fail "$pkg is not installed"
done
echo "$names" | grep -q '^libfmt' || fail "Depends lacks libfmt"

mkdir "$tmp/work" && cd "$tmp/work"
cp "$tmp/root/usr/share/stepcast/scenarios/examples/llama3-8b-fsdp-16xh100.json" scenario.json
"$bin" --version | grep -qxF "data: $tmp/root/usr/share/stepcast" || { "$bin" --version >&2; fail "the unpacked binary reads another data folder"; }
"$bin" predict scenario.json >predict.txt 2>predict.err || { cat predict.err >&2; fail "predict"; }
grep -q "per step" predict.txt || fail "predict printed no step time"
"$bin" validate "$tmp/root/usr/share/stepcast/data/validation/torchtitan-h100.jsonl" >/dev/null ||
  fail "validate on the packaged measured runs"
[ -z "$keep" ] || cp "$deb" "$keep/"
echo "ok: $(basename "$deb") unpacked into a clean prefix runs predict and validate"
