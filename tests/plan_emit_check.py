#!/usr/bin/env python3
"""`plan --emit` writes a scenario that `predict` reproduces to the last digit.

  plan_emit_check.py STEPCAST

For each case (a scenario, plan options, the ranks to emit), runs `stepcast plan --json
--emit FILE --emit-rank K`, then `stepcast predict FILE --json`, and checks that the
prediction's step time equals the plan row's exactly and that the emitted file names the
row's layout. The cases cover data parallelism (FSDP, ZeRO) and an interleaved pipeline with
context parallelism.
"""
import json
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
CASES = [
    ("tests/data/good/minimal.json", ["--top", "3", "--no-cp", "--no-offload"], [1, 2, 3]),
    ("tests/data/plan/llama2-70b-512xh100-fused.json", ["--global-batch", "1024", "--top", "2"], [1, 2]),
]


def run(stepcast, *args):
    done = subprocess.run([stepcast, *args], capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        sys.exit(f"stepcast {' '.join(args)} exited {done.returncode}: {done.stderr}")
    return json.loads(done.stdout)


def main():
    stepcast = sys.argv[1]
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for scenario, options, ranks in CASES:
            for rank in ranks:
                emitted = pathlib.Path(tmp) / f"rank{rank}.json"
                plan = run(stepcast, "plan", scenario, *options, "--json", "--emit", str(emitted), "--emit-rank",
                           str(rank))
                row = plan["rows"][rank - 1]
                predicted = run(stepcast, "predict", str(emitted), "--json")
                name = json.loads(emitted.read_text())["name"]
                ok = predicted["step_time_s"] == row["step_time_s"] and row["layout"]["name"] in name
                failures += not ok
                print(f"{'ok  ' if ok else 'FAIL'} {scenario} rank {rank} ({row['layout']['name']}): plan "
                      f"{row['step_time_s']!r} s, predict {predicted['step_time_s']!r} s")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
