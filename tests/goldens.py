#!/usr/bin/env python3
"""Golden figures of every bundled scenario, and the orders the seed experiments report.

  goldens.py STEPCAST check    compare `predict --json` of every scenario under scenarios/
                               with its golden file under tests/golden/<folder>/ (relative
                               tolerance 1e-9 on every number) and check the orders the seed
                               experiments report
  goldens.py STEPCAST update   rewrite tests/golden/ from the current build and print what
                               changed, figure by figure (old -> new)
  goldens.py STEPCAST readme   print the predicted-vs-reported table of the seeds (Markdown)
"""
import json
import math
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
FOLDERS = ["examples", "bench", "plan", "reference", "seeds"]
GOLDEN = ROOT / "tests" / "golden"
# The summary figures pinned: the stable top of the JSON report and the simulation's parts.
KEYS = ["gpus", "nodes", "strategy", "step_time_s", "time_per_epoch_s", "tokens_per_s_per_gpu", "mfu", "hfu",
        "memory_per_gpu_bytes", "fits"]
SIMULATION_KEYS = ["compute_busy_s", "comm_busy_s", "comm_exposed_s", "tasks"]
REL_TOL = 1e-9


def scenarios():
    """(folder, path) of every bundled scenario, in a fixed order."""
    return [(folder, p) for folder in FOLDERS for p in sorted((ROOT / "scenarios" / folder).glob("*.json"))]


def predict(stepcast, path):
    out = subprocess.run([stepcast, "predict", "--json", str(path)], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def summary(d):
    s = {k: d[k] for k in KEYS}
    s["step_no_overlap_s"] = d["bounds"]["no_overlap_s"]
    s["step_perfect_overlap_s"] = d["bounds"]["perfect_overlap_s"]
    for k in SIMULATION_KEYS:
        s[f"simulation_{k}"] = d["simulation"][k]
    s["memory_verdict"] = d["memory"]["verdict"]
    return s


def same(a, b):
    if isinstance(a, float) or isinstance(b, float):
        return a is not None and b is not None and math.isclose(a, b, rel_tol=REL_TOL, abs_tol=1e-12)
    return a == b


def differences(name, want, got):
    """One line per figure that differs between a golden summary and the current one."""
    return [f"{name}: {k}: {want.get(k)!r} -> {got.get(k)!r}" for k in sorted(set(want) | set(got))
            if not same(got.get(k), want.get(k))]


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
    for name, ok in rules:
        print(f"{'ok  ' if ok else 'FAIL'} {name}")
    return [name for name, ok in rules if not ok]


def readme_table(seeds):
    print("| scenario | GPUs | strategy | reported | predicted epoch | error | simulated step (s) [lower bound .. no overlap] | memory/GPU (GiB) |")
    print("|---|---:|---|---|---:|---:|---|---:|")
    for name, d in seeds.items():
        m = (d.get("measured") or {}).get("time_per_epoch_s")
        rep = f"{m['measured'] / 60:.1f} min" if m else "(qualitative)"
        err = f"{100 * m['error']:+.0f}%" if m else "-"
        b = d["bounds"]
        print(f"| {name} | {d['gpus']} | {d['strategy']} | {rep} | {d['time_per_epoch_s'] / 60:.1f} min | {err} | "
              f"{d['step_time_s']:.3g} [{b['perfect_overlap_s']:.3g} .. {b['no_overlap_s']:.3g}] | "
              f"{d['memory_per_gpu_bytes'] / 2**30:.1f}{'' if d['fits'] else ' (OOM)'} |")


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in ("check", "update", "readme"):
        print(__doc__)
        return 2
    stepcast, mode = sys.argv[1], sys.argv[2]
    if mode == "readme":
        readme_table({p.stem: predict(stepcast, p) for folder, p in scenarios() if folder == "seeds"})
        return 0
    preds = {(folder, p.stem): predict(stepcast, p) for folder, p in scenarios()}
    failures = []
    for (folder, stem), d in preds.items():
        path = GOLDEN / folder / f"{stem}.json"
        want = json.loads(path.read_text()) if path.exists() else {}
        changed = differences(f"{folder}/{stem}", want, summary(d)) if want else [f"{folder}/{stem}: new"]
        if mode == "update":
            if changed:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(json.dumps(summary(d), indent=2, sort_keys=True) + "\n")
                print("\n".join(changed))
        else:
            failures += changed if want else [f"{folder}/{stem}: no golden file (run `tests/goldens.py {stepcast} update`)"]
    stale = [p for p in GOLDEN.rglob("*.json") if (p.parent.name, p.stem) not in preds]
    for p in stale:
        if mode == "update":
            p.unlink()
            print(f"{p.parent.name}/{p.stem}: removed (no such scenario)")
        else:
            failures.append(f"{p.parent.name}/{p.stem}: golden file of no scenario")
    if mode == "update":
        print(f"{len(preds)} scenarios, golden files in {GOLDEN.relative_to(ROOT)}")
        return 0
    failures += [f"order: {b}" for b in check_orders({stem: d for (folder, stem), d in preds.items() if folder == "seeds"})]
    for f in failures:
        print("FAIL", f)
    print(f"{len(preds)} scenarios, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
