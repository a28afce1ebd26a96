#!/usr/bin/env python3
"""stepcast kernel microbenchmarks through PyTorch: the kernels a training step really runs,
timed on one GPU and added to the raw calibration file (stepcast-calibrate-raw-v1) that
stepcast-calibrate wrote, for `stepcast fit`:

  attention       SDPA (flash, cuDNN and memory-efficient backends) and, when importable,
                  flash_attn (FlashAttention-2) and flash_attn_interface (FlashAttention-3),
                  forward and backward, by sequence length, head size and causal flag; each
                  output checked against SDPA's math backend on a slice
  memory_kernels  copy, add, LayerNorm, RMSNorm, softmax, cross-entropy (forward + backward)
                  and an AdamW step, eager and torch.compile'd; bytes counted as the kernel
                  model counts them (model/kernels.hpp layer_memory_work, loss_memory_work,
                  model/compute.hpp optimizer_bytes_per_param); compiled output checked
                  against eager
  launch          eager_forward_op / eager_backward_op: the CPU cost per kernel of a small
                  Llama-style stack in eager PyTorch, too small for the GPU to matter
                  (kernels counted by torch.profiler)
  gemm_torch      the layer GEMMs and squares through torch.matmul (bf16) and torch._scaled_mm
                  (fp8 e4m3, per-tensor scales, bf16 out, Hopper and later): the library calls
                  frameworks make, beside stepcast-calibrate's direct cuBLASLt rows; each output
                  checked against an fp32 product of the same inputs on a slice
  overlap         with two or more GPUs: a bf16 GEMM on GPU 0 alone, an NCCL all-reduce over
                  all GPUs alone (torch.cuda.nccl, one process), and both at once

usage: python3 calibrate/bench/torch_bench.py --raw OUT_DIR/raw.json [--quick] [--sections LIST]
The file is updated in place (rows of the sections measured replace earlier ones); without it
a file with an empty gemm/memory/nccl is started. Pure parts (row arithmetic, byte counts,
plans, the file merge) need no PyTorch and are tested by test_torch_bench.py.
"""
import argparse
import json
import os
import statistics
import sys
import time

SECTIONS = ("attention", "memory_kernels", "launch", "gemm_torch", "overlap")
ATTENTION_KERNELS = {"sdpa:flash": "flash2", "sdpa:cudnn": "cudnn", "sdpa:efficient": "mem_efficient",
                     "flash_attn": "flash2", "flash_attn_interface": "flash3"}
# The flash-attention benchmark convention (Dao 2023, benchmarks/benchmark_flash_attention.py):
# 16k tokens per batch, hidden 2048, so heads = 2048 / head_dim and batch = 16384 / seq_len.
ATTENTION_TOKENS = 16384
ATTENTION_HIDDEN = 2048


# ---- pure parts (no PyTorch) -------------------------------------------------------------

def attention_flops(batch, heads, seq_len, head_dim, causal, backward):
    """4·b·s²·heads·d, halved when causal, x2.5 backward (model/kernels.hpp attention_flops)."""
    fwd = 4.0 * batch * seq_len * seq_len * heads * head_dim * (0.5 if causal else 1.0)
    return 2.5 * fwd if backward else fwd


def attention_plan(quick):
    """(seq_len, head_dim, causal) of the sweep."""
    seqs = (1024, 4096) if quick else (512, 1024, 2048, 4096, 8192, 16384)
    heads = (128,) if quick else (64, 128)
    return [(s, d, c) for d in heads for c in (True, False) for s in seqs]


def attention_row(*, kernel, backend, dtype, batch, heads, seq_len, head_dim, causal, backward, iterations,
                  time_s, check):
    ok = check == "ok"
    flops = attention_flops(batch, heads, seq_len, head_dim, causal, backward)
    return {"kernel": kernel, "backend": backend, "dtype": dtype, "batch": batch, "heads": heads,
            "seq_len": seq_len, "head_dim": head_dim, "causal": causal,
            "pass": "backward" if backward else "forward", "iterations": iterations if ok else 0,
            "time_s_median": time_s if ok else None, "tflops": flops / time_s / 1e12 if ok else None,
            "check": check}


