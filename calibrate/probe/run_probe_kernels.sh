#!/usr/bin/env bash
# Single-GPU training probe runs for the kernel model: the catalog's small and
# medium models, eager and torch.compile'd, several micro-batches and sequence lengths, each
# record with its kernel time by category (train_probe.py --profile-steps). Appends to
# OUT/runs.jsonl; a run that does not fit prints "out of memory" and writes nothing.
#   calibrate/probe/run_probe_kernels.sh OUT MACHINE [quick|full]
#   quick: 3 runs (GPT-2 S eager and compiled, Llama-3.2-1B eager), about 2 minutes on an H100
#   full:  about 30 runs, about 12 minutes on an H100 (compiled runs pay torch.compile's warm-up)
set -euo pipefail
if [[ $# -lt 2 || "$1" == "--help" ]]; then
  sed -n '2,9p' "$0"; exit 2
fi
out=$1 machine=$2 mode=${3:-full}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
run() {  # model micro_batch seq_len kernels [extra train_probe options]
  local model=$1 mb=$2 seq=$3 kernels=$4
  shift 4
  echo "== $model mb=$mb seq=$seq $kernels $*" | tee -a "$out/probe.log"
  # python3 -m torch.distributed.run is torchrun, found wherever python3 holds PyTorch.
  python3 -m torch.distributed.run --standalone --nproc_per_node=1 "$here/train_probe.py" --model "$model" --micro-batch "$mb" \
    --seq-len "$seq" --strategy ddp --kernels "$kernels" --warmup 3 --steps 10 --profile-steps 2 \
    --out "$out/runs.jsonl" --machine "$machine" "$@" 2>&1 | tee -a "$out/probe.log" || true
}
if [[ "$mode" == quick ]]; then
  run gpt2 8 1024 eager
  run gpt2 8 1024 compiled
  run llama-3.2-1b 4 2048 eager
else
  for k in eager compiled; do
    for mb in 8 16; do run gpt2 "$mb" 1024 "$k"; done
    run gpt2 8 2048 "$k"
    for mb in 4 8; do run gpt2-medium "$mb" 1024 "$k"; done
    for mb in 4 8; do run gpt2-large "$mb" 1024 "$k"; done
    for mb in 2 4; do run gpt2-xl "$mb" 1024 "$k"; done
    run gpt2-xl 2 2048 "$k"
    for mb in 2 4; do run llama-3.2-1b "$mb" 2048 "$k"; done
    run llama-3.2-3b 1 2048 "$k"
    run llama-2-7b 2 2048 "$k" --lora-rank 16
  done
fi
records=0
if [[ -f "$out/runs.jsonl" ]]; then records=$(wc -l < "$out/runs.jsonl"); fi
echo "records: $records in $out/runs.jsonl"
