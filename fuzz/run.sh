#!/usr/bin/env bash
# Hostile-input runs, with clang and its sanitizers; paths relative to the repository.
#
#   fuzz/run.sh [SECONDS_PER_HARNESS] [HARNESS...]
#       Builds the libFuzzer harnesses of fuzz/ into build-fuzz/ (-DSTEPCAST_FUZZ=ON, Release
#       with -g; asserts stay on) and runs each harness (all five by default: scenario,
#       measured_run, raw_calibration, hardware, catalog) for SECONDS_PER_HARNESS (default 30),
#       one after the other. The corpus of each starts from the repository's own files, copied
#       into build-fuzz/corpus/<harness>/ at every run (what the fuzzer adds there is kept
#       between runs); crashes, timeouts and out-of-memory inputs are written to
#       build-fuzz/crashes/<harness>/ (emptied first) and the output to build-fuzz/logs/.
#       Exits 1 when any harness found something.
#   fuzz/run.sh asan
#       Builds everything with -DSTEPCAST_SANITIZE=ON (ASan + UBSan, any undefined behaviour
#       aborts) into build-asan/ and runs the ctest suite there (all but the tests labelled
#       slow).
#
# Environment: CXX (default clang++-14), JOBS (build jobs, default 2), FUZZ_FLAGS (more
# libFuzzer flags, e.g. "-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1" to go
# on after a finding and collect several).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"

cxx="${CXX:-clang++-14}"
jobs="${JOBS:-2}"
max_len=65536  # fuzz/fuzz_input.hpp: kMaxInputBytes
all_harnesses=(scenario measured_run raw_calibration hardware catalog)

# UBSan prints a stack only when asked; the sanitizers symbolize with llvm-symbolizer from the
# PATH, or the versioned one of Debian's llvm-14 when the unversioned link is missing.
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
if ! command -v llvm-symbolizer >/dev/null && command -v llvm-symbolizer-14 >/dev/null; then
  export ASAN_SYMBOLIZER_PATH="$(command -v llvm-symbolizer-14)"
fi

if [ "${1:-}" = "asan" ]; then
  start=$SECONDS
  cmake -S . -B build-asan -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_FLAGS_RELEASE="-O1 -g" -DSTEPCAST_SANITIZE=ON >/dev/null
  cmake --build build-asan -j"$jobs"
  built=$SECONDS
  # Tests labelled slow re-run code the others cover, at 10x the cost under the sanitizers.
  ctest --test-dir build-asan --output-on-failure -j"$jobs" -LE slow
  echo "asan: build $((built - start)) s, ctest $((SECONDS - built)) s"
  exit 0
fi

seconds="${1:-30}"
shift || true
harnesses=("$@")
[ "${#harnesses[@]}" -gt 0 ] || harnesses=("${all_harnesses[@]}")

start=$SECONDS
cmake -S . -B build-fuzz -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_FLAGS_RELEASE="-O2 -g" -DSTEPCAST_FUZZ=ON >/dev/null
cmake --build build-fuzz -j"$jobs" --target stepcast_fuzzers
echo "fuzz: build $((SECONDS - start)) s"

# copy_seeds DIR FILE...: the files that exist, under their own names.
copy_seeds() {
  local dir=$1 f
  shift
  for f in "$@"; do
    [ -f "$f" ] && cp "$f" "$dir/seed-$(basename "$f")"
  done
  return 0
}

# split_records DIR FILE...: every non-blank line of each .jsonl file as a seed of its own.
split_records() {
  local dir=$1 f line n
  shift
  for f in "$@"; do
    [ -f "$f" ] || continue
    n=0
    while IFS= read -r line || [ -n "$line" ]; do
      n=$((n + 1))
      [[ "$line" =~ ^[[:space:]]*$ ]] && continue
      printf '%s\n' "$line" >"$dir/seed-$(basename "$f" .jsonl)-$n.jsonl"
    done <"$f"
  done
}

