#!/usr/bin/env bash
# Regenerates every accuracy figure in docs/accuracy.md from a checkout (no ../shared needed):
#   tests/accuracy.sh [BUILD_DIR]        (default: build; configured and built if needed)
# 1. "Accuracy against measured runs": tests/validation.py on data/validation/runs.jsonl.
# 2. "Collective model against measured NCCL runs": the table and worst errors printed by
#    tests/collective_measured_test.cpp from data/validation/collectives.jsonl.
# 3. The held-out files' summaries (Megatron-Core, torchtitan, NeMo): all-records rows.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build}"
if [[ ! -x "$build/cli/stepcast" || ! -x "$build/tests/integration_test" ]]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build" -j2 --target stepcast integration_test >/dev/null
fi

echo "## Accuracy against measured runs (data/validation/runs.jsonl)"
echo
python3 "$root/tests/validation.py" "$build/cli/stepcast" "$root/data/validation/runs.jsonl" readme
echo
echo "## Collective model against measured NCCL runs (data/validation/collectives.jsonl)"
echo
out="$("$build/tests/integration_test" -tc="collective model vs measured NCCL numbers" -s)"
# The test prints docs/model.md's markdown table (header and rule, then the rows: sorted here)
# and a closing line with the worst errors.
table="$(sed -n '/| system | shape |/,/rows compared/p' <<<"$out" | sed 's/^.*MESSAGE: //')"
head -n 2 <<<"$table"
sed '1,2d;$d' <<<"$table" | LC_ALL=C sort
echo
tail -n 1 <<<"$table"
echo
echo "## Held-out files (docs/accuracy.md; nothing is fitted on them)"
echo
for f in megatron-core-h100 torchtitan-h100 nemo-h100; do
  echo "$f.jsonl: leave one source out, then fit-free"
  "$build/cli/stepcast" validate "$root/data/validation/$f.jsonl" | grep -E '^  all ' || true
done
