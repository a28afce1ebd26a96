#!/usr/bin/env bash
# Runs stepcast's calibration microbenchmarks and writes OUT_DIR/raw.json for `stepcast fit`.
# See docs/calibration.md and --help.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: calibrate/run_calibration.sh [options] OUT_DIR [-- stepcast-calibrate options]

Runs the calibration microbenchmarks on this node (GEMM sweep, copy bandwidth, NCCL
collectives over all visible GPUs, machine description) and writes:
  OUT_DIR/raw.json            the raw measurements (format stepcast-calibrate-raw-v1)
  OUT_DIR/calibrate.log       progress: one line per measured row, with units
  OUT_DIR/environment.txt     date, host, kernel, NCCL_* / CUDA_* variables, build used
  OUT_DIR/nvidia-smi-q.txt    `nvidia-smi -q` (clocks, power limits, ECC, PCIe links)
  OUT_DIR/build.log           only when this script had to build the programs
With --torch, calibrate/bench/torch_bench.py adds to raw.json what only PyTorch runs: attention
kernels (SDPA backends, flash_attn), memory-bound kernels eager and compiled, the eager CPU
cost per op, and a GEMM beside an all-reduce (two GPUs or more). With --probe, the single-GPU
training probe (calibrate/probe/run_probe_kernels.sh) writes OUT_DIR/runs.jsonl and
OUT_DIR/probe.log: measured steps with their kernel time by category, for `stepcast validate`.
Then, on a machine with the full stepcast build:
  build/cli/stepcast fit OUT_DIR/raw.json -o hardware.json

The programs are taken from build/calibrate/ (the normal build) or BUILD_DIR/calibrate/; if
neither has them, the script configures and builds them into BUILD_DIR with
-DSTEPCAST_CALIBRATE_ONLY=ON, which needs only CMake, the CUDA Toolkit (nvcc, cuBLAS) and NCCL.

options:
  --quick              smoke run (a minute or two): checks that everything works; not for fitting
  --torch              also run the PyTorch kernel microbenchmarks into raw.json (needs torch)
  --probe MODE         also run the single-GPU training probe: quick (3 runs) or full (~30 runs)
  --machine NAME       the machine's name in the probe's records (default: the host name)
  --binary PATH        the stepcast-calibrate (or stepcast-calibrate-mpi) program to run
  --build-dir DIR      where to build when needed (default: build-calibrate in the repository)
  --nccl-root DIR      NCCL outside the CUDA Toolkit, e.g. PyTorch's pip wheel:
                       $(python3 -c 'import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])')
  --launcher "CMD"     run stepcast-calibrate-mpi (one rank per GPU) under CMD, e.g. mpirun;
                       CMD is split on spaces. Needs MPI where the programs are built.
  -h, --help           this text
Anything after -- goes to stepcast-calibrate (its own help: stepcast-calibrate help), e.g.
  -- --gemm-dtypes bf16,fp8 --nccl-max-bytes 4G
NCCL_ALGO, NCCL_PROTO and other NCCL_* variables are passed through and recorded.

examples:
  # one node, every visible GPU, one process
  calibrate/run_calibration.sh results/h100-node

  # one node, one MPI rank per GPU (lower small-message latency than one process)
  calibrate/run_calibration.sh --launcher "mpirun -np 8" results/h100-node-mpi

  # two nodes of 8 GPUs with Open MPI (OUT_DIR must be writable on rank 0's node, e.g. on a
  # shared file system; -x passes NCCL settings to every rank)
  calibrate/run_calibration.sh --launcher "mpirun -np 16 -N 8 --hostfile hosts -x NCCL_IB_HCA -x NCCL_SOCKET_IFNAME" \
      results/2x8-h100 -- --nccl-max-bytes 4G

  # the same under Slurm (MPI built with PMI support), from inside an allocation
  calibrate/run_calibration.sh --launcher "srun -N 2 --ntasks-per-node=8 --gpus-per-node=8" results/2x8-h100

  # or without this script, straight from a build directory
  mpirun -np 16 -N 8 build-calibrate/calibrate/stepcast-calibrate-mpi all --out results/raw.json

exit status: 0 every row measured and checked ok; 1 an error stopped a part (see the log and
machine.notes in raw.json); 2 bad usage; 3 some rows failed their correctness check.
EOF
}

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
binary=""
build_dir="$repo/build-calibrate"
launcher=""
nccl_root=""
quick=()
torch_bench=0
probe=""
machine_name="$(hostname)"
out_dir=""
extra=()

while [[ $# -gt 0 ]]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --quick) quick=(--quick); shift ;;
    --torch) torch_bench=1; shift ;;
    --probe) probe="${2:?--probe needs quick or full}"; shift 2
             [[ "$probe" == quick || "$probe" == full ]] || { echo "run_calibration.sh: --probe quick or full" >&2; exit 2; } ;;
    --machine) machine_name="${2:?--machine needs a name}"; shift 2 ;;
    --binary) binary="${2:?--binary needs a path}"; shift 2 ;;
    --build-dir) build_dir="${2:?--build-dir needs a directory}"; shift 2 ;;
    --nccl-root) nccl_root="${2:?--nccl-root needs a directory}"; shift 2 ;;
    --launcher) launcher="${2:?--launcher needs a command}"; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -*) echo "run_calibration.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *)
      if [[ -n "$out_dir" ]]; then echo "run_calibration.sh: one OUT_DIR only (see --help)" >&2; exit 2; fi
      out_dir="$1"; shift ;;
  esac
