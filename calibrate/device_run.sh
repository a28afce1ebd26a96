#!/usr/bin/env bash
# One device call of a calibration on a lent GPU machine (calibrate/METHOD.md), staged under a
# deadline so that whatever finished comes back even when a stage runs long: every stage has
# its own timeout, and on exit DEST is tarred into $OUT/MACHINE[-PART].tgz (files more than two
# folders below $OUT do not come back from a device call).
#   calibrate/device_run.sh MACHINE PART [BUDGET_S]
# PART:
#   first   the microbenchmarks (stepcast-calibrate all: GEMMs bf16 and fp8, copies, launch;
#           torch_bench.py: attention, launch, memory-bound kernels), then 8 probe runs
#   second  9 more probe runs (sizes, LoRA, torch.compile)
# BUDGET_S: seconds for the whole part (default 540; give the call's timeout_s 40 more).
# The program: STEPCAST_CALIBRATE (a stepcast-calibrate built elsewhere with the machine's CUDA
# major version, carried with the call), else built here into build-calibrate/. STEPCAST_COMMIT
# names the commit when the copy has no git history (a device call's copy has none).
set -u
if [[ $# -lt 2 || "$1" == "--help" ]]; then
  sed -n '2,14p' "$0"; exit 2
fi
machine=$1 part=$2 budget=${3:-540}
[[ "$part" == first || "$part" == second ]] || { echo "device_run.sh: PART is first or second" >&2; exit 2; }
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
name=$machine; [[ "$part" == second ]] && name=$machine-2
dest=${TMPDIR:-/tmp}/stepcast-calibrate/$name
mkdir -p "$dest"
export PYTHONUNBUFFERED=1
deadline=$((SECONDS + budget))
left() { echo $((deadline - SECONDS)); }
cap() {  # a stage's timeout: its own, or what is left less 25 s for the tar
  local want=$1 l
  l=$(( $(left) - 25 ))
  (( l < want )) && want=$l
  (( want < 5 )) && want=5
  echo "$want"
}
finish() {
  echo "device_run.sh: finished after $((budget - $(left))) s"
  if [[ -n "${OUT:-}" ]]; then tar czf "$OUT/$name.tgz" -C "$(dirname "$dest")" "$name"; fi
  ls -la "$dest"
}
trap finish EXIT
exec > >(tee -a "$dest/job.log") 2>&1

{
  nvidia-smi -L
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl",
              ".".join(map(str, torch.cuda.nccl.version())), torch.cuda.get_device_name())'
  nvcc --version | tail -n 2
  echo "stepcast commit ${STEPCAST_COMMIT:-$(git -C "$repo" rev-parse HEAD 2>/dev/null || echo unknown)}"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem,power.limit --format=csv
  uname -r
} >"$dest/machine.txt" 2>&1
cat "$dest/machine.txt"
nvidia-smi -q >"$dest/nvidia-smi-q.txt" 2>&1

# The CUDA libraries of PyTorch's wheels and the toolkit, for a carried stepcast-calibrate.
libs=$(python3 - <<'PY'
import glob, os, site
dirs = set()
for root in glob.glob("/usr/local/cuda*") + [p + "/nvidia" for p in site.getsitepackages()]:
    for lib in ("libcublas.so.*", "libcublasLt.so.*", "libnccl.so.2", "libcudart.so.*"):
        dirs.update(os.path.dirname(p) for p in glob.glob(root + "/**/" + lib, recursive=True))
print(":".join(sorted(dirs)))
PY
)
export LD_LIBRARY_PATH=$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

program() {  # the stepcast-calibrate to run: the carried one if it runs here, else built here
  if [[ -n "${STEPCAST_CALIBRATE:-}" ]] && "$STEPCAST_CALIBRATE" machine --out /dev/null >/dev/null 2>&1; then
    echo "$STEPCAST_CALIBRATE"; return
  fi
  local nccl_root
  nccl_root="$(python3 -c 'import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])' 2>/dev/null || true)"
  timeout "$(cap 180)" bash -c "cmake -S '$repo' -B '$repo/build-calibrate' -DCMAKE_BUILD_TYPE=Release \
      -DSTEPCAST_CALIBRATE_ONLY=ON -DCMAKE_CUDA_ARCHITECTURES=90 ${nccl_root:+-DSTEPCAST_NCCL_ROOT=$nccl_root} &&
    cmake --build '$repo/build-calibrate' -j $(nproc)" >"$dest/build.log" 2>&1
  echo "$repo/build-calibrate/calibrate/stepcast-calibrate"
}

probe() {  # model micro_batch seq_len eager|compiled [train_probe options]
  local model=$1 mb=$2 seq=$3 kernels=$4
  shift 4
  if (( $(left) < 60 )); then echo "probe $model $kernels: skipped, $(left) s left"; return; fi
  # torch.compile recompiles during its first steps: the first H200 run's compiled gpt2-xl, after 3
  # warm-up steps, measured steps from 157 to 258 ms and a median above eager's.
  local warmup=3
  [[ "$kernels" == compiled ]] && warmup=8
  echo "== $model mb=$mb seq=$seq $kernels $* ($(left) s left)" >>"$dest/probe.log"
  timeout -k 5 "$(cap 110)" python3 -m torch.distributed.run --standalone --nproc_per_node=1 \
    "$here/probe/train_probe.py" --model "$model" --micro-batch "$mb" --seq-len "$seq" --strategy ddp \
    --kernels "$kernels" --warmup "$warmup" --steps 10 --profile-steps 2 --out "$dest/runs.jsonl" --machine "$machine" \
    "$@" >>"$dest/probe.log" 2>&1
  echo "probe $model mb=$mb seq=$seq $kernels: status $?, $(wc -l <"$dest/runs.jsonl" 2>/dev/null || echo 0) records"
}

if [[ "$part" == first ]]; then
  bin=$(program)
  echo "program: $bin" | tee -a "$dest/machine.txt"
  { echo "date_utc: $(date -u +%FT%TZ)"; echo "program: $bin"; env | grep -E '^(NCCL_|CUDA_|CUBLAS)' | sort; } \
    >"$dest/environment.txt"
  # Measured on an H200 (2026-11-27): 21 s; torch_bench.py 49 s; probe runs 18-70 s eager, 40-110 s compiled.
  timeout -k 5 "$(cap 170)" "$bin" all --out "$dest/raw.json" --gemm-dtypes bf16,fp8 --gemm-hidden 768,2048,4096,8192 \
    --gemm-tokens 2048,8192 --min-time-ms 20 --repeats 3 --warmup 3 --nccl-max-bytes 64M >"$dest/calibrate.log" 2>&1
  echo "stepcast-calibrate: status $?"; tail -n 2 "$dest/calibrate.log"
  timeout -k 5 "$(cap 150)" python3 "$here/bench/torch_bench.py" --raw "$dest/raw.json" \
    --sections attention,launch,memory_kernels,gemm_torch --min-ms 10 --repeats 3 >>"$dest/calibrate.log" 2>&1
  echo "torch_bench.py: status $?"; tail -n 1 "$dest/calibrate.log"
  probe gpt2 8 1024 eager
  probe llama-3.2-1b 4 2048 eager
  probe gpt2-xl 4 1024 eager
  probe gpt2-medium 8 1024 eager
  probe llama-3.2-3b 1 2048 eager
  probe gpt2-large 8 1024 eager
  probe gpt2 8 1024 compiled
  probe llama-3.2-1b 4 2048 compiled
else
  # The compiled runs first: on the H100 (2026-11-28) they came last and met their caps.
  probe gpt2-xl 4 1024 compiled
  probe llama-3.2-3b 1 2048 compiled
  probe gpt2 16 1024 eager
  probe gpt2 8 2048 eager
  probe gpt2-xl 2 2048 eager
  probe llama-3.2-1b 2 2048 eager
  probe llama-2-7b 2 2048 eager --lora-rank 16
  probe gpt2-medium 4 1024 eager
  probe gpt2-large 4 1024 eager
fi