def memory_bytes(op, profile, elements, elem_bytes):
    """Bytes an op moves as the kernel model counts them. `elements`: of the activation (h per
    token x tokens), of the logits for cross_entropy, of the parameters for adamw.
      copy 2w, add 3w (two reads, one write), layernorm 2w (one kernel), softmax 2w;
      rmsnorm eager (Hugging Face's: fp32 upcast, square, mean, rsqrt-scale, downcast, weight)
        28 + 4w, compiled 2w (model/kernels.cpp norm_bytes);
      cross_entropy forward + backward eager 32 + 2w, compiled 4w (loss_memory_work);
      adamw on fp32 parameters and gradients: 28 (optimizer_bytes_per_param, fp32 training)."""
    w = elem_bytes
    per = {"copy": 2 * w, "add": 3 * w, "layernorm": 2 * w, "softmax": 2 * w}
    if op in per:
        return int(per[op] * elements)
    if op == "rmsnorm":
        return int(((28 + 4 * w) if profile == "eager" else 2 * w) * elements)
    if op == "cross_entropy":
        return int(((32 + 2 * w) if profile == "eager" else 4 * w) * elements)
    if op == "adamw":
        return int(28 * elements)
    raise ValueError(f"unknown memory-bound op {op}")


MEMORY_OPS = ("copy", "add", "layernorm", "rmsnorm", "softmax", "cross_entropy", "adamw")


def memory_plan(quick):
    """(op, profile, elements, hidden or vocab width): activation sizes of 2^24 and 2^28
    elements (32 MiB and 512 MiB in bf16), logits of 8k tokens x 32k and 128k vocab, 64M and
    256M parameters."""
    sizes = (1 << 24,) if quick else (1 << 24, 1 << 28)
    plan = []
    for profile in ("eager", "compiled"):
        for op in MEMORY_OPS:
            if op == "cross_entropy":
                widths = (32768,) if quick else (32768, 131072)
                plan += [(op, profile, 8192 * v, v) for v in widths]
            elif op == "adamw":
                plan += [(op, profile, n, 0) for n in ((1 << 26,) if quick else (1 << 26, 1 << 28))]
            else:
                plan += [(op, profile, n, 4096) for n in sizes]
    return plan


def memory_row(*, op, profile, dtype, elements, elem_bytes, iterations, time_s, check):
    ok = check == "ok"
    b = memory_bytes(op, profile, elements, elem_bytes)
    return {"op": op, "profile": profile, "dtype": dtype, "elements": elements, "bytes": b,
            "iterations": iterations if ok else 0, "time_s_median": time_s if ok else None,
            "GBps": b / time_s / 1e9 if ok else None, "check": check}


def launch_row(*, kind, ops, iterations, time_s, check):
    ok = check == "ok"
    return {"kind": kind, "ops": ops, "iterations": iterations if ok else 0,
            "time_s_median": time_s if ok else None, "time_s_per_op": time_s / ops if ok else None,
            "check": check}


def gemm_torch_plan(quick):
    """(name, m, n, k): y[m, n] = x[m, k] · W[n, k]ᵀ, m the tokens (bench/gemm.cu's layer shapes):
    qkv, attn_out, mlp_up and mlp_down (ffn 4h) at 8,192 tokens for hidden 2,048, 4,096 and 8,192,
    a Llama-3 LM head (hidden 4,096, vocabulary 128,256) and the squares 4,096 to 16,384."""
    hiddens = (4096,) if quick else (2048, 4096, 8192)
    tokens = 8192
    plan = []
    for h in hiddens:
        plan += [("qkv", tokens, 3 * h, h), ("attn_out", tokens, h, h), ("mlp_up", tokens, 4 * h, h),
                 ("mlp_down", tokens, h, 4 * h)]
    plan.append(("lm_head", tokens, 128256, 4096))
    plan += [("square", n, n, n) for n in ((8192,) if quick else (4096, 8192, 16384))]
    return plan


