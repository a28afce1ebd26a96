#!/usr/bin/env python3
"""Renders docs/benchmarks.md's tables from `stepcast_bench --json` (read on stdin), or with
--plan its plan table from `stepcast_plan_bench --json`.

    taskset -c 0 build/bench/stepcast_bench --json | python3 bench/readme_table.py
    taskset -c 0 build/bench/stepcast_plan_bench --json | python3 bench/readme_table.py --plan
"""
import json
import sys


def ms(x):
    return f"{x:.3g}"


def plan_table(d):
    print("| case | layouts enumerated | screened | screen median / min (ms) | screened / s "
          "| simulated | whole plan median / min (ms) | winner |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for c in d["cases"]:
        print(f"| {c['case']} | {c['enumerated']:,} | {c['screened']:,} "
              f"| {ms(c['screen_median_ms'])} / {ms(c['screen_min_ms'])} | {c['screened_per_s']:,.0f} "
              f"| {c['simulated']} | {ms(c['plan_median_ms'])} / {ms(c['plan_min_ms'])} | {c['winner']} |")


def main():
    d = json.load(sys.stdin)
    if "--plan" in sys.argv[1:]:
        plan_table(d)
        return
    print("| case | GPUs | rank classes | tasks | events | predict() median / min (ms) "
          "| lower+simulate median / min (ms) | events/s (lower+simulate) | peak RSS (MiB) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for c in d["cases"]:
        print(f"| {c['case']} | {c['gpus']:,} | {c['rank_classes']} | {c['tasks']:,} | {c['events']:,} "
              f"| {ms(c['predict_median_ms'])} / {ms(c['predict_min_ms'])} "
              f"| {ms(c['lower_simulate_median_ms'])} / {ms(c['lower_simulate_min_ms'])} "
              f"| {c['events_per_s'] / 1e6:.1f} M | {c['peak_rss_mib']:.1f} |")
    print()
    print("| rank classes (1,024 GPUs) | tasks | events | lower+simulate median / min (ms) "
          "| min per class (ms) | min time vs previous row | events/s |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    prev = None
    for r in d["rank_class_sweep"]["rows"]:
        growth = f"x{r['lower_simulate_min_ms'] / prev:.2f}" if prev else ""
        prev = r["lower_simulate_min_ms"]
        print(f"| {r['rank_classes']} | {r['tasks']:,} | {r['events']:,} "
              f"| {ms(r['lower_simulate_median_ms'])} / {ms(r['lower_simulate_min_ms'])} "
              f"| {ms(r['ms_per_class'])} | {growth} | {r['events_per_s'] / 1e6:.1f} M |")


if __name__ == "__main__":
    main()
