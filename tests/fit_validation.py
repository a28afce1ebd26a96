#!/usr/bin/env python3
"""Fits the global efficiencies per GPU generation to the fitting part of the validation
records and writes model/catalog/fitted.json.

    tests/fit_validation.py STEPCAST [RUNS] show    # fit and print, write nothing
    tests/fit_validation.py STEPCAST [RUNS] write   # fit and write model/catalog/fitted.json

RUNS defaults to data/validation/runs.jsonl, the measured runs shipped with the project.

What is fitted, per GPU generation with at least MIN_RECORDS trusted, predicted records in
the fitting part (FNV-1a of the id even, as `stepcast validate` splits): the large-GEMM
fraction of peak, the flash-attention fraction of peak and the memory-bound efficiency.
Never a value per record. Objective: mean |ln(predicted / measured)| over those records.
Method: coordinate descent on a grid (3 passes, each value in [0.15, 0.95]). Each trial
runs `stepcast validate --json` on a data folder whose model/catalog/fitted.json holds the
trial values (STEPCAST_DATA_DIR); everything else is the checkout's.
"""
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PARAMS = ["gemm_max_fraction", "attention_efficiency", "memory_efficiency"]
MIN_RECORDS = 10
RUNS = os.path.join(ROOT, "data", "validation", "runs.jsonl")


def arch_of_gpu():
    with open(os.path.join(ROOT, "topologies", "catalog", "gpus.json")) as f:
        return {g["name"]: g["arch"] for g in json.load(f)["gpus"]}


def validate(stepcast, runs, data_dir):
    env = dict(os.environ, STEPCAST_DATA_DIR=data_dir)
    out = subprocess.run([stepcast, "validate", runs, "--json"], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        sys.exit(f"stepcast validate failed: {out.stderr}")
    return json.loads(out.stdout)["runs"]


def objective(rows, arch, archs, split="fit"):
    errs = [abs(math.log(r["predicted"] / r["measured"])) for r in rows
            if r["status"] == "ok" and r["split"] == split and r["trust"] != "low"
            and archs.get(r["gpu"]) == arch and r["predicted"] > 0 and r["measured"] > 0]
    return (sum(errs) / len(errs) if errs else 0.0), len(errs)


def main():
    if len(sys.argv) == 3:
        sys.argv.insert(2, RUNS)
    if len(sys.argv) != 4 or sys.argv[3] not in ("show", "write"):
        sys.exit(__doc__)
    stepcast, runs, mode = sys.argv[1:]
    if not os.path.exists(runs):
        sys.exit(f"{runs} is absent")
    archs = arch_of_gpu()
    tmp = tempfile.mkdtemp(prefix="stepcast-fit-")
    try:
        os.makedirs(os.path.join(tmp, "model", "catalog"))
        for name in os.listdir(os.path.join(ROOT, "model", "catalog")):
            if name != "fitted.json":
                os.symlink(os.path.join(ROOT, "model", "catalog", name), os.path.join(tmp, "model", "catalog", name))
        os.symlink(os.path.join(ROOT, "topologies"), os.path.join(tmp, "topologies"))
        fitted_path = os.path.join(tmp, "model", "catalog", "fitted.json")

        def write(entries):
            with open(fitted_path, "w") as f:
                json.dump({"fitted": entries}, f)

        write([])
        base = validate(stepcast, runs, tmp)
        candidates = sorted({archs.get(r["gpu"]) for r in base if r["status"] == "ok"} - {None})
        entries = []
        for arch in candidates:
            start, n = objective(base, arch, archs)
            if n < MIN_RECORDS:
                print(f"{arch}: {n} fitting records, fewer than {MIN_RECORDS}: not fitted")
                continue
            values = {"gemm_max_fraction": 0.75, "attention_efficiency": 0.5, "memory_efficiency": 0.8}
            best = None
            grid = [0.15 + 0.05 * i for i in range(17)]
            for _ in range(3):
                for p in PARAMS:
                    scores = []
                    for v in grid:
                        trial = dict(values, **{p: v})
                        write(entries + [dict(arch=arch, fitted_on="trial", **trial)])
                        score, _ = objective(validate(stepcast, runs, tmp), arch, archs)
                        scores.append((score, v))
                    best, values[p] = min(scores)
            write(entries + [dict(arch=arch, fitted_on="trial", **values)])
            after = validate(stepcast, runs, tmp)
            check_before, nc = objective(base, arch, archs, "check")
            check_after, _ = objective(after, arch, archs, "check")
            note = (f"{n} trusted fitting-part records of {arch} GPUs in data/validation/runs.jsonl "
                    f"(FNV-1a(id) even); mean |ln(pred/meas)| {start:.3f} -> {best:.3f} on them, "
                    f"{check_before:.3f} -> {check_after:.3f} on the {nc} checking-part records")
            print(f"{arch}: " + ", ".join(f"{k} {v:.2f}" for k, v in values.items()) + f"; {note}")
            entries.append(dict(arch=arch, fitted_on=note, **{k: round(v, 2) for k, v in values.items()}))
        if mode == "write":
            target = os.path.join(ROOT, "model", "catalog", "fitted.json")
            with open(target) as f:
                doc = json.load(f)
            doc["fitted"] = entries
            with open(target, "w") as f:
                json.dump(doc, f, indent=2)
                f.write("\n")
            print(f"wrote {target}")
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
