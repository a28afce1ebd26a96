#!/usr/bin/env bash
# `cmake --install` into a fresh prefix, then the installed stepcast run from another folder
# with no STEPCAST_DATA_DIR: `predict` on a bundled scenario copied out of the prefix, the
# data folder `--version` names inside the prefix, the same after moving the prefix, and, with
# the prefix's data removed, a clear error rather than the source tree (the installed binary
# has no way back to it). The Python module the same way, when one was built (--python).
#
# usage: install_check.sh --build BUILD_DIR --cmake CMAKE [--python PYTHON3]
set -euo pipefail

build="" cmake="cmake" python=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --cmake) cmake="$2"; shift 2 ;;
    --python) python="$2"; shift 2 ;;
    *) echo "install_check.sh: unknown option $1" >&2; exit 99 ;;
  esac
done
unset STEPCAST_DATA_DIR STEPCAST_CATALOG_PATH

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$cmake" --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log" || { cat "$tmp/install.log" >&2; fail "cmake --install"; }
[ -x "$tmp/prefix/bin/stepcast" ] || fail "no bin/stepcast in the prefix"
for f in topologies/catalog/gpus.json model/catalog/models.json model/catalog/in_step.json \
         scenarios/examples/llama3-8b-fsdp-16xh100.json data/validation/runs.jsonl; do
  [ -f "$tmp/prefix/share/stepcast/$f" ] || fail "no share/stepcast/$f in the prefix"
done

# Run from a folder of its own, the scenario copied beside it.
check_prefix() {
  local prefix="$1"
  mkdir -p "$tmp/work" && cd "$tmp/work"
  cp "$prefix/share/stepcast/scenarios/examples/llama3-8b-fsdp-16xh100.json" scenario.json
  "$prefix/bin/stepcast" --version >version.txt || fail "--version"
  grep -qxF "data: $prefix/share/stepcast" version.txt || { cat version.txt >&2; fail "--version names another data folder than $prefix/share/stepcast"; }
  "$prefix/bin/stepcast" predict scenario.json >predict.txt 2>predict.err || { cat predict.err >&2; fail "predict from $prefix"; }
  grep -q "per step" predict.txt || fail "predict printed no step time"
  # The HTML page needs nothing beside the binary (its page and library are compiled in).
  if "$prefix/bin/stepcast" predict scenario.json --html page.html >/dev/null 2>html.err; then
    grep -q "<html" page.html || fail "--html wrote no page"
  else
    grep -q "npm ci" html.err || { cat html.err >&2; fail "--html failed for another reason than a build without the charting library"; }
  fi
  echo "ok: installed stepcast predicts from $prefix (data: $prefix/share/stepcast)"
}

check_prefix "$tmp/prefix"
mv "$tmp/prefix" "$tmp/moved"
check_prefix "$tmp/moved"

if [ -n "$python" ]; then
  module_dir="$tmp/moved/lib/python3/dist-packages"
  ls "$module_dir"/stepcast*.so >/dev/null 2>&1 || fail "no Python module in $module_dir"
  (cd "$tmp/work" && PYTHONPATH="$module_dir" "$python" -B -c '
import stepcast, sys
p = stepcast.predict("scenario.json")
assert p["step_time_s"] > 0, p
assert stepcast.__file__.startswith(sys.argv[1]), stepcast.__file__
print("ok: installed Python module predicts", round(p["step_time_s"], 3), "s per step")
' "$module_dir") || fail "the installed Python module"
fi

# Without its data the installed binary says so (exit 2); it never reads the source tree.
rm -rf "$tmp/moved/share/stepcast"
cd "$tmp/work"
set +e
"$tmp/moved/bin/stepcast" predict scenario.json >/dev/null 2>no-data.err
rc=$?
set -e
[ "$rc" -eq 2 ] || { cat no-data.err >&2; fail "without share/stepcast: exit $rc, expected 2"; }
grep -q "stepcast's data (catalogs) not found" no-data.err || { cat no-data.err >&2; fail "without share/stepcast: no clear error"; }
echo "ok: without share/stepcast the installed binary stops (exit 2), never reading the source tree"
