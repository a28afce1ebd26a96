"""Writes runs.jsonl, the probe records `stepcast validate` and `stepcast fit in-step` read,
from the two device calls' records as measured (raw-runs-1.jsonl, raw-runs-2.jsonl). Each
change is listed in README.md beside this file; run from the repository root:
    python3 calibrate/data/h200-x1/curate.py
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
MACHINE = "h200-x1"
# Per-category metrics that torch.profiler's GPU-side annotation and synchronisation ranges
# inflated in these records (README.md: "memory-bound and idle times left out").
DROPPED = {"memory_bound_time_s", "idle_time_s"}
ATTENTION_EXTRA = "attention_kernel_cudnn"


def curate(record):
    text = json.dumps(record).replace(MACHINE + "-b", MACHINE)  # the second call's machine name
    r = json.loads(text)
    r["measured"]["secondary"] = [m for m in r["measured"]["secondary"] if m["metric"] not in DROPPED]
    extras = r["strategy"]["extras"]
    if ATTENTION_EXTRA not in extras:
        extras.append(ATTENTION_EXTRA)
    r["notes"] += ("; curated by calibrate/data/h200-x1/curate.py: attention kernel cuDNN (PyTorch 2.11's SDPA "
                   "order on sm90), memory-bound and idle times left out (profiler annotation ranges counted in)")
    return r


def main():
    out = []
    for name in ("raw-runs-1.jsonl", "raw-runs-2.jsonl"):
        with open(os.path.join(HERE, name)) as f:
            out += [curate(json.loads(line)) for line in f if line.strip()]
    with open(os.path.join(HERE, "runs.jsonl"), "w") as f:
        for r in out:
            f.write(json.dumps(r) + "\n")
    print(f"wrote {len(out)} records to {os.path.join('calibrate/data', MACHINE, 'runs.jsonl')}")


if __name__ == "__main__":
    main()
