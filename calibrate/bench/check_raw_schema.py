#!/usr/bin/env python3
"""Checks that a file follows the stepcast-calibrate-raw-v1 schema: exact keys, JSON types,
enumerated values, and that the derived figures agree with the measured ones.

usage: python3 calibrate/bench/check_raw_schema.py RAW.json [--expect-rows]
Prints "raw schema ok: ..." and exits 0, or prints each problem and exits 1.
--expect-rows: also require at least one row in each of gemm, memory and nccl.
--expect-kernel-rows: also require rows in launch, attention and memory_kernels (what
calibrate/bench/torch_bench.py adds; overlap needs two GPUs and is never required).

The sections gemm, memory and nccl are required; launch (stepcast-calibrate and
torch_bench.py), attention, memory_kernels, gemm_torch and overlap (torch_bench.py) are optional.
"""
import json
import math
import sys

MACHINE = {"hostname": str, "date_utc": str, "gpus": list, "driver_version": str,
           "cuda_runtime_version": str, "nccl_version": str, "nvidia_smi_topo": str,
           "nvidia_smi_list": str, "nics": list, "notes": list}
GPU = {"index": int, "name": str, "sm_count": int, "memory_bytes": int, "compute_capability": str}
NUMBER = (int, float)
GEMM = {"name": str, "dtype": str, "m": int, "n": int, "k": int, "iterations": int,
        "time_s_median": NUMBER, "time_s_min": NUMBER, "time_s_max": NUMBER, "tflops": NUMBER,
        "check": str}
MEMORY = {"kind": str, "bytes": int, "iterations": int, "time_s_median": NUMBER, "GBps": NUMBER}
NCCL = {"collective": str, "ranks": int, "nodes": int, "gpus_per_node": int, "bytes": int,
        "dtype": str, "iterations": int, "time_s_median": NUMBER, "time_s_min": NUMBER,
        "algbw_GBps": NUMBER, "busbw_GBps": NUMBER, "nccl_algo": str, "nccl_proto": str,
        "check": str}
LAUNCH = {"kind": str, "ops": int, "iterations": int, "time_s_median": NUMBER, "time_s_per_op": NUMBER,
          "check": str}
ATTENTION = {"kernel": str, "backend": str, "dtype": str, "batch": int, "heads": int, "seq_len": int,
             "head_dim": int, "causal": bool, "pass": str, "iterations": int, "time_s_median": NUMBER,
             "tflops": NUMBER, "check": str}
MEMORY_KERNELS = {"op": str, "profile": str, "dtype": str, "elements": int, "bytes": int, "iterations": int,
                  "time_s_median": NUMBER, "GBps": NUMBER, "check": str}
OVERLAP = {"collective": str, "ranks": int, "bytes": int, "gemm_m": int, "gemm_n": int, "gemm_k": int,
           "dtype": str, "gemm_time_s_alone": NUMBER, "gemm_time_s_beside": NUMBER,
           "collective_time_s_alone": NUMBER, "collective_time_s_beside": NUMBER, "check": str}
GEMM_TORCH = dict(GEMM, library=str)
REQUIRED = (("gemm", GEMM), ("memory", MEMORY), ("nccl", NCCL))
OPTIONAL = (("launch", LAUNCH), ("attention", ATTENTION), ("memory_kernels", MEMORY_KERNELS),
            ("overlap", OVERLAP), ("gemm_torch", GEMM_TORCH))