# seed HARNESS DIR: the repository's inputs of that reader.
seed() {
  local dir=$2
  case $1 in
    scenario)
      copy_seeds "$dir" scenarios/seeds/*.json scenarios/bench/*.json tests/data/good/*.json tests/data/bad/*.json
      # Only two seeds have an inline model (a GPT): more kinds, from catalog entries inlined.
      if command -v python3 >/dev/null; then
        python3 - "$dir" <<'EOF' || true
import json, os, sys
models = {m["name"]: m for m in json.load(open(os.path.join("model", "catalog", "models.json")))["models"]}
for seed, model in [("tests/data/good/minimal.json", "gpt2"), ("tests/data/good/straggler.json", "llama-2-7b"),
                    ("scenarios/seeds/falcon7b-lora-zero3-8gpu.json", "falcon-7b"),
                    ("tests/data/good/minimal.json", "bert-large"), ("tests/data/good/minimal.json", "mpt-7b")]:
    if not os.path.exists(seed) or model not in models:
        continue
    scenario = json.load(open(seed))
    scenario["model"] = models[model]
    with open(os.path.join(sys.argv[1], f"seed-inline-{model}-{os.path.basename(seed)}"), "w") as f:
        json.dump(scenario, f, indent=2)
EOF
      fi ;;
    measured_run)
      split_records "$dir" data/validation/runs.jsonl data/validation/collectives.jsonl tests/data/good/*.jsonl \
        tests/data/bad/*.jsonl
      # Pipelines of more than 1,024 stage x micro-batch slots (BigScience's 10 stages x
      # 2,048 micro-batches) take seconds to simulate even optimised, and longer than the
      # fuzzer's 10 s timeout under its instrumentation: they stay out of the seeds (the
      # validation ctest predicts them); what the fuzzer explores is the reading of records.
      if command -v python3 >/dev/null; then
        python3 - "$dir" <<'EOF' || true
import glob, json, os, sys
for path in glob.glob(os.path.join(sys.argv[1], "seed-runs-*.jsonl")):
    try:
        r = json.load(open(path))
        pp, tp = r["strategy"].get("pp") or 1, r["strategy"].get("tp") or 1
        b, gpus = r["batch"], r["hardware"].get("gpus") or 1
        dp = max(1, gpus // (tp * pp))
        micro = b.get("grad_accum") or (b.get("global_batch") or 0) // max(1, (b.get("micro_batch") or 1) * dp)
        if pp > 1 and pp * micro > 1024:
            os.remove(path)
    except (ValueError, KeyError, TypeError, AttributeError):
        pass
EOF
      fi
      # Two records as calibrate/probe/record.py writes them (its test's example).
      if command -v python3 >/dev/null; then
        python3 - "$dir" <<'EOF' || true
import os, sys
sys.path.insert(0, os.path.join("calibrate", "probe"))
import record, test_record
for i, over in enumerate([{}, {"strategy": "ddp", "gpus": 8, "gpus_per_node": 8, "run_tag": "t1"}]):
    with open(os.path.join(sys.argv[1], f"seed-probe-{i}.jsonl"), "w") as f:
        f.write(record.dumps(test_record.example(**over)) + "\n")
EOF
      fi ;;
    raw_calibration)
      copy_seeds "$dir" calibrate/fit/testdata/*.json ;;
    hardware)
      copy_seeds "$dir" tests/data/good/synthetic_hardware.json ;;
    catalog)
      copy_seeds "$dir" topologies/catalog/*.json model/catalog/*.json ;;
    *)
      echo "fuzz/run.sh: unknown harness $1 (known: ${all_harnesses[*]})" >&2
      exit 2 ;;
  esac
}

found=()
summary=()
for h in "${harnesses[@]}"; do
  corpus="build-fuzz/corpus/$h"
  crashes="build-fuzz/crashes/$h"
  log="build-fuzz/logs/$h.log"
  mkdir -p "$corpus" "$crashes" build-fuzz/logs
  rm -f "$crashes"/*
  seed "$h" "$corpus"
  echo "fuzz: $h for ${seconds} s ($(find "$corpus" -type f | wc -l) inputs in the corpus)"
  rc=0
  # shellcheck disable=SC2086  # FUZZ_FLAGS is a list of flags
  "build-fuzz/fuzz/fuzz_$h" "$corpus" -dict=fuzz/json.dict -max_len=$max_len -timeout=10 \
    -rss_limit_mb=2048 -max_total_time="$seconds" -print_final_stats=1 \
    -artifact_prefix="$root/$crashes/" ${FUZZ_FLAGS:-} >"$log" 2>&1 || rc=$?
  execs=$( (grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" || true) | awk '{s += $2} END {print s + 0}')
  # -fork prints no final stats: its last status line ("#55430: cov: ...") counts them.
  [ "$execs" -gt 0 ] || execs=$( (grep -oE '^#[0-9]+' "$log" || echo 0) | tail -n 1 | tr -d '#')
  artifacts=$(find "$crashes" -type f | wc -l)
  summary+=("$(printf '%-16s %10s execs  %3s finding(s)  rc %s' "$h" "$execs" "$artifacts" "$rc")")
  if [ "$rc" -ne 0 ] || [ "$artifacts" -gt 0 ]; then
    found+=("$h")
    grep -E -m3 'ERROR: |runtime error:|terminate called|stepcast fuzz finding' "$log" || tail -n 20 "$log"
  fi
done

printf '%s\n' "${summary[@]}"
echo "fuzz: $((SECONDS - start)) s in all"
if [ "${#found[@]}" -gt 0 ]; then
  echo "fuzz: findings in ${found[*]}: see build-fuzz/crashes/ and build-fuzz/logs/" >&2
  exit 1
fi
