#!/usr/bin/env python3
"""The catalog's generation fits are what `stepcast fit generation` finds on the shipped runs.

  generation_fit_check.py STEPCAST RUNS

For each entry of model/catalog/in_step.json's "generations", re-runs the fit on RUNS on a
window of +-0.015 around the stored fraction at the fine step (0.005, no refinement: 7
candidates, each a validation of the generation's records) and checks that the fraction on
every source, and each fraction without a source that lies inside the window, come back.
A full re-fit (the whole grid) takes minutes; this checks that each stored value is still
the minimum of its neighbourhood, so a model change that moves the fit fails here until
`stepcast fit generation` is run again and its file committed.
"""
import json
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
CATALOG = ROOT / "model" / "catalog" / "in_step.json"
HALF_WINDOW = 0.015
STEP = 0.005


def main() -> int:
    stepcast, runs = sys.argv[1], sys.argv[2]
    stored = json.loads(CATALOG.read_text())
    failures = 0
    for gen in stored.get("generations", []):
        arch, f = gen["arch"], gen["gemm_fraction"]
        lo, hi = max(STEP, f - HALF_WINDOW), min(1.0, f + HALF_WINDOW)
        with tempfile.TemporaryDirectory() as tmp:
            out = pathlib.Path(tmp) / "in_step.json"
            subprocess.run([stepcast, "fit", "generation", runs, "--arch", arch, "-o", str(out),
                            "--from", f"{lo:.6f}", "--to", f"{hi:.6f}", "--step", str(STEP), "--refine", "0"],
                           check=True, stdout=subprocess.DEVNULL)
            fitted = next(g for g in json.loads(out.read_text())["generations"] if g["arch"] == arch)
        checks = [("every source", f, fitted["gemm_fraction"])]
        again = {w["source"]: w["gemm_fraction"] for w in fitted["without"]}
        for w in gen["without"]:
            if lo < w["gemm_fraction"] < hi:
                checks.append((f"without {w['source']}", w["gemm_fraction"], again.get(w["source"])))
        for what, want, got in checks:
            ok = got is not None and abs(got - want) < 1e-9
            failures += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {arch} {what}: stored {want}, re-fitted {got}")
    if failures:
        print(f"{failures} stored fraction(s) are no longer the fit: run `stepcast fit generation "
              f"{runs} --arch ARCH -o model/catalog/in_step.json` and commit it")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