done
if [[ -z "$out_dir" ]]; then
  echo "run_calibration.sh: missing OUT_DIR (see --help)" >&2
  exit 2
fi
mkdir -p "$out_dir"
out_dir="$(cd "$out_dir" && pwd)"

program=stepcast-calibrate
if [[ -n "$launcher" ]]; then program=stepcast-calibrate-mpi; fi

if [[ -z "$binary" ]]; then
  for candidate in "$repo/build/calibrate/$program" "$build_dir/calibrate/$program"; do
    if [[ -x "$candidate" ]]; then binary="$candidate"; break; fi
  done
fi
if [[ -z "$binary" ]]; then
  echo "run_calibration.sh: building $program into $build_dir (log: $out_dir/build.log)" >&2
  configure=(cmake -S "$repo" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DSTEPCAST_CALIBRATE_ONLY=ON)
  if [[ -n "$nccl_root" ]]; then configure+=("-DSTEPCAST_NCCL_ROOT=$nccl_root"); fi
  jobs="$(nproc 2>/dev/null || echo 4)"
  if ! { "${configure[@]}" && cmake --build "$build_dir" -j "$jobs"; } >"$out_dir/build.log" 2>&1; then
    tail -n 30 "$out_dir/build.log" >&2
    echo "run_calibration.sh: the build failed (full log: $out_dir/build.log)" >&2
    exit 1
  fi
  binary="$build_dir/calibrate/$program"
  if [[ ! -x "$binary" ]]; then
    grep -E "stepcast: calibrate/" "$out_dir/build.log" >&2 || true
    echo "run_calibration.sh: $program was not built: calibrate/ needs the CUDA Toolkit (nvcc, cuBLAS) and" \
      "NCCL (--nccl-root), and stepcast-calibrate-mpi also MPI" >&2
    exit 1
  fi
fi

{
  echo "date_utc: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "hostname: $(hostname)"
  echo "kernel: $(uname -a)"
  echo "program: $binary"
  echo "launcher: ${launcher:-none}"
  echo "repository_commit: $(git -C "$repo" rev-parse HEAD 2>/dev/null || echo unknown)"
  echo "environment (NCCL_*, CUDA_*, CUBLAS*, OMPI_*, SLURM_* variables):"
  env | grep -E '^(NCCL_|CUDA_|CUBLAS|OMPI_|SLURM_)' | sort || true
} >"$out_dir/environment.txt"
nvidia-smi -q >"$out_dir/nvidia-smi-q.txt" 2>&1 || echo "nvidia-smi -q failed (see the file)" >&2

# Word splitting of $launcher is intended: it is a command line.
# shellcheck disable=SC2206
# The ${a[@]+"${a[@]}"} form keeps empty arrays legal under set -u in bash before 4.4.
command_line=($launcher "$binary" all --out "$out_dir/raw.json" ${quick[@]+"${quick[@]}"} ${extra[@]+"${extra[@]}"})
echo "running: ${command_line[*]}" | tee "$out_dir/calibrate.log"
set +e
"${command_line[@]}" 2>&1 | tee -a "$out_dir/calibrate.log"
status=${PIPESTATUS[0]}
set -e

case "$status" in
  0) echo "run_calibration.sh: done: $out_dir/raw.json" ;;
  3) echo "run_calibration.sh: $out_dir/raw.json written, but some rows failed their correctness check" \
       "(\"check\": \"failed\"); see $out_dir/calibrate.log" >&2 ;;
  *) echo "run_calibration.sh: stepcast-calibrate exited with status $status; whatever was measured is in" \
       "$out_dir/raw.json, the reason in $out_dir/calibrate.log" >&2 ;;
esac
if [[ "$torch_bench" == 1 ]]; then
  echo "running: python3 $here/bench/torch_bench.py --raw $out_dir/raw.json ${quick[*]+${quick[*]}}" | tee -a "$out_dir/calibrate.log"
  set +e
  PYTHONUNBUFFERED=1 python3 "$here/bench/torch_bench.py" --raw "$out_dir/raw.json" ${quick[@]+"${quick[@]}"} 2>&1 |
    tee -a "$out_dir/calibrate.log"
  torch_status=${PIPESTATUS[0]}
  set -e
  if [[ "$torch_status" != 0 ]]; then
    echo "run_calibration.sh: torch_bench.py exited with status $torch_status (see $out_dir/calibrate.log)" >&2
    [[ "$status" == 0 ]] && status=$torch_status
  fi
fi
if [[ -n "$probe" ]]; then
  PYTHONUNBUFFERED=1 "$here/probe/run_probe_kernels.sh" "$out_dir" "$machine_name" "$probe" || true
fi
if [[ -s "$out_dir/raw.json" ]]; then
  if command -v python3 >/dev/null 2>&1; then
    python3 "$here/bench/check_raw_schema.py" "$out_dir/raw.json" 2>&1 | tee -a "$out_dir/calibrate.log" || true
  fi
  echo "next, on a machine with the full stepcast build: build/cli/stepcast fit $out_dir/raw.json -o hardware.json"
fi
exit "$status"
