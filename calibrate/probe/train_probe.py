#!/usr/bin/env python3
"""stepcast training probe: trains a GPT-style model of the stepcast catalog on synthetic
tokens under DDP, FSDP (FULL_SHARD, SHARD_GRAD_OP, HYBRID_SHARD) or, when installed,
DeepSpeed ZeRO-1/2/3, measures steady-state step time with CUDA events (warm-up excluded)
and peak memory, and appends one measured-run record (the format of
shared/validation/runs.jsonl) to --out, so `stepcast validate` compares it directly.

Run under torchrun, one process per GPU:
    torchrun --nproc_per_node=8 calibrate/probe/train_probe.py --model gpt2-xl \\
        --strategy fsdp_full_shard --micro-batch 8 --seq-len 1024 --out runs.jsonl --machine dgx-h100-a
Several nodes: torchrun --nnodes=N --node_rank=R --rdzv_endpoint=HOST:PORT ... (same arguments).

Kernel categories: after the timed steps, --profile-steps more steps run under torch.profiler
and the record carries the GPU kernel time per step by category (GEMM, attention,
memory-bound, communication, idle; calibrate/probe/categories.py), which `stepcast validate`
compares with the prediction's split, and the attention kernel that ran (extra
attention_kernel_<name>); OUT's .kernels.jsonl beside it gets the 40 longest kernels of a run.
--kernels compiled runs the model under torch.compile; --lora-rank R freezes the model (bf16) and trains rank-R adapters on the query and value
projections (a LoRA fine-tune, e.g. of llama-2-7b on one GPU). Models with rotary positions
(Llama) apply rotate-half rotary embeddings to queries and keys, as Hugging Face's do.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import categories  # noqa: E402
import record  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def catalog_model(name):
    with open(os.path.join(ROOT, "model", "catalog", "models.json")) as f:
        for m in json.load(f)["models"]:
            if m["name"] == name or name in m.get("aliases", []):
                return m
    sys.exit(f"train_probe: unknown model {name} (see `stepcast catalog models`)")


class Block(nn.Module):
    def __init__(self, m):
        super().__init__()
        h, f = m["hidden"], m["ffn_hidden"]
        self.heads, self.kv_heads, self.head_dim = m["heads"], m["kv_heads"], h // m["heads"]
        norm = nn.LayerNorm if m["norm"] == "layernorm" else nn.RMSNorm
        bias = bool(m["linear_bias"])
        self.norm1 = norm(h)
        self.qkv = nn.Linear(h, h + 2 * self.kv_heads * self.head_dim, bias=bias or bool(m["qkv_bias"]))
        self.out = nn.Linear(h, h, bias=bias)
        self.parallel = bool(m["parallel_attn_mlp"])
        self.norm2 = None if self.parallel else norm(h)
        self.gated = bool(m["gated_mlp"])
        self.up = nn.Linear(h, 2 * f if self.gated else f, bias=bias)
        self.down = nn.Linear(f, h, bias=bias)
        self.rope = m.get("positional") == "rope"
        self.lora = None  # (A_q, B_q, A_v, B_v) when add_lora() was called

    def add_lora(self, rank):
        """Rank-r adapters on the query and value projections (PEFT's default targets for
        Llama: q_proj, v_proj), B initialised to zero; the frozen qkv weight stays as is."""
        h, kv = self.out.in_features, self.kv_heads * self.head_dim
        dev = self.qkv.weight.device
        self.lora = nn.ParameterList([nn.Parameter(torch.randn(rank, h, device=dev) / rank),
                                      nn.Parameter(torch.zeros(h, rank, device=dev)),
                                      nn.Parameter(torch.randn(rank, h, device=dev) / rank),
                                      nn.Parameter(torch.zeros(kv, rank, device=dev))])

    def rotary(self, x):
        """Rotate-half rotary embedding (Su et al. 2021; Hugging Face's apply_rotary_pos_emb)."""
        s, d = x.shape[-2], x.shape[-1]
        inv = 1.0 / (10000 ** (torch.arange(0, d, 2, device=x.device, dtype=torch.float32) / d))
        freqs = torch.outer(torch.arange(s, device=x.device, dtype=torch.float32), inv)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
        x1, x2 = x[..., : d // 2], x[..., d // 2:]
        return x * cos + torch.cat((-x2, x1), dim=-1) * sin

    def attention(self, x):
        b, s, h = x.shape
        q, k, v = self.qkv(x).split([h, self.kv_heads * self.head_dim, self.kv_heads * self.head_dim], dim=-1)
        if self.lora is not None:
            a_q, b_q, a_v, b_v = self.lora
            q = q + (x @ a_q.t().to(x.dtype)) @ b_q.t().to(x.dtype)
            v = v + (x @ a_v.t().to(x.dtype)) @ b_v.t().to(x.dtype)
        q = q.view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = k.view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        v = v.view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        if self.kv_heads != self.heads:
            rep = self.heads // self.kv_heads
            k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        if self.rope:
            q, k = self.rotary(q), self.rotary(k)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # flash kernel where it can
        return self.out(y.transpose(1, 2).reshape(b, s, h))

    def mlp(self, x):
        if self.gated:
            a, g = self.up(x).chunk(2, dim=-1)
            return self.down(F.silu(g) * a)
        return self.down(F.gelu(self.up(x)))

    def forward(self, x):
        if self.parallel:
            y = self.norm1(x)
            return x + self.attention(y) + self.mlp(y)
        x = x + self.attention(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class GPT(nn.Module):
    def __init__(self, m, seq_len, recompute):
        super().__init__()
        h = m["hidden"]
        self.embed = nn.Embedding(m["vocab"], h)
        self.pos = nn.Embedding(max(seq_len, m.get("max_positions") or 0), h) if m["positional"] == "learned" else None
        self.blocks = nn.ModuleList(Block(m) for _ in range(m["layers"]))
        self.norm = nn.LayerNorm(h) if m["norm"] == "layernorm" else nn.RMSNorm(h)
        self.head = nn.Linear(h, m["vocab"], bias=False)
        if m["tied_embeddings"]:
            self.head.weight = self.embed.weight
        self.recompute = recompute

    def forward(self, tokens):
        x = self.embed(tokens)
        if self.pos is not None:
            x = x + self.pos(torch.arange(tokens.shape[1], device=tokens.device))
        for blk in self.blocks:
            if self.recompute == "full":
                x = torch.utils.checkpoint.checkpoint(blk, x, use_reentrant=False)
            else:
                x = blk(x)
        return self.head(self.norm(x))


def wrap(model, strategy, args, local_rank, world):
    """The model under the strategy, and the optimizer (and DeepSpeed engine if any)."""
    if strategy == "ddp":
        model = nn.parallel.DistributedDataParallel(model.cuda(), device_ids=[local_rank],
                                                    bucket_cap_mb=args.bucket_mb)
        trainable = [p for p in model.parameters() if p.requires_grad]  # LoRA: the adapters only
        return model, torch.optim.AdamW(trainable, lr=1e-4, fused=True), None
    if strategy.startswith("fsdp_"):
        from functools import partial
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, MixedPrecision, ShardingStrategy
        from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy
        kind = {"fsdp_full_shard": ShardingStrategy.FULL_SHARD, "fsdp_shard_grad_op": ShardingStrategy.SHARD_GRAD_OP,
                "fsdp_hybrid_shard": ShardingStrategy.HYBRID_SHARD}[strategy]
        mp = MixedPrecision(param_dtype=torch.bfloat16, reduce_dtype=torch.bfloat16, buffer_dtype=torch.bfloat16)
        model = FSDP(model, sharding_strategy=kind, mixed_precision=mp, device_id=local_rank, use_orig_params=True,
                     auto_wrap_policy=partial(transformer_auto_wrap_policy, transformer_layer_cls={Block}))
        return model, torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True), None
    try:
        import deepspeed
    except ImportError:
        sys.exit(f"train_probe: {strategy} needs DeepSpeed, which is not installed")
    stage = int(strategy[-1])
    config = {"train_micro_batch_size_per_gpu": args.micro_batch, "gradient_accumulation_steps": args.grad_accum,
              "bf16": {"enabled": True}, "zero_optimization": {"stage": stage, "overlap_comm": True},
              "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}}}
    engine, optimizer, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
    return engine, optimizer, engine


def profiled_kernels(prof):
    """(name, start s, duration s) of the GPU's own work in a torch.profiler run: read from its
    Chrome trace by event category, so that annotation and synchronisation ranges shown on the
    GPU's rows are not taken for kernels (categories.kernels_from_trace)."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            return categories.kernels_from_trace(json.load(f))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="catalog name, e.g. gpt2-xl")
    p.add_argument("--strategy", required=True, choices=sorted(record.STRATEGY))
    p.add_argument("--micro-batch", type=int, required=True)
    p.add_argument("--grad-accum", type=int, default=1)
    p.add_argument("--seq-len", type=int, required=True)
    p.add_argument("--recompute", choices=["none", "full"], default="none")
    p.add_argument("--bucket-mb", type=float, default=25.0, help="DDP bucket_cap_mb (PyTorch default 25)")
    p.add_argument("--warmup", type=int, default=5, help="untimed steps")
    p.add_argument("--steps", type=int, default=20, help="timed steps")
    p.add_argument("--kernels", choices=["eager", "compiled"], default="eager",
                   help="eager PyTorch, or the model under torch.compile")
    p.add_argument("--lora-rank", type=int, default=0, help="> 0: LoRA fine-tune with adapters of this rank on q, v")
    p.add_argument("--profile-steps", type=int, default=3,
                   help="steps profiled for the kernel categories after the timed ones (0: none)")
    p.add_argument("--out", required=True, help="runs.jsonl to append the record to")
    p.add_argument("--machine", required=True, help="name of the machine, as under calibrate/data/")
    p.add_argument("--intra-node", default=None, help="nvswitch, nvlink-mesh, pcie (record field)")
    return p.parse_args()


def build_model(m, args):
    model = GPT(m, args.seq_len, args.recompute)
    if args.lora_rank > 0:  # the frozen base in bf16 (as PEFT loads it), adapters in fp32
        model = model.cuda().to(torch.bfloat16).requires_grad_(False)
        for blk in model.blocks:
            blk.add_lora(args.lora_rank)
    return model


def main():
    args = parse_args()
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", world))
    torch.cuda.set_device(local_rank)
    torch.manual_seed(1234 + rank)
    m = catalog_model(args.model)

    model = build_model(m, args)
    params = sum(p.numel() for p in model.parameters())  # tied weights counted once
    bf16_autocast = args.strategy == "ddp"  # FSDP and DeepSpeed cast themselves
    try:
        net, optimizer, engine = wrap(model, args.strategy, args, local_rank, world)
        if args.kernels == "compiled":
            net = torch.compile(net)
        tokens = torch.randint(0, m["vocab"], (args.micro_batch, args.seq_len + 1), device="cuda")

        def step():
            for micro in range(args.grad_accum):
                with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16_autocast):
                    logits = net(tokens[:, :-1])
                    loss = F.cross_entropy(logits.float().view(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1))
                if engine is not None:
                    engine.backward(loss)
                    engine.step()
                else:
                    last = micro + 1 == args.grad_accum
                    if args.strategy == "ddp" and not last:
                        with net.no_sync():
                            (loss / args.grad_accum).backward()
                    else:
                        (loss / args.grad_accum).backward()
            if engine is None:
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)

        step_times = []
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        for i in range(args.warmup + args.steps):
            if i == args.warmup:
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
            start.record()
            step()
            end.record()
            torch.cuda.synchronize()
            if i >= args.warmup:
                step_times.append(start.elapsed_time(end) / 1000.0)
        # The slowest rank sets the step: take the max over ranks of each step's time.
        t = torch.tensor(step_times, device="cuda")
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        step_times = t.tolist()
        peak = torch.cuda.max_memory_allocated()
        peak_reserved = torch.cuda.max_memory_reserved()
        split, attention, top = None, None, []
        if args.profile_steps > 0:
            from torch.profiler import ProfilerActivity, profile
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                for _ in range(args.profile_steps):
                    step()
                torch.cuda.synchronize()
            # The window: the profiled steps at the median unprofiled step time, so the
            # profiler's own CPU overhead does not show as idle GPU time.
            kernels = profiled_kernels(prof)
            split = categories.split(kernels, args.profile_steps * statistics.median(step_times), args.profile_steps)
            attention = categories.attention_kernel(kernels)
            top = categories.top_kernels(kernels, args.profile_steps)
    except torch.cuda.OutOfMemoryError:
        if rank == 0:
            print(f"train_probe: out of memory: {args.model} {args.strategy} micro-batch {args.micro_batch} "
                  f"seq {args.seq_len}; no record written", file=sys.stderr)
        dist.destroy_process_group()
        return 3
    if rank == 0:
        rec = record.make_record(
            model=m, params=params, gpu_name=torch.cuda.get_device_name(), gpus=world, gpus_per_node=local_world,
            nodes=max(1, world // local_world), intra_node=args.intra_node if world > 1 else None,
            strategy=args.strategy, recompute=args.recompute, precision="bf16_mixed", micro_batch=args.micro_batch,
            grad_accum=args.grad_accum, seq_len=args.seq_len, step_times_s=step_times, peak_memory_bytes=peak,
            peak_reserved_bytes=peak_reserved, machine=args.machine, torch_version=torch.__version__,
            nccl_version=".".join(map(str, torch.cuda.nccl.version())), run_tag=time.strftime("%Y%m%dT%H%M%S"),
            categories=split, kernels=args.kernels, lora_rank=args.lora_rank, attention_kernel=attention)
        with open(args.out, "a") as f:
            f.write(record.dumps(rec) + "\n")
        if top:  # what each category is made of, beside the records: runs.jsonl -> runs.kernels.jsonl
            with open(os.path.splitext(args.out)[0] + ".kernels.jsonl", "a") as f:
                f.write(json.dumps({"id": rec["id"], "per_step": top}) + "\n")
        cats = "" if not split else ", " + ", ".join(f"{k} {1e3 * v:.1f} ms" for k, v in split.items())
        print(f"train_probe: {args.model} {args.strategy} {args.kernels} x{world}: median step "
              f"{statistics.median(step_times):.4f} s{cats}, peak {peak / 2**30:.1f} GiB -> {args.out}")
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
