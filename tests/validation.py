#!/usr/bin/env python3
"""The validation gate and the accuracy table of docs/accuracy.md, from `stepcast validate --json`.

    tests/validation.py STEPCAST [RUNS] check    # fails when leave-one-source-out accuracy got worse
    tests/validation.py STEPCAST [RUNS] readme   # prints docs/accuracy.md's accuracy table

RUNS defaults to data/validation/runs.jsonl, the measured runs shipped with the project
(the `validation` ctest names it).

`check` is `stepcast validate RUNS --json --gate tests/validation_thresholds.json`, the gate
every user has (validate/gate.hpp): on the leave-one-source-out summary (`summary_loso`:
nothing is fitted to measured runs, so every record is predicted without its own source) the
median and p90 |error| may not rise above, the ordering accuracy and the records compared not
fall below, the committed values. Thresholds start where the model stands and may only tighten.
Exit codes: 0 pass, 1 worse than a threshold (the gate's exit 3) or the runs file is absent.
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RUNS = os.path.join(os.path.dirname(HERE), "data", "validation", "runs.jsonl")
THRESHOLDS = os.path.join(HERE, "validation_thresholds.json")


def run(stepcast, runs, *gate):
    out = subprocess.run([stepcast, "validate", runs, "--json", *gate], capture_output=True, text=True)
    if out.returncode not in ((0, 3) if gate else (0,)):
        sys.exit(f"stepcast validate failed ({out.returncode}): {out.stderr}")
    return json.loads(out.stdout), out.returncode, out.stderr


def check(stepcast, runs):
    d, rc, gate = run(stepcast, runs, "--gate", THRESHOLDS)
    s = d["summary_loso"]
    print(f"leave one source out: {s['count']} runs, {s['skipped']} skipped, median |error| "
          f"{s['median_abs_error_pct']:.1f}%, p90 {s['p90_abs_error_pct']:.1f}%, max {s['max_abs_error_pct']:.1f}%, "
          f"ordering {100 * s['ordering_accuracy']:.1f}% of {s['ordering_pairs']} pairs")
    print(gate, end="")
    return 1 if rc == 3 else 0


def readme(d):
    print("| records | runs | skipped | median \\|error\\| (%) | p90 \\|error\\| (%) | max \\|error\\| (%) "
          "| ordering (% of pairs) |")
    print("|---|---:|---:|---:|---:|---:|---:|")

    def row(name, s):
        pairs = s["ordering_pairs"]
        ordering = f"{100 * s['ordering_accuracy']:.1f} ({pairs})" if pairs > 0 else "- (0)"
        print(f"| {name} | {s['count']} | {s['skipped']} | {s['median_abs_error_pct']:.1f} "
              f"| {s['p90_abs_error_pct']:.1f} | {s['max_abs_error_pct']:.1f} "
              f"| {ordering} |")

    row("**leave one source out**", d["summary_loso"])
    for src in d["sources"]:
        if src["count"] > 0:
            row("&nbsp;&nbsp;" + src["source"], src)
    for g in d["groups"]:
        if g["group"].startswith("gpu: ") and g["count"] > 0:
            row("&nbsp;&nbsp;" + g["group"], g)
    row("**fit-free** (isolated kernel rates)", d["summary_fit_free"])


def main():
    if len(sys.argv) == 3:
        sys.argv.insert(2, RUNS)
    if len(sys.argv) != 4 or sys.argv[3] not in ("check", "readme"):
        sys.exit(__doc__)
    stepcast, runs, mode = sys.argv[1:]
    if not os.path.exists(runs):
        sys.exit(f"{runs} is absent: the measured runs ship in data/validation/")
    sys.exit(check(stepcast, runs) if mode == "check" else readme(run(stepcast, runs)[0]))


if __name__ == "__main__":
    main()
