#!/usr/bin/env bash
# Runs one command-line case of `stepcast` and checks what came out.
#
# usage: run_cli_case.sh [--rc N] [--stderr TEXT]... [--stdout TEXT]... [--json]
#                        [--json-keys k1,k2,...] [--file-json PATH [--file-json-keys L]]
#                        -- COMMAND [ARGS...]
#
#   --rc N          expected exit status (default 0)
#   --stderr TEXT   stderr must contain TEXT (fixed string; repeatable)
#   --stdout TEXT   stdout must contain TEXT (fixed string; repeatable)
#   --json          stdout must be one valid JSON document (checked with python3)
#   --json-keys L   stdout must be a JSON object with every top-level key in the
#                   comma-separated list L (implies --json)
#   --file-json P   the command must have written P, one valid JSON document (a file the
#                   command writes besides stdout, e.g. predict --trace P)
#   --file-json-keys L
#                   P must be a JSON object with every top-level key in L
#
# "@TMP@" in P and in the command's arguments stands for a fresh temporary directory,
# removed afterwards.
#
# Whatever the expected status, a crash fails the case: a status above 125 (a signal, e.g.
# abort), or "terminate called" / "Aborted" / "Segmentation fault" on stderr. An expected
# error (status 1 or 2) must be reported as one `stepcast: error: ...` line.
set -u

expected_rc=0
stderr_fragments=()
stdout_fragments=()
want_json=0
json_keys=""
file_json=""
file_json_keys=""

while [ $# -gt 0 ]; do
  case "$1" in
    --rc) expected_rc="$2"; shift 2 ;;
    --stderr) stderr_fragments+=("$2"); shift 2 ;;
    --stdout) stdout_fragments+=("$2"); shift 2 ;;
    --json) want_json=1; shift ;;
    --json-keys) want_json=1; json_keys="$2"; shift 2 ;;
    --file-json) file_json="$2"; shift 2 ;;
    --file-json-keys) file_json_keys="$2"; shift 2 ;;
    --) shift; break ;;
    *) echo "run_cli_case.sh: unknown option $1" >&2; exit 99 ;;
  esac
done
if [ $# -eq 0 ]; then
  echo "run_cli_case.sh: no command after --" >&2
  exit 99
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/files"
command_line=()
for word in "$@"; do command_line+=("${word//@TMP@/$tmp/files}"); done
file_json="${file_json//@TMP@/$tmp/files}"
set -- "${command_line[@]}"

"$@" >"$tmp/stdout" 2>"$tmp/stderr"
rc=$?

failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

if [ "$rc" -gt 125 ]; then
  fail "the command crashed (exit status $rc)"
elif [ "$rc" -ne "$expected_rc" ]; then
  fail "exit status $rc, expected $expected_rc"
fi

for pattern in "terminate called" "Aborted" "Segmentation fault"; do
  if grep -qF -- "$pattern" "$tmp/stderr"; then fail "stderr shows a crash: \"$pattern\""; fi
done

if { [ "$expected_rc" -eq 1 ] || [ "$expected_rc" -eq 2 ]; } && ! grep -q '^stepcast: error: ' "$tmp/stderr"; then
  fail "stderr has no 'stepcast: error: ' line"
fi

for fragment in "${stderr_fragments[@]+"${stderr_fragments[@]}"}"; do
  grep -qF -- "$fragment" "$tmp/stderr" || fail "stderr lacks \"$fragment\""
done
for fragment in "${stdout_fragments[@]+"${stdout_fragments[@]}"}"; do
  grep -qF -- "$fragment" "$tmp/stdout" || fail "stdout lacks \"$fragment\""
done

if [ "$want_json" -eq 1 ]; then
  if ! command -v python3 >/dev/null 2>&1; then
    fail "python3 is needed to check the JSON output"
  elif ! python3 - "$json_keys" "$tmp/stdout" <<'EOF'
import json, sys
keys = [k for k in sys.argv[1].split(",") if k]
with open(sys.argv[2]) as f:
    try:
        doc = json.load(f)
    except ValueError as e:
        sys.exit(f"stdout is not valid JSON: {e}")
if keys:
    if not isinstance(doc, dict):
        sys.exit("stdout is JSON but not an object")
    missing = [k for k in keys if k not in doc]
    if missing:
        sys.exit("JSON lacks top-level keys: " + ", ".join(missing))
EOF
  then
    fail "JSON check"
  fi
fi

if [ -n "$file_json" ]; then
  if [ ! -f "$file_json" ]; then
    fail "the command wrote no file $file_json"
  elif ! command -v python3 >/dev/null 2>&1; then
    fail "python3 is needed to check the JSON file"
  elif ! python3 -m json.tool "$file_json" >/dev/null; then
    fail "$file_json is not valid JSON (python3 -m json.tool)"
  elif ! python3 - "$file_json_keys" "$file_json" <<'EOF'
import json, sys
keys = [k for k in sys.argv[1].split(",") if k]
with open(sys.argv[2]) as f:
    doc = json.load(f)
if keys:
    if not isinstance(doc, dict):
        sys.exit(f"{sys.argv[2]} is JSON but not an object")
    missing = [k for k in keys if k not in doc]
    if missing:
        sys.exit(f"{sys.argv[2]} lacks top-level keys: " + ", ".join(missing))
EOF
  then
    fail "JSON file check"
  fi
fi

if [ "$failures" -ne 0 ]; then
  echo "---- command: $*" >&2
  echo "---- exit status: $rc" >&2
  echo "---- stderr:" >&2
  cat "$tmp/stderr" >&2
  echo "---- stdout (first 40 lines):" >&2
  head -n 40 "$tmp/stdout" >&2
  exit 1
fi
echo "ok: $* (exit $rc)"
exit 0
