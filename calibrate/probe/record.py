"""Measured-run records (the format of shared/validation/runs.jsonl, "measured-run record
v1") for runs of the training probe. Pure Python, no PyTorch: train_probe.py measures,
this module writes what was measured in the format `stepcast validate` reads.
"""
import json

import categories as categories_module

# GPU names as CUDA reports them -> stepcast catalog keys (topologies/catalog/gpus.json).
GPU_KEYS = {
    "NVIDIA H100 80GB HBM3": "h100-sxm5-80gb",
    "NVIDIA H100 PCIe": "h100-pcie-80gb",
    "NVIDIA H200": "h200-sxm-141gb",
    "NVIDIA A100-SXM4-80GB": "a100-sxm4-80gb",
    "NVIDIA A100-SXM4-40GB": "a100-sxm4-40gb",
    "NVIDIA A100 80GB PCIe": "a100-pcie-80gb",
    "NVIDIA B200": "b200-sxm-180gb",
}

# Catalog model name prefix -> the record format's `arch` enum.
ARCH = [("gpt2", "gpt2"), ("mpt", "mpt"), ("llama", "llama"), ("falcon", "falcon"), ("bloom", "bloom"),
        ("opt", "opt"), ("bert", "bert"), ("megatron-gpt", "gpt2"), ("gpt3", "gpt2"), ("qwen", "other")]

STRATEGY = {
    "ddp": ("ddp", "pytorch-ddp"),
    "fsdp_full_shard": ("fsdp_full_shard", "pytorch-fsdp"),
    "fsdp_shard_grad_op": ("fsdp_shard_grad_op", "pytorch-fsdp"),
    "fsdp_hybrid_shard": ("fsdp_hybrid_shard", "pytorch-fsdp"),
    "zero1": ("zero1", "deepspeed"),
    "zero2": ("zero2", "deepspeed"),
    "zero3": ("zero3", "deepspeed"),
}


def gpu_key(cuda_name):
    if cuda_name in GPU_KEYS:
        return GPU_KEYS[cuda_name]
    return "other:" + cuda_name


def arch_of(model_name):
    for prefix, arch in ARCH:
        if model_name.startswith(prefix):
            return arch
    return "other"


def make_record(*, model, params, gpu_name, gpus, gpus_per_node, nodes, intra_node, strategy, recompute,
                precision, micro_batch, grad_accum, seq_len, step_times_s, peak_memory_bytes, machine,
                torch_version, nccl_version, run_tag, categories=None, kernels="eager", lora_rank=0,
                attention_kernel=None, peak_reserved_bytes=None):
    """One record. `model` is the catalog entry (dict from model/catalog/models.json);
    `step_times_s` the steady-state step times (warm-up excluded); the measured value is
    their median. `categories`: kernel time per step by category (categories.split), written
    as secondary metrics; `kernels` "eager" or "compiled" (torch.compile: extra
    "torch_compile"); `lora_rank` > 0: a LoRA fine-tune with rank-r adapters on the query and
    value projections (extra "lora_r<r>_q_v"); `attention_kernel`: the fused attention kernel
    the profiler saw (categories.attention_kernel), as extra "attention_kernel_<name>";
    `peak_reserved_bytes`: torch.cuda.max_memory_reserved, what the caching allocator held at
    most (its reserve beyond the allocated peak is what a memory model's allocator term is)."""
    if strategy not in STRATEGY:
        raise ValueError(f"unknown strategy {strategy}")
    if not step_times_s:
        raise ValueError("no step times")
    times = sorted(step_times_s)
    median = times[len(times) // 2] if len(times) % 2 else 0.5 * (times[len(times) // 2 - 1] + times[len(times) // 2])
    dp, framework = STRATEGY[strategy]
    global_batch = micro_batch * grad_accum * gpus
    tokens_per_s_per_gpu = micro_batch * grad_accum * seq_len / median
    key = gpu_key(gpu_name)
    extras = ["flash_attention"] + (["torch_compile"] if kernels == "compiled" else [])
    extras += [f"lora_r{lora_rank}_q_v"] if lora_rank > 0 else []
    extras += [f"attention_kernel_{attention_kernel}"] if attention_kernel else []
    variant = kernels + (f"-lora{lora_rank}" if lora_rank > 0 else "")
    secondary = [
        {"metric": "tokens_per_s_per_gpu", "value": tokens_per_s_per_gpu, "unit": "tokens/s"},
        {"metric": "peak_memory_allocated", "value": peak_memory_bytes, "unit": "bytes",
         "note": "torch.cuda.max_memory_allocated on rank 0"},
    ] + ([{"metric": "peak_memory_reserved", "value": peak_reserved_bytes, "unit": "bytes",
           "note": "torch.cuda.max_memory_reserved on rank 0"}] if peak_reserved_bytes is not None else []) + [
        {"metric": "step_time_min", "value": times[0], "unit": "s"},
        {"metric": "step_time_max", "value": times[-1], "unit": "s"},
        {"metric": "measured_steps", "value": len(times), "unit": "steps"},
    ] + (categories_module.secondary_entries(categories) if categories else [])
    return {
        "id": f"stepcast-probe-{machine}-{model['name']}-{strategy}-g{gpus}-mb{micro_batch}-s{seq_len}-{variant}-"
              f"{run_tag}",
        "source": {"type": "repo", "repo": "stepcast", "path": f"calibrate/data/{machine}/runs.jsonl",
                   "locator": f"calibrate/probe/train_probe.py run {run_tag}"},
        "trust": "high",
        "model": {"name": model["name"], "arch": arch_of(model["name"]), "params": params,
                  "layers": model["layers"], "hidden": model["hidden"], "heads": model["heads"],
                  "kv_heads": model["kv_heads"], "ffn_hidden": model["ffn_hidden"], "vocab": model["vocab"],
                  "seq_len": seq_len},
        "hardware": {"gpu": key, "gpus": gpus, "gpus_per_node": gpus_per_node, "nodes": nodes,
                     "intra_node": intra_node, "inter_node": None},
        "strategy": {"data_parallel": dp, "tp": 1, "pp": 1, "sp": False, "activation_checkpointing": recompute,
                     "precision": precision, "offload": "none", "framework": framework,
                     "extras": extras},
        "batch": {"micro_batch": micro_batch, "grad_accum": grad_accum, "global_batch": global_batch},
        "measured": {
            "metric": "step_time_s", "value": median,
            "definition": ("median wall time of an optimizer step over the measured steps, CUDA events around "
                           "forward, backward and optimizer, warm-up steps excluded; synthetic tokens"),
            "secondary": secondary,
        },
        "notes": f"stepcast training probe on {machine}; torch {torch_version}, NCCL {nccl_version}; "
                 f"model built from the stepcast catalog entry {model['name']}; synthetic random tokens",
        "raw": {"gpu": gpu_name, "strategy_kind": strategy, "precision": precision,
                "intra_node": intra_node, "inter_node": None},
    }


def dumps(record):
    return json.dumps(record, sort_keys=False)
