#!/usr/bin/env python3
"""Round trip of `stepcast fit in-step` through the command line, on SYNTHETIC probe records.

synthetic_probe_template.jsonl holds training-probe records (calibrate/probe/record.py's
shape: GPT-2 XL and GPT-2 medium on one H100 SXM5, eager, flash attention) whose GEMM and
attention times are placeholders. This script

  1. fits the template once: the written file's "runs" give stepcast's isolated GEMM and
     attention time per step of each record (its current model, so nothing here goes stale);
  2. writes the records again with measured GEMM time = isolated / GEMM_FRACTION and
     attention time = isolated / ATTENTION_FRACTION (OUT_DIR/synthetic_probe_runs.jsonl);
  3. fits those and checks that gemm_fraction and attention_fraction come back within 1e-6,
     and that fitted_on carries the machine, the probe file and the commit given.

Usage: probe_round_trip.py STEPCAST OUT_DIR   (exit 0: the fractions came back)
"""

import json
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
GEMM_FRACTION = 0.8
ATTENTION_FRACTION = 0.9
METRIC = {"gemm": "gemm_time_s", "attention": "attention_time_s"}
DIVISOR = {"gemm": GEMM_FRACTION, "attention": ATTENTION_FRACTION}


def fit(stepcast, runs, out, *extra):
    subprocess.run([stepcast, "fit", "in-step", str(runs), "-o", str(out), *extra], check=True,
                   stdout=subprocess.DEVNULL)
    return json.loads(out.read_text(encoding="utf-8"))


def main() -> int:
    stepcast, out_dir = sys.argv[1], pathlib.Path(sys.argv[2])
    out_dir.mkdir(parents=True, exist_ok=True)
    template = HERE / "synthetic_probe_template.jsonl"
    isolated = {(r["id"], r["category"]): r["isolated_s"]
                for r in fit(stepcast, template, out_dir / "isolated.json")["runs"]}
    lines = []
    for line in template.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        for entry in record["measured"]["secondary"]:
            for category, metric in METRIC.items():
                if entry["metric"] == metric:
                    entry["value"] = isolated[(record["id"], category)] / DIVISOR[category]
        lines.append(json.dumps(record))
    runs = out_dir / "synthetic_probe_runs.jsonl"
    runs.write_text("\n".join(lines) + "\n", encoding="utf-8")
    doc = fit(stepcast, runs, out_dir / "in_step.json", "--machine", "synthetic H100 SXM5", "--commit", "0123abc")
    failures = []
    for key, want in (("gemm_fraction", GEMM_FRACTION), ("attention_fraction", ATTENTION_FRACTION)):
        if abs(doc[key] - want) > 1e-6:
            failures.append(f"{key}: {doc[key]!r}, expected {want} within 1e-6")
    provenance = doc["fitted_on"][0]
    for key, want in (("machine", "synthetic H100 SXM5"), ("commit", "0123abc"), ("probe_file", str(runs))):
        if provenance.get(key) != want:
            failures.append(f"fitted_on[0].{key}: {provenance.get(key)!r}, expected {want!r}")
    for f in failures:
        print(f)
    print(f"fit in-step round trip: gemm_fraction {doc['gemm_fraction']:.9f}, attention_fraction "
          f"{doc['attention_fraction']:.9f}; {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
