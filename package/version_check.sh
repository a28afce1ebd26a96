#!/usr/bin/env bash
# `stepcast --version`: "stepcast VERSION (commit C)" where C is the checkout's commit
# (git rev-parse --short=12 HEAD, "-dirty" allowed), "unknown" only outside a git checkout;
# then the data folder.
# usage: version_check.sh STEPCAST SOURCE_DIR VERSION
set -euo pipefail
stepcast="$1" source="$2" version="$3"
out="$("$stepcast" --version)"
echo "$out"
first="$(echo "$out" | head -n 1)"
if [ -e "$source/.git" ] && command -v git >/dev/null; then
  head="$(git -C "$source" rev-parse --short=12 HEAD)"
  case "$first" in
    "stepcast $version (commit $head)" | "stepcast $version (commit $head-dirty)") ;;
    *) echo "FAIL: expected \"stepcast $version (commit $head)\" (the checkout's HEAD; rebuild after a commit)" >&2; exit 1 ;;
  esac
else
  [ "$first" = "stepcast $version (commit unknown)" ] || { echo "FAIL: outside git, expected commit unknown" >&2; exit 1; }
fi
echo "$out" | sed -n 2p | grep -q '^data: /' || { echo "FAIL: no data folder line" >&2; exit 1; }