def gemm_torch_row(*, name, library, dtype, m, n, k, iterations, times_s, check):
    ok = check == "ok"
    t = statistics.median(times_s) if ok else None
    return {"name": name, "library": library, "dtype": dtype, "m": m, "n": n, "k": k,
            "iterations": iterations if ok else 0, "time_s_median": t, "time_s_min": min(times_s) if ok else None,
            "time_s_max": max(times_s) if ok else None, "tflops": 2.0 * m * n * k / t / 1e12 if ok else None,
            "check": check}


def overlap_row(*, ranks, nbytes, m, n, k, gemm_alone, gemm_beside, coll_alone, coll_beside, check):
    return {"collective": "all_reduce", "ranks": ranks, "bytes": nbytes, "gemm_m": m, "gemm_n": n, "gemm_k": k,
            "dtype": "bf16", "gemm_time_s_alone": gemm_alone, "gemm_time_s_beside": gemm_beside,
            "collective_time_s_alone": coll_alone, "collective_time_s_beside": coll_beside, "check": check}


def measure(batch, min_s=0.02, repeats=5):
    """Grows n until batch(n) (seconds for n calls) lasts min_s, then takes `repeats`
    measurements; returns (calls per measurement, median seconds per call)."""
    n = 1
    elapsed = batch(n)
    while elapsed < min_s and n < 1 << 20:
        n = max(2 * n, int(n * 1.25 * min_s / max(elapsed, 1e-9)))
        elapsed = batch(n)
    per_call = [batch(n) / n for _ in range(repeats)]
    return n, statistics.median(per_call)


def merge(doc, sections):
    """The raw document with the rows of `sections` ({name: rows}). attention, memory_kernels
    and overlap are replaced; in launch only the kinds measured here are replaced, so
    stepcast-calibrate's launch and graph_launch rows stay."""
    out = dict(doc)
    for name, rows in sections.items():
        if name == "launch":
            kinds = {r["kind"] for r in rows}
            out["launch"] = [r for r in doc.get("launch", []) if r["kind"] not in kinds] + rows
        else:
            out[name] = rows
    return out


def empty_raw(machine):
    return {"format": "stepcast-calibrate-raw-v1", "machine": machine, "gemm": [], "memory": [], "nccl": []}


def write_raw(path, doc):
    tmp = path + ".partial"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


# ---- measurements (PyTorch, one GPU; overlap: all visible GPUs) ---------------------------

def skipped(error):
    """A row's check for a measurement the backend refused: the error's first line."""
    return "skipped: " + str(error).splitlines()[0][:200]


def gpu_timer(torch):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def run(fn):
        def batch(n):
            start.record()
            for _ in range(n):
                fn()
            end.record()
            torch.cuda.synchronize()
            return start.elapsed_time(end) / 1e3
        return batch
    return run


def attention_backends(torch):
    """(backend name, kernel, f(q, k, v, causal) on (b, heads, s, d) tensors)."""
    import torch.nn.functional as F
    out = []
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        for name, backend in (("sdpa:flash", SDPBackend.FLASH_ATTENTION), ("sdpa:cudnn", SDPBackend.CUDNN_ATTENTION),
                              ("sdpa:efficient", SDPBackend.EFFICIENT_ATTENTION)):
            def f(q, k, v, causal, backend=backend):
                with sdpa_kernel(backend):
                    return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            out.append((name, ATTENTION_KERNELS[name], f))
    except (ImportError, AttributeError) as e:
        print(f"[attention] SDPA backends not selectable: {e}", file=sys.stderr)
    for module in ("flash_attn", "flash_attn_interface"):
        try:
            mod = __import__(module)
        except ImportError:
            continue

        def f(q, k, v, causal, mod=mod):
            o = mod.flash_attn_func(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), causal=causal)
            o = o[0] if isinstance(o, tuple) else o
            return o.transpose(1, 2)
        out.append((module, ATTENTION_KERNELS[module], f))
    return out