CHOICES = {
    ("gemm", "name"): {"qkv", "attn_out", "mlp_up", "mlp_down", "lm_head", "wave", "square"},
    ("gemm", "dtype"): {"fp32", "tf32", "bf16", "fp16", "fp8"},
    ("gemm_torch", "name"): {"qkv", "attn_out", "mlp_up", "mlp_down", "lm_head", "square"},
    ("gemm_torch", "dtype"): {"bf16", "fp8"},
    ("gemm_torch", "library"): {"torch.matmul", "torch._scaled_mm"},
    ("memory", "kind"): {"device_to_device", "host_to_device", "device_to_host"},
    ("nccl", "collective"): {"all_reduce", "all_gather", "reduce_scatter", "broadcast"},
    ("nccl", "dtype"): {"float", "bfloat16"},
    ("launch", "kind"): {"launch", "graph_launch", "eager_forward_op", "eager_backward_op"},
    ("attention", "kernel"): {"flash2", "flash3", "cudnn", "mem_efficient", "triton", "unfused"},
    ("attention", "dtype"): {"bf16", "fp16", "fp8"},
    ("attention", "pass"): {"forward", "backward"},
    ("memory_kernels", "op"): {"copy", "add", "layernorm", "rmsnorm", "softmax", "cross_entropy", "adamw"},
    ("memory_kernels", "profile"): {"eager", "compiled"},
    ("memory_kernels", "dtype"): {"fp32", "bf16", "fp16"},
    ("overlap", "collective"): {"all_reduce", "all_gather", "reduce_scatter", "broadcast"},
    ("overlap", "dtype"): {"bf16", "fp16", "fp8", "fp32"},
}
# nccl-tests doc/PERFORMANCE.md, "Summary".
BUS_FACTOR = {"all_reduce": lambda n: 2 * (n - 1) / n, "all_gather": lambda n: (n - 1) / n,
              "reduce_scatter": lambda n: (n - 1) / n, "broadcast": lambda n: 1.0}


def typed(value, kind):
    if kind is bool:
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    return isinstance(value, kind)


def attention_flops(row):
    """4·b·s²·heads·d, halved when causal, x2.5 backward (model/kernels.hpp attention_flops)."""
    fwd = 4 * row["batch"] * row["seq_len"] ** 2 * row["heads"] * row["head_dim"] * (0.5 if row["causal"] else 1)
    return fwd * (2.5 if row["pass"] == "backward" else 1)


def check_kernel_row(section, row, where, problems):
    """The derived figures of a measured row of the kernel sections."""
    t = row.get("time_s_median")
    if section == "launch":
        if not close(row["time_s_per_op"], t / row["ops"]):
            problems.append(f"{where}/time_s_per_op: not time_s_median / ops")
    elif section == "attention":
        if not close(row["tflops"], attention_flops(row) / t / 1e12):
            problems.append(f"{where}/tflops: not the flash-attention FLOPs / time_s_median / 1e12")
    elif section == "memory_kernels":
        if not close(row["GBps"], row["bytes"] / t / 1e9):
            problems.append(f"{where}/GBps: not bytes / time_s_median / 1e9")
    elif section == "overlap":
        for key in ("gemm_time_s_alone", "gemm_time_s_beside", "collective_time_s_alone",
                    "collective_time_s_beside"):
            if not (row[key] > 0 and math.isfinite(row[key])):
                problems.append(f"{where}/{key}: a measured row needs a time > 0")


def check_object(obj, spec, where, problems):
    if not isinstance(obj, dict):
        problems.append(f"{where}: expected an object")
        return False
    if set(obj) != set(spec):
        problems.append(f"{where}: keys {sorted(obj)} differ from {sorted(spec)}")
        return False
    # A figure that could not be computed is written as null; only a row that was not checked
    # "ok" (skipped or failed) may carry one.
    nullable = obj.get("check", "ok") != "ok"
    for key, kind in spec.items():
        if obj[key] is None and nullable and kind is NUMBER:
            continue
        if not typed(obj[key], kind):
            problems.append(f"{where}/{key}: {obj[key]!r} is not of type {kind}")
    return True


