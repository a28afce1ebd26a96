"""Kernel time of a training step by category, from torch.profiler's GPU kernels. Pure
Python, no PyTorch: train_probe.py collects (name, start, duration) per kernel, this module
classifies and adds them up, record.py writes the result as secondary metrics
(gemm_time_s, attention_time_s, memory_bound_time_s, communication_time_s, idle_time_s) that
`stepcast validate` compares with the prediction's split (validate/categories.hpp).

Categories, first match wins (names as CUDA libraries and compilers give them):
  communication  NCCL kernels: "nccl" anywhere (ncclDevKernel_AllReduce_Sum_bf16_RING_LL, ncclKernel_...)
  attention      fused attention: flash (flash_fwd_kernel, flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel,
                 FlashAttnFwdSm90), fmha (fmha_cutlassF_bf16_aligned_64x128_rf_sm80, PyTorch's
                 memory-efficient kernel), cuDNN's sdpa/flash engines (cudnn_generated_fort_native_sdpa_sm90_...),
                 "attention" (attention_kernel, efficient_attention_backward)
  gemm           matrix multiplies: gemm, gemv, cutlass, xmma, nvjet (cuBLAS's Hopper kernels), cublas, s16816 / s1688
                 tensor-core names (ampere_bf16_s16816gemm_...), splitKreduce (cuBLAS's split-K epilogue), Triton
                 templates for mm (triton_tem_fused_mm, triton_tem_fused_addmm), "_mm_" / "bmm"
  memory_bound   everything else: element-wise, reductions, norms, softmax, the loss, optimizer steps
                 (multi_tensor_apply, fused_adam), Triton pointwise / reduction kernels (triton_poi_, triton_red_,
                 triton_per_), copies and memsets
"""

CATEGORIES = ("gemm", "attention", "memory_bound", "communication", "idle")

_ATTENTION = ("flash", "fmha", "sdpa", "attention", "attn_fwd", "attn_bwd")
_GEMM = ("gemm", "gemv", "cutlass", "xmma", "nvjet", "cublas", "s16816", "s1688", "splitkreduce", "triton_tem_fused_mm",
         "triton_tem_fused_addmm", "triton_tem_fused_bmm", "_mm_", "bmm", "matmul")


def classify(kernel_name):
    """The category of one GPU kernel by its name (see the module's docstring)."""
    n = kernel_name.lower()
    if "nccl" in n:
        return "communication"
    if any(key in n for key in _ATTENTION):
        return "attention"
    if any(key in n for key in _GEMM):
        return "gemm"
    return "memory_bound"


def _union_s(intervals):
    """Total length of the union of (start, end) intervals."""
    total, end = 0.0, None
    start = None
    for s, e in sorted(intervals):
        if end is None or s > end:
            if end is not None:
                total += end - start
            start, end = s, e
        else:
            end = max(end, e)
    if end is not None:
        total += end - start
    return total


def split(kernels, window_s, steps=1):
    """Kernel time per step by category: `kernels` are (name, start_s, duration_s) of every
    GPU kernel over `steps` steps that took `window_s` in all. Each category sums its
    kernels' durations (kernels of different streams that overlap count in each); idle is
    the window less the union of all kernels (the GPU ran nothing). Seconds per step."""
    if steps < 1 or window_s <= 0:
        raise ValueError("split needs steps >= 1 and a window > 0")
    out = {c: 0.0 for c in CATEGORIES}
    for name, _, duration in kernels:
        out[classify(name)] += duration
    busy = _union_s([(start, start + duration) for _, start, duration in kernels])
    out["idle"] = max(0.0, window_s - busy)
    return {c: v / steps for c, v in out.items()}


# Chrome-trace categories of the work a GPU runs. torch.profiler's trace also puts ranges that
# are not kernels on the GPU's rows: "gpu_user_annotation" (each record_function range with GPU
# work, e.g. DistributedDataParallel.forward and Optimizer.step, projected onto the GPU
# timeline) and "cuda_sync" (waits): counted as kernels, they inflated the memory-bound and
# busy times of the first H200 records (calibrate/data/h200-x1/README.md).
GPU_WORK_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")
_HOST_COPIES = ("Memset", "Memcpy HtoD", "Memcpy DtoH")


def kernels_from_trace(trace):
    """(name, start_s, duration_s) of the GPU's own work in a Chrome trace (the dict that
    torch.profiler's export_chrome_trace writes): complete events ("ph" "X") of the categories
    in GPU_WORK_CATEGORIES, host-device copies and memsets left out."""
    out = []
    for e in trace.get("traceEvents", []):
        if e.get("ph") != "X" or e.get("cat") not in GPU_WORK_CATEGORIES:
            continue
        name = e.get("name", "")
        if name.startswith(_HOST_COPIES):
            continue
        out.append((name, float(e["ts"]) / 1e6, float(e.get("dur", 0.0)) / 1e6))
    return out


def attention_kernel(kernels):
    """The fused attention kernel that ran longest, as stepcast names it (model/kernels.hpp):
    cudnn (cuDNN's SDPA engines), mem_efficient (PyTorch's CUTLASS fmha), flash3 (Hopper
    FlashAttention-3, FlashAttnFwdSm90 / FlashAttnBwdSm90), flash2 (other flash kernels);
    None when no attention kernel ran."""
    time_by = {}
    for name, _, duration in kernels:
        if classify(name) != "attention":
            continue
        n = name.lower()
        if "cudnn" in n or "sdpa" in n:
            k = "cudnn"
        elif "fmha" in n or "efficient_attention" in n:
            k = "mem_efficient"
        elif "flash" in n and "sm90" in n:
            k = "flash3"
        elif "flash" in n:
            k = "flash2"
        else:
            continue
        time_by[k] = time_by.get(k, 0.0) + duration
    return max(time_by, key=time_by.get) if time_by else None


def top_kernels(kernels, steps=1, count=40):
    """The `count` kernel names with the most GPU time, each as {name, category, calls, time_s}
    per step, longest first: what a category's time is made of, kept beside the record."""
    if steps < 1:
        raise ValueError("top_kernels needs steps >= 1")
    by = {}
    for name, _, duration in kernels:
        calls, total = by.get(name, (0, 0.0))
        by[name] = (calls + 1, total + duration)
    rows = sorted(by.items(), key=lambda kv: -kv[1][1])[:count]
    return [{"name": n, "category": classify(n), "calls": c / steps, "time_s": t / steps} for n, (c, t) in rows]


def secondary_entries(per_step):
    """The split as measured-run secondary metrics, in the order of CATEGORIES."""
    note = ("torch.profiler GPU kernel time per step by category (calibrate/probe/categories.py); idle: step "
            "time not covered by any kernel")
    return [{"metric": f"{c}_time_s", "value": per_step[c], "unit": "s", "note": note} for c in CATEGORIES]