def run_attention(torch, args, timer):
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    rows = []
    for backend, kernel, f in attention_backends(torch):
        for seq, d, causal in attention_plan(args.quick):
            b, h = max(1, ATTENTION_TOKENS // seq), ATTENTION_HIDDEN // d
            common = dict(kernel=kernel, backend=backend, dtype="bf16", batch=b, heads=h, seq_len=seq, head_dim=d,
                          causal=causal)
            try:
                q, k, v = (torch.randn(b, h, seq, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                           for _ in range(3))
                o = f(q, k, v, causal)
                with sdpa_kernel(SDPBackend.MATH):  # reference on the first sequence, 2 heads
                    ref = F.scaled_dot_product_attention(*(x[:1, :2].float() for x in (q, k, v)), is_causal=causal)
                err = (o[:1, :2].float() - ref).abs().max().item()
                check = "ok" if err < 2e-2 else f"failed: max abs error {err:.3g} against the math backend"
                grad = torch.randn_like(o)
                n, t = measure(timer(lambda: f(q, k, v, causal)), args.min_s, args.repeats)
                rows.append(attention_row(backward=False, iterations=n, time_s=t, check=check, **common))
                n, t = measure(timer(lambda: torch.autograd.grad(o, (q, k, v), grad, retain_graph=True)),
                               args.min_s, args.repeats)
                rows.append(attention_row(backward=True, iterations=n, time_s=t, check=check, **common))
                del q, k, v, o, grad
            except (RuntimeError, torch.cuda.OutOfMemoryError) as e:  # backend refuses the shape, or no memory
                why = skipped(e)
                for bwd in (False, True):
                    rows.append(attention_row(backward=bwd, iterations=0, time_s=0.0, check=why, **common))
            last = rows[-1]
            print(f"[attention] {backend} s={seq} d={d} causal={causal}: {last['check']}"
                  + (f", bwd {last['tflops']:.0f} TFLOP/s" if last["check"] == "ok" else ""), file=sys.stderr)
            torch.cuda.empty_cache()
    return rows


def memory_op(torch, op, elements, width):
    """(function to time, elements' dtype name, element bytes)."""
    import torch.nn.functional as F
    bf = torch.bfloat16
    if op == "adamw":
        p = torch.nn.Parameter(torch.randn(elements, device="cuda"))
        p.grad = torch.randn_like(p)
        opt = torch.optim.AdamW([p], lr=1e-4, foreach=True)
        return opt.step, "fp32", 4
    if op == "cross_entropy":
        logits = torch.randn(elements // width, width, device="cuda", dtype=bf, requires_grad=True)
        target = torch.randint(0, width, (elements // width,), device="cuda")

        def ce():
            loss = F.cross_entropy(logits.float(), target)
            return torch.autograd.grad(loss, logits)[0]
        return ce, "bf16", 2
    x = torch.randn(elements // width, width, device="cuda", dtype=bf)
    y = torch.randn_like(x)
    weight = torch.ones(width, device="cuda", dtype=bf)
    if op == "copy":
        return (lambda: y.copy_(x)), "bf16", 2
    if op == "add":
        return (lambda: x + y), "bf16", 2
    if op == "layernorm":
        return (lambda: F.layer_norm(x, (width,), weight)), "bf16", 2
    if op == "softmax":
        return (lambda: torch.softmax(x, dim=-1)), "bf16", 2
    if op == "rmsnorm":
        def rms():  # Hugging Face's LlamaRMSNorm.forward
            h = x.float()
            h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)
            return weight * h.to(bf)
        return rms, "bf16", 2
    raise ValueError(op)


def run_memory_kernels(torch, args, timer):
    rows = []
    for op, profile, elements, width in memory_plan(args.quick):
        common = dict(op=op, profile=profile, elements=elements)
        try:
            fn, dtype, w = memory_op(torch, op, elements, width)
            check = "ok"
            if profile == "compiled":
                compiled = torch.compile(fn)
                if op not in ("adamw", "copy"):
                    a, b = fn(), compiled()
                    if not torch.allclose(a.float(), b.float(), rtol=2e-2, atol=2e-2):
                        check = "failed: the compiled result differs from eager"
                fn = compiled
            n, t = measure(timer(fn), args.min_s, args.repeats)
            rows.append(memory_row(dtype=dtype, elem_bytes=w, iterations=n, time_s=t, check=check, **common))
        except (RuntimeError, torch.cuda.OutOfMemoryError) as e:
            rows.append(memory_row(dtype="bf16", elem_bytes=2, iterations=0, time_s=0.0,
                                   check=skipped(e), **common))
        r = rows[-1]
        print(f"[memory] {op} {profile} {elements}: {r['check']}"
              + (f", {r['GBps']:.0f} GB/s" if r["check"] == "ok" else ""), file=sys.stderr)
        torch.cuda.empty_cache()
    return rows


def run_gemm_torch(torch, args, timer):
    """Each shape in bf16 (torch.matmul) and fp8 (torch._scaled_mm), inputs uniform in [-1, 1) as
    bench/gemm.cu fills them; fp8 needs compute capability 8.9 or later."""
    rows = []
    fp8 = torch.cuda.get_device_capability() >= (8, 9)
    one = torch.ones((), device="cuda", dtype=torch.float32)
    for name, m, n, k in gemm_torch_plan(args.quick):
        for dtype, library in (("bf16", "torch.matmul"), ("fp8", "torch._scaled_mm")):
            common = dict(name=name, library=library, dtype=dtype, m=m, n=n, k=k)
            if dtype == "fp8" and not fp8:
                rows.append(gemm_torch_row(iterations=0, times_s=[0.0], check="skipped: fp8 needs sm_89 or later",
                                           **common))
                continue
            try:
                x = torch.rand(m, k, device="cuda", dtype=torch.bfloat16) * 2 - 1
                w = torch.rand(n, k, device="cuda", dtype=torch.bfloat16) * 2 - 1
                if dtype == "fp8":
                    x, w = x.to(torch.float8_e4m3fn), w.to(torch.float8_e4m3fn)
                    wt = w.t()  # column-major (k, n), the layout _scaled_mm's second operand needs

                    def fn(x=x, wt=wt):
                        return torch._scaled_mm(x, wt, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
                else:
                    wt = w.t()

                    def fn(x=x, wt=wt):
                        return torch.matmul(x, wt)
                y = fn()
                rs = slice(0, min(m, 256))
                ref = x[rs].float() @ w.float().t()
                err = ((y[rs].float() - ref).norm() / ref.norm()).item()
                check = "ok" if err < 1e-2 else f"failed: relative error {err:.3g} against fp32 on the same inputs"
                del y, ref
                n_calls, _ = measure(timer(fn), args.min_s, 1)
                times = [timer(fn)(n_calls) / n_calls for _ in range(args.repeats)]
                rows.append(gemm_torch_row(iterations=n_calls, times_s=times, check=check, **common))
                del x, w, wt
            except (RuntimeError, torch.cuda.OutOfMemoryError) as e:
                rows.append(gemm_torch_row(iterations=0, times_s=[0.0],
                                           check=skipped(e), **common))
            r = rows[-1]
            print(f"[gemm_torch] {library} {name} {m}x{n}x{k}: {r['check']}"
                  + (f", {r['tflops']:.0f} TFLOP/s" if r["check"] == "ok" else ""), file=sys.stderr)
            torch.cuda.empty_cache()
    return rows


def tiny_stack(torch):
    """A 4-layer Llama-style stack of width 64 (RMSNorm, rotary-free SDPA, SwiGLU) on 1 x 16
    tokens: every kernel is tiny, so a step is bound by the CPU's dispatch of each op."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "probe"))
    from train_probe import Block  # noqa: E402
    m = {"hidden": 64, "ffn_hidden": 176, "heads": 4, "kv_heads": 4, "norm": "rmsnorm", "linear_bias": False,
         "qkv_bias": False, "parallel_attn_mlp": False, "gated_mlp": True}
    return torch.nn.Sequential(*(Block(m) for _ in range(4))).cuda().to(torch.bfloat16)


def count_kernels(torch, fn):
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return sum(1 for e in prof.events()
               if str(e.device_type).split(".")[-1] == "CUDA" and not e.name.startswith(("Memcpy", "Memset")))


def run_launch(torch, args):
    net = tiny_stack(torch)
    x = torch.randn(1, 16, 64, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    rows = []
    fwd = lambda: net(x)  # noqa: E731
    out = fwd()
    grad = torch.randn_like(out)
    bwd = lambda: torch.autograd.grad(out, [x] + list(net.parameters()), grad, retain_graph=True)  # noqa: E731
    for kind, fn in (("eager_forward_op", fwd), ("eager_backward_op", bwd)):
        kernels = count_kernels(torch, fn)

        def batch(n, fn=fn):  # wall time: the CPU is the bottleneck
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            torch.cuda.synchronize()
            return time.perf_counter() - t0
        n, t = measure(batch, args.min_s, args.repeats)
        rows.append(launch_row(kind=kind, ops=kernels, iterations=n, time_s=t, check="ok"))
        print(f"[launch] {kind}: {kernels} kernels, {1e6 * t / kernels:.1f} us per kernel", file=sys.stderr)
    return rows


def run_overlap(torch, args):
    gpus = torch.cuda.device_count()
    if gpus < 2:
        print("[overlap] one GPU: no collective to run beside a GEMM", file=sys.stderr)
        return []
    rows = []
    m = n = k = 8192
    a = torch.randn(m, k, device="cuda:0", dtype=torch.bfloat16)
    b = torch.randn(k, n, device="cuda:0", dtype=torch.bfloat16)
    compute = torch.cuda.current_stream(0)
    for nbytes in ((64 << 20,) if args.quick else (16 << 20, 256 << 20)):
        bufs = [torch.ones(nbytes // 2, device=f"cuda:{i}", dtype=torch.bfloat16) for i in range(gpus)]
        streams = [torch.cuda.Stream(device=i) for i in range(gpus)]
        reduce = lambda: torch.cuda.nccl.all_reduce(bufs, streams=streams)  # noqa: E731
        ev = {s: (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for s in ("g", "c")}

        def run(n_gemm, n_coll):
            torch.cuda.synchronize()
            ev["g"][0].record(compute)
            ev["c"][0].record(streams[0])
            for _ in range(n_coll):
                reduce()
            with torch.cuda.stream(compute):
                for _ in range(n_gemm):
                    a @ b
            ev["g"][1].record(compute)
            ev["c"][1].record(streams[0])
            for i in range(gpus):
                torch.cuda.synchronize(i)
            return ev["g"][0].elapsed_time(ev["g"][1]) / 1e3, ev["c"][0].elapsed_time(ev["c"][1]) / 1e3

        reduce()  # the check: ones summed over every GPU
        for i in range(gpus):
            torch.cuda.synchronize(i)
        ok = all(buf[:16].float().eq(gpus).all().item() for buf in bufs)
        run(3, 3)
        g_alone = statistics.median(run(20, 0)[0] / 20 for _ in range(args.repeats))
        c_alone = statistics.median(run(0, 20)[1] / 20 for _ in range(args.repeats))
        # Side by side over the same span: as many calls of each as fill ~20 GEMMs' time.
        n_g, n_c = 20, max(1, round(20 * g_alone / c_alone))
        both = [run(n_g, n_c) for _ in range(args.repeats)]
        g_beside = statistics.median(g / n_g for g, _ in both)
        c_beside = statistics.median(c / n_c for _, c in both)
        rows.append(overlap_row(ranks=gpus, nbytes=nbytes, m=m, n=n, k=k, gemm_alone=g_alone, gemm_beside=g_beside,
                                coll_alone=c_alone, coll_beside=c_beside, check="ok" if ok else "failed"))
        print(f"[overlap] all_reduce {nbytes >> 20} MiB x{gpus}: GEMM {1 - g_alone / g_beside:+.1%}, "
              f"all-reduce {1 - c_alone / c_beside:+.1%} slower side by side", file=sys.stderr)
    return rows


def torch_machine(torch):
    gpus = [{"index": i, "name": torch.cuda.get_device_name(i),
             "sm_count": torch.cuda.get_device_properties(i).multi_processor_count,
             "memory_bytes": torch.cuda.get_device_properties(i).total_memory,
             "compute_capability": "{}.{}".format(*torch.cuda.get_device_capability(i))}
            for i in range(torch.cuda.device_count())]
    return {"hostname": os.uname().nodename, "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "gpus": gpus, "driver_version": "unknown", "cuda_runtime_version": str(torch.version.cuda),
            "nccl_version": ".".join(map(str, torch.cuda.nccl.version())), "nvidia_smi_topo": "",
            "nvidia_smi_list": "", "nics": [], "notes": ["machine described by calibrate/bench/torch_bench.py"]}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--raw", required=True, help="raw.json to add the rows to (created if absent)")
    p.add_argument("--quick", action="store_true", help="smoke run: a few shapes of each")
    p.add_argument("--sections", default=",".join(SECTIONS), help="comma-separated subset of " + ",".join(SECTIONS))
    p.add_argument("--min-ms", type=float, default=20.0, help="minimum duration of one timed measurement")
    p.add_argument("--repeats", type=int, default=5, help="timed measurements per row")
    args = p.parse_args(argv)
    args.min_s = args.min_ms / 1e3
    wanted = [s for s in args.sections.split(",") if s]
    for s in wanted:
        if s not in SECTIONS:
            p.error(f"unknown section {s} (one of {', '.join(SECTIONS)})")
    import torch
    if not torch.cuda.is_available():
        print("torch_bench: no CUDA device; nothing measured", file=sys.stderr)
        return 1
    torch.backends.cuda.matmul.allow_tf32 = True
    doc = json.load(open(args.raw)) if os.path.exists(args.raw) else empty_raw(torch_machine(torch))
    doc["machine"]["notes"].append(f"torch_bench.py: torch {torch.__version__}; sections {','.join(wanted)}")
    timer = gpu_timer(torch)
    runners = {"attention": lambda: run_attention(torch, args, timer),
               "memory_kernels": lambda: run_memory_kernels(torch, args, timer),
               "launch": lambda: run_launch(torch, args),
               "gemm_torch": lambda: run_gemm_torch(torch, args, timer), "overlap": lambda: run_overlap(torch, args)}
    status = 0
    for s in wanted:
        try:
            rows = runners[s]()
        except Exception as e:  # one broken section must not lose the others
            doc["machine"]["notes"].append(f"torch_bench.py: {s} stopped: {e}")
            print(f"[{s}] stopped: {e}", file=sys.stderr)
            status = 1
            continue
        doc = merge(doc, {s: rows})
        write_raw(args.raw, doc)
    failed = sum(1 for s in wanted for r in doc.get(s, []) if r["check"].startswith("failed"))
    print(f"torch_bench: wrote {args.raw}; {failed} rows failed their check", file=sys.stderr)
    return status or (3 if failed else 0)


if __name__ == "__main__":
    sys.exit(main())
