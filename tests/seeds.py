#!/usr/bin/env python3
"""Golden outputs and trend checks for the scenarios under scenarios/seeds/.

  seeds.py STEPCAST check     compare `predict --json` of every seed with tests/golden/
                              (relative tolerance 1e-6 on every number) and check the
                              orders the seed experiments report
  seeds.py STEPCAST update    rewrite tests/golden/ from the current build
  seeds.py STEPCAST readme    print the README's predicted-vs-reported table (Markdown)
"""
import json
import math
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
SEEDS = sorted((ROOT / "scenarios" / "seeds").glob("*.json"))
GOLDEN = ROOT / "tests" / "golden"
# Numbers compared in the golden files (a stable subset of the JSON report).
KEYS = ["gpus", "nodes", "strategy", "step_time_s", "time_per_epoch_s", "tokens_per_s_per_gpu", "mfu",
        "memory_per_gpu_bytes", "fits"]
REL_TOL = 1e-6


def predict(stepcast, seed):
    out = subprocess.run([stepcast, "predict", "--json", str(seed)], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def summary(d):
    s = {k: d[k] for k in KEYS}
    s["step_no_overlap_s"] = d["bounds"]["no_overlap_s"]
    s["step_perfect_overlap_s"] = d["bounds"]["perfect_overlap_s"]
    return s


def same(a, b):
    if isinstance(a, float) or isinstance(b, float):
        return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=1e-12)
    return a == b


def check_orders(p):
    """The orders seed experiment 1 reports (shared/reference/seed-experiments.md)."""
    e = {k: v["time_per_epoch_s"] for k, v in p.items()}
    rules = [
        ("16-GPU ZeRO-3 over 1 Gb/s is slower than 1 GPU",
         e["falcon7b-lora-zero3-16gpu-1gbe"] > e["falcon7b-lora-1gpu"]),
        ("8-GPU ZeRO-2 is more than 6x faster than 1 GPU",
         e["falcon7b-lora-1gpu"] / e["falcon7b-lora-zero2-8gpu"] > 6),
        ("8-GPU ZeRO-3 is slower than 8-GPU ZeRO-2, by less than 50%",
         1 < e["falcon7b-lora-zero3-8gpu"] / e["falcon7b-lora-zero2-8gpu"] < 1.5),
        ("16-GPU ZeRO-2 over 1 Gb/s is faster than 8-GPU ZeRO-2, but by less than 2x",
         1 < e["falcon7b-lora-zero2-8gpu"] / e["falcon7b-lora-zero2-16gpu-1gbe"] < 2),
        ("seed 3: 8 A100 finish an epoch faster than 3 A100",
         e["lightning-ddp-8xa100"] < e["lightning-ddp-3xa100"]),
        ("seed 3: 3 H100 take about as long as 6 A100 (within 25%)",
         abs(e["lightning-ddp-3xh100"] / e["lightning-ddp-6xa100"] - 1) < 0.25),
        ("seed 4: 400 Gb/s per node is faster than 100 Gb/s",
         e["rule-of-thumb-10b-4x8a100-400g"] < e["rule-of-thumb-10b-4x8a100-100g"]),
    ]
    bad = [name for name, ok in rules if not ok]
    for name, ok in rules:
        print(f"{'ok  ' if ok else 'FAIL'} {name}")
    return bad


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in ("check", "update", "readme"):
        print(__doc__)
        return 2
    stepcast, mode = sys.argv[1], sys.argv[2]
    preds = {seed.stem: predict(stepcast, seed) for seed in SEEDS}
    if mode == "update":
        GOLDEN.mkdir(exist_ok=True)
        for name, d in preds.items():
            (GOLDEN / f"{name}.json").write_text(json.dumps(summary(d), indent=2, sort_keys=True) + "\n")
        print(f"wrote {len(preds)} golden files to {GOLDEN}")
        return 0
    if mode == "readme":
        print("| scenario | GPUs | strategy | reported | predicted epoch | error | simulated step (s) [lower bound .. no overlap] | memory/GPU (GiB) |")
        print("|---|---:|---|---|---:|---:|---|---:|")
        for name, d in preds.items():
            m = (d.get("measured") or {}).get("time_per_epoch_s")
            rep = f"{m['measured'] / 60:.1f} min" if m else "(qualitative)"
            err = f"{100 * m['error']:+.0f}%" if m else "-"
            b = d["bounds"]
            print(f"| {name} | {d['gpus']} | {d['strategy']} | {rep} | {d['time_per_epoch_s'] / 60:.1f} min | {err} | "
                  f"{d['step_time_s']:.3g} [{b['perfect_overlap_s']:.3g} .. {b['no_overlap_s']:.3g}] | "
                  f"{d['memory_per_gpu_bytes'] / 2**30:.1f}{'' if d['fits'] else ' (OOM)'} |")
        return 0
    failures = []
    for name, d in preds.items():
        path = GOLDEN / f"{name}.json"
        if not path.exists():
            failures.append(f"{name}: no golden file (run `tests/seeds.py {stepcast} update`)")
            continue
        want = json.loads(path.read_text())
        got = summary(d)
        for k, v in want.items():
            if not same(got.get(k), v):
                failures.append(f"{name}: {k} = {got.get(k)!r}, golden {v!r}")
    failures += [f"order: {b}" for b in check_orders(preds)]
    for f in failures:
        print("FAIL", f)
    print(f"{len(preds)} seeds, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
