#!/usr/bin/env python3
"""Runs the GPU-free block of docs/own-cluster.md as written (fit, fit in-step, predict and
validate with the fitted files), so that the DGX owner's loop cannot rot.

    package/own_cluster.py --doc docs/own-cluster.md --stepcast STEPCAST --source SOURCE_DIR

The block marked `<!-- own-cluster: fit-predict-validate -->` runs under
`bash -eo pipefail` with `stepcast` on PATH, in a folder holding what the GPU steps would
have written under its `M=` folder, recorded and synthetic in place of measured:
  raw.json        calibrate/fit/testdata/synthetic_kernel_raw.json (fit's known parameters)
  runs.jsonl      synthetic probe records measured at stepcast's own isolated GEMM and
                  attention times / 0.8 and / 0.9 (calibrate/fit/testdata/probe_round_trip.py)
  runs-2x8.jsonl  the published NeMo H100 runs (data/validation/nemo-h100.jsonl)
  my-job.json     scenarios/examples/llama3-8b-fsdp-16xh100.json (an H100 job)
Then: the hardware file and in-step fractions were written (fractions in (0, 1]), predict
named the calibration file, and the JUnit report parses with a case per record.
Exit status: 0 pass, 1 fail, 77 skipped (a build without the HTML report's charting library).
"""
import argparse
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

MARK = "<!-- own-cluster: fit-predict-validate -->"


def block(doc):
    lines = doc.read_text(encoding="utf-8").splitlines()
    if MARK not in lines:
        sys.exit(f"{doc}: no block marked {MARK}")
    start = lines.index(MARK) + 1
    if not lines[start].startswith("```"):
        sys.exit(f"{doc}: {MARK} must be followed by a fenced block")
    end = next(j for j in range(start + 1, len(lines)) if lines[j].startswith("```"))
    return "\n".join(lines[start + 1:end]) + "\n"


def fail(message):
    print(f"FAIL: {message}")
    return 1


def main():
    a = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    a.add_argument("--doc", type=pathlib.Path, required=True)
    a.add_argument("--stepcast", type=pathlib.Path, required=True)
    a.add_argument("--source", type=pathlib.Path, required=True)
    args = a.parse_args()
    script = block(args.doc)
    m = re.search(r"^M=(\S+)$", script, re.M)
    if not m:
        sys.exit(f"{args.doc}: the block sets no M=FOLDER")
    testdata = args.source / "calibrate" / "fit" / "testdata"
    with tempfile.TemporaryDirectory() as t:
        work = pathlib.Path(t)
        probe = subprocess.run([str(args.stepcast), "predict", "--html", str(work / "p.html"),
                                str(args.source / "scenarios/seeds/gpt2-xl-ddp-8xa100.json")],
                               capture_output=True, text=True)
        if "--html" in script and probe.returncode != 0 and "npm ci" in probe.stderr:
            print("skipped: this build has no charting library for --html (run `bash .ci/setup`)")
            return 77
        measured = work / m.group(1)
        measured.mkdir(parents=True)
        shutil.copy(testdata / "synthetic_kernel_raw.json", measured / "raw.json")
        subprocess.run([sys.executable, "-B", str(testdata / "probe_round_trip.py"), str(args.stepcast),
                        str(work / "round_trip")], check=True, stdout=subprocess.DEVNULL)
        shutil.copy(work / "round_trip" / "synthetic_probe_runs.jsonl", measured / "runs.jsonl")
        shutil.copy(args.source / "data" / "validation" / "nemo-h100.jsonl", measured / "runs-2x8.jsonl")
        shutil.copy(args.source / "scenarios" / "examples" / "llama3-8b-fsdp-16xh100.json", work / "my-job.json")
        env = {k: v for k, v in os.environ.items() if k not in ("STEPCAST_DATA_DIR", "STEPCAST_CATALOG_PATH")}
        env["PATH"] = os.pathsep.join([str(args.stepcast.parent), env.get("PATH", "")])
        r = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script], cwd=work, env=env,
                           capture_output=True, text=True)
        print(r.stdout[-3000:], r.stderr[-3000:], sep="\n")
        if r.returncode != 0:
            return fail(f"the block exited {r.returncode}")
        if "calibration file" not in r.stdout:
            return fail("predict named no rate from the calibration file")
        fractions = json.loads((measured / "in_step.json").read_text())
        if not 0 < fractions["gemm_fraction"] <= 1 or not 0 < fractions["attention_fraction"] <= 1:
            return fail(f"in-step fractions outside (0, 1]: {fractions['gemm_fraction']}, "
                        f"{fractions['attention_fraction']}")
        if json.loads((measured / "hardware.json").read_text())["format"] != "stepcast-hardware-v1":
            return fail("fit wrote no hardware file")
        xml = next(iter(re.findall(r'--junit "\$M/([^"]+)"', script)), None)
        records = sum(1 for f in ("runs.jsonl", "runs-2x8.jsonl")
                      for line in (measured / f).read_text().splitlines() if line.strip())
        cases = len(ET.parse(measured / xml).getroot().findall(".//testcase")) if xml else 0
        if cases != records:
            return fail(f"the JUnit report has {cases} test cases for {records} records")
    print("ok: docs/own-cluster.md's fit, fit in-step, predict and validate ran as written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
