#!/usr/bin/env bash
# One stage of a calibration on a lent GPU machine, sized for a device call of at most
# 10 minutes (see calibrate/METHOD.md). Writes under DEST (default $OUT/calibrate/data/MACHINE,
# so that what the call leaves under $OUT comes back).
#   calibrate/device_run.sh MACHINE STAGE [DEST]
# STAGE:
#   build    configure and build stepcast-calibrate alone (-DSTEPCAST_CALIBRATE_ONLY=ON) into
#            build-calibrate/, with NCCL from the CUDA Toolkit or PyTorch's nvidia-nccl wheel
#   smoke    build if needed, then everything once at its smallest (--quick, --probe quick) into DEST/smoke
#   sweep    the full microbenchmarks for the kernel model (C++ and PyTorch) into DEST/raw.json
#   probe    the full single-GPU training probe into DEST/runs.jsonl
#   first    build + smoke + sweep, the first call; probe is the second
set -euo pipefail
if [[ $# -lt 2 || "$1" == "--help" ]]; then
  sed -n '2,14p' "$0"; exit 2
fi
machine=$1 stage=$2
dest=${3:-${OUT:-results}/calibrate/data/$machine}
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
mkdir -p "$dest"
export PYTHONUNBUFFERED=1

build() {
  if [[ -x "$repo/build-calibrate/calibrate/stepcast-calibrate" ]]; then return 0; fi
  local nccl_root
  nccl_root="$(python3 -c 'import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])' 2>/dev/null || true)"
  local start=$SECONDS
  { cmake -S "$repo" -B "$repo/build-calibrate" -DCMAKE_BUILD_TYPE=Release -DSTEPCAST_CALIBRATE_ONLY=ON \
      -DCMAKE_CUDA_ARCHITECTURES=90 ${nccl_root:+-DSTEPCAST_NCCL_ROOT="$nccl_root"} &&
    cmake --build "$repo/build-calibrate" -j "$(nproc)"; } >"$dest/build.log" 2>&1 ||
    { tail -n 30 "$dest/build.log"; echo "device_run.sh: build failed" >&2; return 1; }
  echo "device_run.sh: built in $((SECONDS - start)) s"
}

describe() {  # the machine, once per DEST
  {
    nvidia-smi -L 2>&1 || true
    python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl",
                ".".join(map(str, torch.cuda.nccl.version())), torch.cuda.get_device_name())' 2>&1 || true
    nvcc --version 2>&1 | tail -n 2 || true
    echo "stepcast commit $(git -C "$repo" rev-parse HEAD 2>/dev/null || echo 'not known (no git history in this copy)')"
  } >"$dest/machine.txt"
}

# The kernel model's sweep: bf16 (the training dtype), fp16 and fp8 (fp8 training), the
# layer shapes of four hidden sizes at two token counts, and the wave and square shapes.
sweep_options=(-- --gemm-dtypes bf16,fp16,fp8 --gemm-hidden 768,2048,4096,8192 --gemm-tokens 2048,8192
               --nccl-max-bytes 256M)

case "$stage" in
  build) build ;;
  smoke) build && describe && "$here/run_calibration.sh" --quick --torch --probe quick --machine "$machine" \
           --build-dir "$repo/build-calibrate" "$dest/smoke" ;;
  sweep) build && describe && "$here/run_calibration.sh" --torch --machine "$machine" \
           --build-dir "$repo/build-calibrate" "$dest" "${sweep_options[@]}" ;;
  probe) describe && "$here/probe/run_probe_kernels.sh" "$dest" "$machine" full ;;
  first) build; describe
         # A smoke run with failed rows (status 3) still lets the sweep run; read both logs.
         "$here/run_calibration.sh" --quick --torch --probe quick --machine "$machine" \
           --build-dir "$repo/build-calibrate" "$dest/smoke" || echo "device_run.sh: smoke exited with status $?"
         "$here/run_calibration.sh" --torch --machine "$machine" --build-dir "$repo/build-calibrate" "$dest" \
           "${sweep_options[@]}" ;;
  *) echo "device_run.sh: unknown stage $stage (build, smoke, sweep, probe, first)" >&2; exit 2 ;;
esac
