#!/usr/bin/env bash
# Runs the training probe over models, batch sizes and strategies that fit the GPUs of one
# node, appending one measured-run record per run to OUT/runs.jsonl (runs that do not fit
# print "out of memory" and write nothing).
#   calibrate/probe/run_probe_sweep.sh OUT MACHINE [GPUS]
# e.g. calibrate/probe/run_probe_sweep.sh calibrate/data/h100-x1 h100-x1 1
set -euo pipefail
if [[ $# -lt 2 || "$1" == "--help" ]]; then
  sed -n '2,6p' "$0"; exit 2
fi
out=$1 machine=$2 gpus=${3:-1}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
strategies=(ddp fsdp_full_shard)
[[ $gpus -gt 1 ]] && strategies+=(fsdp_shard_grad_op)
python3 -c "import deepspeed" 2>/dev/null && strategies+=(zero2 zero3)
run() {  # model micro_batch seq_len recompute strategy
  torchrun --standalone --nproc_per_node="$gpus" "$here/train_probe.py" --model "$1" --micro-batch "$2" \
    --seq-len "$3" --recompute "$4" --strategy "$5" --out "$out/runs.jsonl" --machine "$machine" \
    --intra-node nvswitch 2>&1 | tee -a "$out/probe.log" || true
}
for s in "${strategies[@]}"; do
  for mb in 4 8 16; do run gpt2 "$mb" 1024 none "$s"; done
  for mb in 4 8; do run gpt2-medium "$mb" 1024 none "$s"; done
  for mb in 2 4 8; do run gpt2-large "$mb" 1024 none "$s"; done
  for mb in 2 4; do run gpt2-xl "$mb" 1024 none "$s"; done
  run gpt2-xl 8 1024 full "$s"
  for mb in 4 8; do run mpt-1b "$mb" 2048 none "$s"; done
  run mpt-3b 4 2048 full "$s"
done
echo "records: $(wc -l < "$out/runs.jsonl") in $out/runs.jsonl"
