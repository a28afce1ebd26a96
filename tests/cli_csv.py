#!/usr/bin/env python3
"""Checks a table command's --csv against its --json (--csv on scale, plan,
compare and validate).

usage: cli_csv.py --rows N -- STEPCAST COMMAND ARGS...

Runs `STEPCAST COMMAND ARGS --csv` and `... --json`, and checks that the CSV is one header
row whose every column names its unit (or is a count or a text column listed below), then
one row per JSON row (N of them), every row as wide as the header, and every cell equal to
the JSON row's figure (numbers to 1e-12 relative; empty where JSON has null). Exits 1 with
the reasons on failure.
"""
import csv
import io
import json
import math
import subprocess
import sys

# Column suffixes that are units; columns without one must be counts or text (below).
UNITS = ("_s", "_bytes", "_usd", "usd_per_million_tokens", "_fraction", "_x",
         "_pct", "_bool", "_per_s", "_per_s_per_gpu", "_sequences", "_steps", "_unit", "tokens_per_step")
COUNTS_AND_TEXT = {"gpus", "nodes", "tp", "dp", "pp", "vpp", "cp", "ep", "offload", "schedule", "rank", "layout", "strategy", "recompute", "memory_verdict",
                   "scenario", "file", "model", "hardware", "gpu", "id", "metric", "status", "source", "trust"}
# CSV column -> key of the JSON row ("a.b": nested), where the names differ.
JSON_KEY = {"mfu_fraction": "mfu", "baseline_bool": "baseline", "speedup_x": "speedup",
            "scaling_efficiency_fraction": "scaling_efficiency", "memory_verdict": "verdict",
            "fits_bool": "fits", "break_even_price_per_gpu_hour_usd": "break_even_price_per_gpu_hour_usd", "micro_batch_sequences": "micro_batch", "grad_accum_steps": "grad_accum",
            "global_batch_sequences": "global_batch", "measured_in_metric_unit": "measured", "predicted_in_metric_unit": "predicted"}
# plan's layout columns are fields of the row's "layout" object.
PLAN_LAYOUT_KEY = {"layout": "name", "strategy": "strategy", "tp": "tp", "sp_bool": "sp", "dp": "dp", "pp": "pp", "vpp": "vpp", "schedule": "schedule", "cp": "cp", "ep": "ep", "offload": "offload",
                   "micro_batch_sequences": "micro_batch", "grad_accum_steps": "grad_accum", "recompute": "recompute"}


def lookup(row, column, command):
    if command == "plan" and column in PLAN_LAYOUT_KEY:
        return row["layout"][PLAN_LAYOUT_KEY[column]]
    if column.startswith("objective_"):
        return row["objective"]
    return row[JSON_KEY.get(column, column)]


def same(cell, value):
    if value is None:
        return cell == ""
    if isinstance(value, bool):
        return cell == ("true" if value else "false")
    if isinstance(value, (int, float)):
        try:
            got = float(cell)
        except ValueError:
            return False
        return math.isclose(got, value, rel_tol=1e-12, abs_tol=0.0)
    return cell == str(value)


def main(argv):
    if "--" not in argv or argv[:1] != ["--rows"]:
        print(__doc__)
        return 99
    expected_rows = int(argv[1])
    command_line = argv[argv.index("--") + 1:]
    command = command_line[1]
    out = subprocess.run(command_line + ["--csv"], capture_output=True, text=True)
    doc = json.loads(subprocess.run(command_line + ["--json"], capture_output=True, text=True, check=True).stdout)
    problems = []
    if out.returncode != 0:
        problems.append(f"--csv exited {out.returncode}: {out.stderr.strip()}")
    table = list(csv.reader(io.StringIO(out.stdout)))
    header, rows = (table[0], table[1:]) if table else ([], [])
    for column in header:
        if column not in COUNTS_AND_TEXT and not column.endswith(UNITS):
            problems.append(f"column {column!r} names no unit")
    if command == "validate":
        expected = doc["runs"]
    elif "plans" in doc:  # plan --gpus-range: each count's ranked rows in turn, after its gpus
        expected = [dict(row, gpus=plan["gpus"]) for plan in doc["plans"] for row in plan["rows"]]
    else:
        expected = doc["rows"]
    if len(rows) != expected_rows or len(rows) != len(expected):
        problems.append(f"{len(rows)} CSV rows, expected {expected_rows} ({len(expected)} in --json)")
    for i, (row, jrow) in enumerate(zip(rows, expected), start=1):
        if len(row) != len(header):
            problems.append(f"row {i}: {len(row)} fields, header has {len(header)}")
            continue
        for column, cell in zip(header, row):
            try:
                value = lookup(jrow, column, command)
            except (KeyError, TypeError):
                problems.append(f"column {column!r} has no figure in the --json row")
                continue
            if not same(cell, value):
                problems.append(f"row {i} {column}: CSV {cell!r}, JSON {value!r}")
    for p in problems:
        print(f"cli_csv: {' '.join(command_line)}: {p}")
    if not problems:
        print(f"cli_csv: {command}: {len(header)} columns, {len(rows)} rows agree with --json")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