def close(a, b, relative=0.02):  # 2%: printed figures are rounded at most to 15 digits
    return abs(a - b) <= relative * max(abs(a), abs(b), 1e-300)


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(argv) >= 2 else 2
    expect_rows = "--expect-rows" in argv[2:]
    expect_kernel_rows = "--expect-kernel-rows" in argv[2:]
    with open(argv[1], encoding="utf-8") as f:
        doc = json.load(f)
    problems = []
    required = {"format", "machine", "gemm", "memory", "nccl"}
    optional = {name for name, _ in OPTIONAL}
    if not isinstance(doc, dict) or not required <= set(doc) or not set(doc) <= required | optional:
        print("top level: expected keys format, machine, gemm, memory, nccl and optionally "
              "launch, attention, memory_kernels, overlap, gemm_torch")
        return 1
    if doc["format"] != "stepcast-calibrate-raw-v1":
        problems.append(f"/format: {doc['format']!r}")
    machine = doc["machine"]
    if check_object(machine, MACHINE, "/machine", problems):
        for i, gpu in enumerate(machine["gpus"]):
            check_object(gpu, GPU, f"/machine/gpus/{i}", problems)
        for key in ("nics", "notes"):
            for i, item in enumerate(machine[key]):
                if not isinstance(item, str):
                    problems.append(f"/machine/{key}/{i}: not a string")
    for section, spec in REQUIRED + OPTIONAL:
        if section not in doc:
            if expect_kernel_rows and section in ("launch", "attention", "memory_kernels"):
                problems.append(f"/{section}: missing")
            continue
        rows = doc[section]
        if not isinstance(rows, list):
            problems.append(f"/{section}: not an array")
            continue
        if (expect_rows and section in ("gemm", "memory", "nccl")) or \
                (expect_kernel_rows and section in ("launch", "attention", "memory_kernels")):
            if not rows:
                problems.append(f"/{section}: no rows")
        for i, row in enumerate(rows):
            where = f"/{section}/{i}"
            if not check_object(row, spec, where, problems):
                continue
            for (s, key), allowed in CHOICES.items():
                if s == section and row[key] not in allowed:
                    problems.append(f"{where}/{key}: {row[key]!r} not in {sorted(allowed)}")
            check = row.get("check", "ok")
            if check not in ("ok", "failed") and not check.startswith("skipped: "):
                problems.append(f"{where}/check: {check!r}")
            if check != "ok":
                continue
            if section == "overlap":
                check_kernel_row(section, row, where, problems)
                continue
            t = row["time_s_median"]
            if not (row["iterations"] >= 1 and t > 0 and math.isfinite(t)):
                problems.append(f"{where}: measured row needs iterations >= 1 and time_s_median > 0")
                continue
            if section in ("launch", "attention", "memory_kernels"):
                check_kernel_row(section, row, where, problems)
            elif section in ("gemm", "gemm_torch"):
                if not close(row["tflops"], 2 * row["m"] * row["n"] * row["k"] / t / 1e12):
                    problems.append(f"{where}/tflops: not 2mnk / time_s_median / 1e12")
                if not row["time_s_min"] <= t <= row["time_s_max"]:
                    problems.append(f"{where}: time_s_min <= time_s_median <= time_s_max does not hold")
            elif section == "memory":
                if not close(row["GBps"], row["bytes"] / t / 1e9):
                    problems.append(f"{where}/GBps: not bytes / time_s_median / 1e9")
            else:
                if row["nodes"] * row["gpus_per_node"] != row["ranks"]:
                    problems.append(f"{where}: nodes x gpus_per_node != ranks")
                algbw = row["bytes"] / t / 1e9
                if not close(row["algbw_GBps"], algbw):
                    problems.append(f"{where}/algbw_GBps: not bytes / time_s_median / 1e9")
                factor = BUS_FACTOR[row["collective"]](row["ranks"])
                if not close(row["busbw_GBps"], algbw * factor) and algbw * factor > 0:
                    problems.append(f"{where}/busbw_GBps: not algbw_GBps x the nccl-tests factor")
    for p in problems:
        print(p)
    if problems:
        return 1
    counts = ", ".join(f"{len(doc.get(name, []))} {name}" for name, _ in REQUIRED + OPTIONAL)
    print(f"raw schema ok: {len(machine['gpus'])} GPUs, {counts} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
