#!/usr/bin/env bash
# Runs every example command line that `stepcast --help` and each command's --help show
# (the indented lines starting with "stepcast "), from the source tree, and fails if one
# does not exit 0. Keeps the help's examples honest.
#
# usage: run_cli_examples.sh STEPCAST_BINARY
set -u
binary="$1"
status=0
count=0
examples="$(for command in "" predict scale catalog; do
  "$binary" $command --help | sed -n 's/^  stepcast /stepcast /p'
done | sort -u)"
while IFS= read -r line; do
  [ -z "$line" ] && continue
  count=$((count + 1))
  read -r -a words <<<"${line#stepcast }"
  if "$binary" "${words[@]}" >/dev/null 2>"${TMPDIR:-/tmp}/stepcast-example.$$"; then
    echo "ok: $line"
  else
    echo "FAIL: $line (exit $?)" >&2
    cat "${TMPDIR:-/tmp}/stepcast-example.$$" >&2
    status=1
  fi
done <<<"$examples"
rm -f "${TMPDIR:-/tmp}/stepcast-example.$$"
if [ "$count" -eq 0 ]; then
  echo "FAIL: no examples found in the help texts" >&2
  exit 1
fi
exit "$status"
