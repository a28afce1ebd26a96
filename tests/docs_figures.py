#!/usr/bin/env python3
"""Checks the figures README.md and docs/ quote against what the program gives today.

  docs_figures.py STEPCAST BUILD_DIR            # check; exit 1 naming every figure that differs
  docs_figures.py STEPCAST BUILD_DIR --print    # print every expected figure, to paste

What is checked, each figure at the digits the text shows:
README.md: the first command's answer (step time, tokens, MFU, time and cost of the billion
tokens, memory, overlap), the headline accuracy, the error message of the exit-code example,
and the Python example, run as written with the module from BUILD_DIR/python (each `# ...`
line under an expression is its value).
docs/accuracy.md: the seed table (tests/goldens.py readme) and the accuracy table
(tests/validation.py readme); the prose of the seed explanations (speed-ups, epoch and step
times, memory, optimizer and all-reduce times); the record and source counts of each
measured-run file; the Ultra-Scale Playbook's counts, summary and signed medians by node count
(all runs, and TP across nodes); each held-out file's summaries, fit-free summary and the
per-record signed errors, speed-ups and ratios the prose quotes; the in-step fractions
(model/catalog/in_step.json, which the `generation_fit` ctest ties to `stepcast fit`); and the
figures of "What limits accuracy" (BigScience's sweep fit and fixed-cost range, llm-foundry's
signed medians by table and recompute, the NCCL model's bus bandwidths on the playbook's
cluster and on Jean Zay, the ordering pairs). Measured values the prose quotes are checked
against their record in data/validation/ where one holds them.
docs/model.md: every row of the NCCL table (tests/collective_measured_test.cpp: each row with
the constant it fed, skipped rows with their reason) and the counts and worst errors above it.
docs/commands.md: each example block that starts with `$ stepcast ...` (run as written; a
`...` stands for any text), the Llama-2-70B plans (as written, with fused gradient
accumulation, and the search counts at the default gap and at --gap 0 with the 405B case),
and `need` with 64 micro-steps.
docs/scenario.md: the schema table (`stepcast schema --markdown`), the overlap and
oversubscription examples, the error messages of the bad-input example, the catalog counts
and the duplicate-entry message.

docs/calibration.md, docs/testing.md, docs/sources.md, docs/ci.md and docs/own-cluster.md
quote no figure the program computes (their `$ stepcast` blocks, if any, are run like the
others; the workflows of ci.md and own-cluster.md run as written in their own ctests,
docs.ci_recipe and docs.own_cluster).

Not checked, by design: dated records (docs/history.md; docs/benchmarks.md, timings of one
machine on one day), timings and sizes quoted elsewhere ("about 10 min", "2.7 s and 1.2 GB
there on this machine"), facts of the sources (a model's shape, a paper's, datasheet's or
benchmark's figure, catalog constants with their source), counts of test cases, and the inputs
of experiments the prose reports in words (the grid of a joint fit). A sentence whose figure
cannot be recomputed here says what the program does in words instead.

Each expected figure is a string the flattened document (whitespace runs as one space) must
contain; the fix is to rerun with --print and paste, or to say why the figure moved. Every
stepcast command runs once; the slow ones (validate on the Ultra-Scale Playbook's 1,224
records, the plans) run two at a time.
"""
import ast
import concurrent.futures
import contextlib
import difflib
import importlib.util
import io
import itertools
import json
import os
import pathlib
import re
import shlex
import statistics
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLE = "scenarios/examples/llama3-8b-fsdp-16xh100.json"
HELD_OUT = ["megatron-core-h100", "torchtitan-h100", "nemo-h100"]
PLAN_70B = "scenarios/plan/llama2-70b-512xh100.json"
PLAN_405B = "scenarios/bench/llama31-405b-3d-16384xh100.json"
ROT = "scenarios/seeds/rule-of-thumb-10b-4x8a100-100g.json"
WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine"}
# The Ultra-Scale Playbook's own all-gather benchmark on one node (256 MB, median bus
# bandwidth), quoted in docs/accuracy.md beside the model's figure: a source's fact.
USP_ALL_GATHER_1_NODE_GBPS = 250
MIB = 2**20


def flat(path):
    """A document with its whitespace runs collapsed, so a figure may break across lines."""
    return re.sub(r"\s+", " ", (ROOT / path).read_text(encoding="utf-8"))


def run(*args, **kw):
    kw.setdefault("cwd", ROOT)
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, **kw)


class Stepcast:
    """Runs each stepcast command once (two at a time) and keeps its answer for the run."""

    def __init__(self, binary, tmp):
        self.binary, self.tmp = binary, pathlib.Path(tmp)
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=2)
        self.futures = {}

    def _start(self, args, as_json, cwd=ROOT):
        key = (tuple(map(str, args)), as_json, str(cwd))
        if key not in self.futures:
            full = [self.binary, *args] + (["--json"] if as_json else [])
            self.futures[key] = self.pool.submit(run, *full, cwd=cwd)
        return self.futures[key]

    def prefetch(self, *args):
        self._start(args, True)

    def json(self, *args):
        out = self._start(args, True).result()
        if out.returncode != 0:
            raise RuntimeError(f"stepcast {' '.join(map(str, args))}: exit {out.returncode}: {out.stderr[:400]}")
        return json.loads(out.stdout)

    def text(self, *args, cwd=ROOT):
        return self._start(args, False, cwd).result()

    def edited(self, scenario, name, edit):
        """A copy of `scenario` under the run's temporary folder, changed by `edit(dict)`."""
        path = self.tmp / f"{name}.json"
        if not path.exists():
            s = json.loads((ROOT / scenario).read_text(encoding="utf-8"))
            edit(s)
            path.write_text(json.dumps(s))
        return path

    def scenario(self, name, s):
        path = self.tmp / f"{name}.json"
        if not path.exists():
            path.write_text(json.dumps(s))
        return path

    def validate(self, name):
        return self.json("validate", f"data/validation/{name}.jsonl", *(["--pairs"] if name == "runs" else []))


def records(name):
    with open(ROOT / "data" / "validation" / f"{name}.jsonl", encoding="utf-8") as f:
        return {r["id"]: r for r in map(json.loads, filter(str.strip, f))}


def runs_matching(v, pattern, ok=True):
    rows = [r for r in v["runs"] if re.search(pattern, r["id"]) and (r["status"] == "ok" or not ok)]
    if not rows:
        raise RuntimeError(f"no record matches {pattern}")
    return rows


def one(v, pattern):
    rows = runs_matching(v, pattern)
    if len(rows) != 1:
        raise RuntimeError(f"{len(rows)} records match {pattern}")
    return rows[0]


def err(v, pattern, digits=0):
    return f"{one(v, pattern)['error_pct']:+.{digits}f}%"


def span(values, digits=0):
    """Signed errors as the docs write a range: the smaller magnitude first (-4% to -10%)."""
    lo, hi = min(values, key=abs), max(values, key=abs)
    return f"{lo:+.{digits}f}% to {hi:+.{digits}f}%"


def dash(values):
    """Magnitudes as a dashed range: 10-16%."""
    return f"{min(map(abs, values)):.0f}-{max(map(abs, values)):.0f}"


def ratio(v, num, den, key="predicted"):
    return one(v, num)[key] / one(v, den)[key]


def fast_or_slow(errors):
    return "too fast" if statistics.median(errors) > 0 else "too slow"


def secondary(record, metric):
    return next(s["value"] for s in record["measured"]["secondary"] if s["metric"] == metric)


FIGURES = []


def figures(doc, what):
    """Registers a function that returns the figures `doc` must contain, as strings."""
    def register(fn):
        FIGURES.append((doc, what, fn))
        return fn
    return register


# ---------------------------------------------------------------------------------- README


@figures("README.md", "the first command's answer")
def readme_answer(sc):
    p = sc.json("predict", EXAMPLE)
    sim = p["simulation"]
    return [
        f"{p['step_time_s']:.1f} s per step of {p['tokens_per_step'] / 2**20:.0f}M tokens",
        f"{100 * p['mfu']:.0f}% MFU",
        f"{p['time_per_epoch_s'] / 3600:.1f} h and {p['cost_per_epoch_usd']:.0f} USD for the billion tokens",
        f"{p['memory_per_gpu_bytes'] / 2**30:.0f} GiB of the {p['memory']['capacity_bytes'] / 2**30:.0f} per GPU",
        f"communication {100 * sim['overlap_ratio']:.1f}% hidden behind compute",
    ]


@figures("README.md", "headline accuracy")
def readme_accuracy(sc):
    v = sc.validate("runs")
    loso, free = v["summary_loso"], v["summary_fit_free"]
    return [
        f"Accuracy against {loso['count']} published runs, leave one source out: a median |error| of "
        f"{loso['median_abs_error_pct']:.1f}%, p90 {loso['p90_abs_error_pct']:.1f}%",
        f"({free['median_abs_error_pct']:.1f}% / {free['p90_abs_error_pct']:.1f}% with no fitted value at all",
        readme_memory(sc),
        readme_collectives(sc),
        readme_megatron_bridge(sc),
    ]


def readme_megatron_bridge(sc):
    _, dense, moes, recs, moe = megatron_bridge_split(sc)
    return (f"held out, {len(dense)} of the {len(recs) - len(moe)} dense runs of Megatron-Bridge and NeMo's "
            f"2024-26 tables (H100 to GB300, bf16, fp8, MXFP8, NVFP4): a median |error| of "
            f"{statistics.median(map(abs, dense)):.1f}%, and {len(moes)} MoE runs: "
            f"{statistics.median(map(abs, moes)):.1f}%, predicted {pace(moes)}")


def readme_collectives(sc):
    s = sc.validate("collectives")["summary_collectives"]
    big = next(g for g in s["groups"] if g["group"] == "nodes: >=16")
    return (f"collectives against {s['count']} published nccl-tests measurements (1 to 128 nodes, NVLink to EFA; "
            f"no value fitted on them but 2 link rates): a median |error| of {s['median_abs_error_pct']:.1f}%, "
            f"{big['median_abs_error_pct']:.1f}% over the {big['count']} at 16 nodes or more")


def readme_memory(sc):
    m = sc.validate("ultrascale-playbook")["summary_memory"]
    t = sc.validate("torchtitan-h100")["summary_memory"]
    files = [sc.validate(name) for name in ["runs", "ultrascale-playbook"] + HELD_OUT + ["megatron-bridge-nemo"]]
    oom = sum(f["summary_memory"]["false_oom"] for f in files)
    predicted = sum(f["summary_memory"]["predicted"] for f in files)
    return (f"peak memory per GPU against {m['count']:,} measured runs of the Ultra-Scale Playbook: a median |error| "
            f"of {m['median_abs_error_pct']:.1f}%, p90 {m['p90_abs_error_pct']:.1f}%, and {t['count']} of "
            f"torchtitan: {t['median_abs_error_pct']:.1f}% and {t['p90_abs_error_pct']:.1f}%, nothing fitted; "
            f"{oom} of {predicted:,} measured runs predicted out of memory ({100 * oom / predicted:.1f}%)")


@figures("README.md", "exit-code example")
def readme_error_example(sc):
    """The exit-code example's message, from a scenario with micro_batch -1."""
    bad = sc.scenario("x", {"model": "gpt2", "hardware": {"box": "dgx-a100", "gpus": 8}, "strategy": "ddp",
                            "training": {"micro_batch": -1}})
    out = sc.text("predict", bad)
    m = re.search(r"x\.json: /training/micro_batch: [^\n]*", out.stderr)
    return [f"`{m.group(0)}`" if m else f"(no micro_batch error; exit {out.returncode})"]


# ---------------------------------------------------------------------- docs/accuracy.md

SEEDS = "scenarios/seeds/{}.json"


@figures("docs/accuracy.md", "seed explanations")
def seed_prose(sc):
    p = {n: sc.json("predict", SEEDS.format(n)) for n in (
        "falcon7b-lora-1gpu", "falcon7b-lora-zero2-8gpu", "falcon7b-lora-zero2-16gpu-1gbe",
        "falcon7b-lora-zero3-16gpu-1gbe", "gpt2-large-ddp-8xa100", "gpt2-large-fsdp-sgo-8xa100",
        "gpt2-xl-ddp-8xa100", "gpt2-xl-fsdp-sgo-8xa100", "lightning-ddp-3xa100", "lightning-ddp-8xa100",
        "lightning-ddp-3xh100", "lightning-ddp-6xa100", "rule-of-thumb-10b-4x8a100-100g")}
    epoch = {n: q["time_per_epoch_s"] for n, q in p.items()}
    error = {n: 100 * q["measured"]["time_per_epoch_s"]["error"] for n, q in p.items()
             if q["measured"] and q["measured"]["time_per_epoch_s"]}
    z3 = p["falcon7b-lora-zero3-16gpu-1gbe"]
    z3_measured = z3["measured"]["time_per_epoch_s"]["measured"]
    gpt2 = [error[n] for n in error if n.startswith("gpt2")]
    ddp, sgo = p["gpt2-xl-ddp-8xa100"]["parts"], p["gpt2-xl-fsdp-sgo-8xa100"]["parts"]
    gib = {n: q["memory_per_gpu_bytes"] / 2**30 for n, q in p.items()}
    rot = p["rule-of-thumb-10b-4x8a100-100g"]
    need = sc.json("need", ROT, "--exposed-comm", "5%")
    return [
        f"8 GPUs with ZeRO-2 are {epoch['falcon7b-lora-1gpu'] / epoch['falcon7b-lora-zero2-8gpu']:.0f}x faster than 1",
        f"the 1-, 8- and 16-GPU ZeRO-2 rows land at {error['falcon7b-lora-1gpu']:+.0f}%, "
        f"{error['falcon7b-lora-zero2-8gpu']:+.0f}% and {error['falcon7b-lora-zero2-16gpu-1gbe']:+.0f}%",
        f"The 16-GPU ZeRO-3 row is {z3['time_per_epoch_s'] / z3_measured:.0f}x slower than reported",
        f"({z3['step_time_s']:.0f} s per simulated step",
        f"over {z3['steps_per_epoch']:.0f} steps is ~{z3['time_per_epoch_s'] / 3600:.0f} h",
        f"stepcast's epoch is {dash(gpt2)}% shorter",
        f"the optimizer step shrinks {ddp['optimizer_s'] / sgo['optimizer_s']:.0f}x: {1000 * ddp['optimizer_s']:.0f} ms "
        f"to {1000 * sgo['optimizer_s']:.0f} ms per step for XL",
        f"({gib['gpt2-xl-fsdp-sgo-8xa100']:.1f} vs {gib['gpt2-xl-ddp-8xa100']:.1f} GiB for XL)",
        f"the epoch falls {epoch['lightning-ddp-3xa100'] / epoch['lightning-ddp-8xa100']:.1f}x from 3 to 8 A100 "
        f"and 3 H100 finish in {100 * epoch['lightning-ddp-3xh100'] / epoch['lightning-ddp-6xa100']:.0f}% of the "
        f"time of 6 A100",
        f"~{gib['rule-of-thumb-10b-4x8a100-100g']:.0f} GiB per GPU",
        f"the all-reduce of {need['gradient_bytes'] / 1e9:.1f} GB of gradients takes ~{rot['parts']['comm_total_s']:.1f} s "
        f"against ~{rot['parts']['forward_s'] + rot['parts']['backward_s']:.2f} s of compute per step",
    ]


@figures("docs/accuracy.md", "measured-run files")
def run_files(sc):
    v = sc.validate("runs")
    usp = sc.validate("ultrascale-playbook")
    skips = [r["status"] for r in usp["runs"] if r["status"] != "ok"]
    tp = sum("does not divide the model's 24 heads" in s for s in skips)
    pp = sum(re.search(r"PP \d+ exceeds the \d+ layers", s) is not None for s in skips)
    s = usp["summary_loso"]
    wanted = [
        f"`runs.jsonl` ({len(v['runs'])} records, {len({r['source'] for r in v['runs']})} sources)",
        f"`ultrascale-playbook.jsonl` ({len(usp['runs']):,} records",
        f"`validate` reads all of them: {s['count']:,} compared",
        f"{s['skipped']} skipped ({tp} with a TP degree that does not divide the 3B shape's 24 heads, "
        f"{WORDS.get(pp, pp)} with more stages than layers); median |error| {s['median_abs_error_pct']:.1f}%, "
        f"p90 {s['p90_abs_error_pct']:,.0f}%, ordering {100 * s['ordering_accuracy']:.1f}% of "
        f"{s['ordering_pairs']:,} pairs",
    ]
    if tp + pp != s["skipped"]:
        wanted.append(f"(the playbook's skips: {tp} TP, {pp} PP, {s['skipped']} in all)")
    for name in HELD_OUT:
        wanted.append(f"`{name}.jsonl` ({len(sc.validate(name)['runs'])} records")
    return wanted


def usp_signed_medians(sc):
    """The playbook's signed median error by node count: all runs, and those with TP across nodes."""
    v = sc.validate("ultrascale-playbook")
    recs = records("ultrascale-playbook")
    by_nodes, across = {}, {}
    for r in v["runs"]:
        if r["status"] != "ok":
            continue
        h, tp = recs[r["id"]]["hardware"], recs[r["id"]]["strategy"]["tp"]
        by_nodes.setdefault(h["nodes"], []).append(r["error_pct"])
        if tp > h["gpus_per_node"]:
            across.setdefault(h["nodes"], []).append(r["error_pct"])
    med = {n: f"{statistics.median(e):+.0f}%" for n, e in by_nodes.items()}
    amed = {n: f"{statistics.median(e):+.0f}%" for n, e in across.items()}
    return med, amed, sum(map(len, across.values())), {n: len(e) for n, e in across.items()}


@figures("docs/accuracy.md", "Ultra-Scale Playbook by node count")
def usp_by_nodes(sc):
    med, amed, n_across, counts = usp_signed_medians(sc)
    return [
        f"By node count the signed median error is {med[1]}, {med[2]} and {med[4]} on 1, 2 and 4 nodes, "
        f"{med[8]} and {med[16]} on 8 and 16, and {med[32]} and {med[64]} on 32 and 64",
        f"The {n_across} runs with TP across nodes are the most optimistic (signed median {amed[2]} on 2 nodes "
        f"({counts[2]} runs), {amed[4]} on 4, {amed[8]} and {amed[16]} on 8 and 16, {amed[32]} and {amed[64]} "
        f"on 32 and 64)",
    ]


@figures("docs/accuracy.md", "peak memory")
def peak_memory(sc):
    usp = sc.validate("ultrascale-playbook")
    m = usp["summary_memory"]
    recs = records("ultrascale-playbook")
    groups = {}
    for r in usp["runs"]:
        if r.get("memory_error_pct") is None:
            continue
        st = recs[r["id"]]["strategy"]
        groups.setdefault(st["data_parallel"], []).append(r["memory_error_pct"])
        groups.setdefault(f"pp {st['pp']}", []).append(r["memory_error_pct"])
    med = {k: f"{statistics.median(e):+.0f}%" for k, e in groups.items()}
    pps = sorted((int(k[3:]) for k in groups if k.startswith("pp ")))
    files = [sc.validate(name) for name in ["runs", "ultrascale-playbook"] + HELD_OUT + ["megatron-bridge-nemo"]]
    oom = sum(f["summary_memory"]["false_oom"] for f in files)
    predicted = sum(f["summary_memory"]["predicted"] for f in files)
    tt = sc.validate("torchtitan-h100")
    tt_recs = records("torchtitan-h100")
    by_ac = {}
    for r in tt["runs"]:
        if r.get("memory_error_pct") is not None:
            ac = tt_recs[r["id"]]["strategy"]["activation_checkpointing"]
            by_ac.setdefault(ac, []).append(r["memory_error_pct"])
    sel, full = by_ac["selective"], by_ac["full"]
    tm = tt["summary_memory"]
    return [
        f"{m['count']:,} runs, median |error| {m['median_abs_error_pct']:.1f}%, p90 {m['p90_abs_error_pct']:.1f}%, "
        f"max {m['max_abs_error_pct']:.1f}%",
        f"{tm['count']} records, median |error| {tm['median_abs_error_pct']:.1f}%, p90 "
        f"{tm['p90_abs_error_pct']:.1f}%",
        f"{min(sel):+.0f}% to {max(sel):+.0f}% under its op-level selective checkpointing",
        f"{min(full):+.0f}% to {max(full):+.0f}% under full checkpointing",
        f"{m['false_oom']} of the {m['predicted']:,} runs predicted here, {oom} of the {predicted:,} records "
        f"predicted over every file of data/validation/",
        f"ddp {med['ddp']}, zero1 {med['zero1']}; "
        + ", ".join(("no pipeline " if p == 1 else "pp ") + (f"{p} " if p > 1 else "") + med[f"pp {p}"] for p in pps),
    ]


@figures("calibrate/data/h100-x1/README.md", "the H100 probe's step time and peak memory")
def h100_probe(sc):
    v = sc.json("validate", "calibrate/data/h100-x1/runs.jsonl")
    loso, free, m = v["summary_loso"], v["summary_fit_free"], v["summary_memory"]
    return [
        f"| after (this commit) | {loso['median_abs_error_pct']:.1f}% / {loso['p90_abs_error_pct']:.1f}% / "
        f"{loso['max_abs_error_pct']:.1f}% | {free['median_abs_error_pct']:.1f}% |",
        f"{m['median_abs_error_pct']:.1f}% / {m['p90_abs_error_pct']:.1f}% / {m['max_abs_error_pct']:.1f}% |",
    ]


@figures("docs/accuracy.md", "the H100 probe's peak memory")
def h100_probe_accuracy(sc):
    v = sc.json("validate", "calibrate/data/h100-x1/runs.jsonl")
    m, loso = v["summary_memory"], v["summary_loso"]
    return [f"{m['count']} runs of the project's H100 probe, median |error| {m['median_abs_error_pct']:.1f}%, p90 "
            f"{m['p90_abs_error_pct']:.1f}% (step time {loso['median_abs_error_pct']:.1f}% median)"]


def summary_text(v):
    s = v["summary_loso"]
    return (f"{s['count']} compared, median |error| {s['median_abs_error_pct']:.1f}%, "
            f"p90 {s['p90_abs_error_pct']:.1f}%, max {s['max_abs_error_pct']:.1f}%")


def fit_free(v):
    s = v["summary_fit_free"]
    return s["median_abs_error_pct"], s["p90_abs_error_pct"], [r["error_pct_fit_free"] for r in v["runs"]
                                                              if r["status"] == "ok"]


def in_step():
    return json.loads((ROOT / "model" / "catalog" / "in_step.json").read_text(encoding="utf-8"))


GPT_1_7B, GPT_7_1B = r"-1\.7b-", r"-7\.1b-"


@figures("docs/accuracy.md", "Megatron-Core held-out file")
def megatron_core(sc):
    v = sc.validate("megatron-core-h100")
    recs = records("megatron-core-h100")
    bubble = {}
    for size in ("314b", "462b"):
        r = recs[one(v, f"-{size}-")["id"]]
        bubble[size] = 100 * (r["strategy"]["pp"] - 1) / r["batch"]["grad_accum"]
    ff_med, ff_p90, ff = fit_free(v)
    r32 = one(v, "-32b-")
    b32 = r32["predicted_breakdown_s"]
    return [
        f"`validate data/validation/megatron-core-h100.jsonl`: {summary_text(v)}",
        f"(signed: {err(v, GPT_1_7B)} on 1.7B TP 1, {err(v, GPT_7_1B)} on 7.1B TP 2, {err(v, '-16b-')} on 16B TP 4, "
        f"{err(v, '-32b-')} on 32B TP 8, "
        f"{span([one(v, f'-{s}-')['error_pct'] for s in ('70b', '119b', '177b')])} on 70B-177B with PP 2-6, "
        f"{err(v, '-314b-')} and {err(v, '-462b-')} on 314B PP 8 and 462B PP 16",
        f"where 1F1B without interleaving leaves a {bubble['314b']:.0f}-{bubble['462b']:.0f}% bubble",
        f"fit-free {ff_med:.1f}% / {ff_p90:.1f}% ({fast_or_slow(ff)})",
        f"The 32B run still exposes {b32['comm_exposed']:.2f} s of",
        f"in a {b32['step']:.2f} s simulated step (measured: {b32['step'] * r32['predicted'] / r32['measured']:.2f} s)",
    ]


TT_8B_FSDP = r"-8b-g\d+-fsdp(-compile)?(-float8)?$"


@figures("docs/accuracy.md", "torchtitan held-out file")
def torchtitan(sc):
    v = sc.validate("torchtitan-h100")
    s = v["summary_loso"]
    ff_med, _, ff = fit_free(v)
    fsdp = [r["error_pct"] for r in runs_matching(v, TT_8B_FSDP)]
    g8 = "-8b-g8-fsdp"
    return [
        f"It does: median |error| {s['median_abs_error_pct']:.1f}%, p90 {s['p90_abs_error_pct']:.1f}% "
        f"({span(fsdp)} on the 8B FSDP rows, {err(v, '-cp1-')} and {err(v, '-cp2-')} on CP 1 and 2, "
        f"{err(v, '-cp4-')} and {err(v, '-cp8-')} on CP 4 and 8 at 131k and 262k tokens, "
        f"{err(v, '-70b-.*-tp8$', 1)} on 70B with TP blocking and {err(v, '-asynctp$')} with AsyncTP)",
        f"the torch.compile speed-up is {ratio(v, g8 + '-compile$', g8 + '$'):.2f}x predicted against "
        f"{ratio(v, g8 + '-compile$', g8 + '$', 'measured'):.2f}x measured, Float8 on top of it "
        f"{ratio(v, g8 + '-compile-float8$', g8 + '-compile$'):.2f}x against "
        f"{ratio(v, g8 + '-compile-float8$', g8 + '-compile$', 'measured'):.2f}x, AsyncTP "
        f"{ratio(v, '-asynctp$', '-tp8$'):.2f}x against {ratio(v, '-asynctp$', '-tp8$', 'measured'):.2f}x",
        f"Fit-free: {ff_med:.1f}% ({fast_or_slow(ff)}), the in-step GEMM fraction ({in_step()['gemm_fraction']:.3f} on Hopper)",
        f"from CP 2 to CP 4 the measured throughput per GPU falls to {ratio(v, '-cp4-', '-cp2-', 'measured'):.2f}x where "
        f"attention's own growth (predicted {ratio(v, '-cp4-', '-cp2-'):.2f}x)",
    ]


@figures("docs/accuracy.md", "NeMo held-out file")
def nemo(sc):
    v = sc.validate("nemo-h100")
    ff_med, ff_p90, _ = fit_free(v)
    errors = [r["error_pct"] for r in v["runs"] if r["status"] == "ok"]
    llamas = [r["error_pct"] for r in runs_matching(v, "-llama")]
    return [
        f"`validate data/validation/nemo-h100.jsonl`: {summary_text(v)}, "
        f"{'every run predicted slow' if max(errors) < 0 else 'not every run predicted slow'}: "
        f"{err(v, '-gpt3-5b-')} and {err(v, '-gpt3-20b-')} on GPT-3 5B and 20B, {span(llamas)} on the Llamas "
        f"(Llama 3 8B with CP 2 {err(v, '-llama3-8b-', 1)}, Llama 3 70B with TP 4, PP 4, CP 2 and VP 5 "
        f"{err(v, '-llama3-70b-', 1)}), {err(v, '-gpt3-175b-g128-')} and {err(v, '-gpt3-175b-g512-')} on GPT-3 175B",
        f"Fit-free {ff_med:.1f}% / {ff_p90:.1f}%.",
    ]


def megatron_bridge_split(sc):
    """The Megatron-Bridge/NeMo file's validation, its dense and MoE errors, and its records."""
    v = sc.validate("megatron-bridge-nemo")
    recs = records("megatron-bridge-nemo")
    moe = {i for i, r in recs.items() if "moe" in (r["strategy"].get("extras") or [])}

    def ok(group):
        return [r["error_pct"] for r in v["runs"] if r["status"] == "ok" and (r["id"] in moe) == group]

    return v, ok(False), ok(True), recs, moe


def pace(errors):
    """The signed median error of a throughput in words: negative is predicted too slow."""
    m = statistics.median(errors)
    return f"{abs(m):.0f}% too {'slow' if m < 0 else 'fast'}"


@figures("docs/accuracy.md", "Megatron-Bridge held-out file")
def megatron_bridge_accuracy(sc):
    v, dense, moes, recs, _ = megatron_bridge_split(sc)
    return [
        f"`validate data/validation/megatron-bridge-nemo.jsonl`: {len(recs)} records, {summary_text(v)}; dense runs "
        f"median |error| {statistics.median(map(abs, dense)):.1f}%, predicted {pace(dense)}; MoE runs median "
        f"|error| {statistics.median(map(abs, moes)):.1f}%, predicted {pace(moes)}.",
        qwen3_releases(v),
        moe_releases_line(v, recs),
        gpt_oss_line(v),
        nvfp4_line(v),
    ]


def moe_releases_line(v, recs):
    """The MoE runs of 26.06 on (whole-iteration CUDA graphs) and the earlier ones: median |error|,
    signed; how many earlier runs take the recipe's all-to-all overlap."""
    moe = {i for i, r in recs.items() if "moe" in (r["strategy"].get("extras") or [])}
    runs = [r for r in v["runs"] if r["status"] == "ok" and r["id"] in moe]
    late = [r for r in runs if r["id"].split("-")[1][:4] >= "2606"]
    early = [r for r in runs if r["id"].split("-")[1][:4] < "2606"]
    overlap = [r for r in early if any(a.startswith("expert-parallel all-to-alls beside") for a in r["assumptions"])]
    e = lambda rs: [r["error_pct"] for r in rs]
    return (f"{len(late)} runs of 26.06 on to a median |error| of {statistics.median(map(abs, e(late))):.1f}% "
            f"(signed {statistics.median(e(late)):+.1f}%), and the {len(early)} earlier ones to "
            f"{statistics.median(map(abs, e(early))):.1f}%: {len(overlap)} earlier\nruns")


def nvfp4_line(v):
    """The NVFP4 records predicted (precision fp4_mixed): count, median |error|, signed median, range."""
    errors = [r["error_pct"] for r in v["runs"] if "-nvfp4-" in r["id"] and r["status"] == "ok"]
    return (f"{len(errors)} NVFP4 runs of Llama-3-70B and Llama-3.1-405B on GB200 and GB300 are compared: median "
            f"|error| {statistics.median(map(abs, errors)):.1f}%, signed {statistics.median(errors):+.1f}%, "
            f"from {min(errors):+.1f}% to {max(errors):+.1f}%")


def qwen3_releases(v):
    """Qwen3-30B-A3B on 8 GB200 at micro-batch 4: measured by release, and the prediction."""
    runs = [r for r in v["runs"] if re.match(r"^mbridge-\d+-gb200-qwen3-30b-a3b-.*g8-mxfp8-tp1pp1ep8-mbs4-", r["id"])]
    release = lambda r: r["id"].split("-")[1]
    early = sorted(r["measured"] for r in runs if release(r)[:4] < "2606")
    late = sorted(r["measured"] for r in runs if release(r)[:4] >= "2606")
    before = {round(r["predicted"]) for r in runs if release(r)[:4] < "2606"}
    after = {round(r["predicted"]) for r in runs if release(r)[:4] >= "2606"}
    assert len(before) == 1 and len(after) == 1, (before, after)
    return (f"{early[0]:,.0f} to {early[-1]:,.0f} tokens/s per GPU\nin releases 25.09 to 26.04 and at {late[0]:,.0f} to "
            f"{late[-1]:,.0f} from 26.06 on, predicted {before.pop():,} and {after.pop():,}")


def gpt_oss_line(v):
    errors = [r["error_pct"] for r in v["runs"] if "gpt-oss-120b" in r["id"] and r["status"] == "ok"]
    fast = [e for e in errors if e > 30]
    return (f"{len(fast)} of its {len(errors)} runs are predicted 30% to {max(errors):.0f}% too fast "
            f"(median {statistics.median(errors):+.0f}%)")


@figures("data/validation/README.md", "Megatron-Bridge and NeMo tables")
def megatron_bridge(sc):
    v, dense, moes, recs, moe = megatron_bridge_split(sc)
    compared = len(dense) + len(moes)
    return [
        f"`validate` compares {compared} ({len(dense)} of the {len(recs) - len(moe)} dense, {len(moes)} of the "
        f"{len(moe)} MoE) and skips {len(recs) - compared} with their reasons; dense runs are predicted "
        f"{pace(dense)} (median), MoE runs {pace(moes)}.",
    ]


@figures("docs/accuracy.md", "framework defaults and leave one source out")
def defaults_and_fits(sc):
    v = sc.validate("runs")
    h200 = runs_matching(v, "^mleng-h200-")
    fa4 = [r for r in v["runs"] if r["id"].startswith("mleng-b200-") and "FlashAttention-4" in r["status"]]
    optimizer = {round(r["predicted_breakdown_s"]["optimizer"], 1) for r in h200}
    params = {records("runs")[r["id"]]["model"]["params"] for r in h200}
    f = in_step()
    ampere = next(g for g in f["generations"] if g["arch"] == "ampere")
    without = {w["source"].split(" ·")[0]: w for w in ampere["without"]}
    others = {f"{w['gemm_fraction']:.3f}" for s, w in without.items() if s != "mosaicml/llm-foundry"}
    lf = without["mosaicml/llm-foundry"]
    hfu = secondary(records("runs")["llmfoundry-a10080-7b-s1024-g8-amp_bf16"], "hfu")
    return [
        f"Two terms shape the {len(h200)} ml-engineering ZeRO-3 + CPU Adam runs on 8 H200",
        f"(the optimizer is {' or '.join(f'{o:.1f}' for o in sorted(optimizer))} s of each predicted step: "
        f"{' or '.join(f'{p / 1e9:.1f}B' for p in sorted(params))} parameters over the",
        f"Its {len(fa4)} B200 runs name FlashAttention-4",
        f"attention keeps {100 * f['attention_fraction']:.1f}% of the published FlashAttention-3 curve, GEMMs "
        f"{100 * f['gemm_fraction']:.1f}% of the best achievable matmul",
        f"reach {100 * hfu:.0f}% of the A100's bf16 peak in hardware FLOPs (7B, 1,024 tokens, full recompute), "
        f"more than {f['gemm_fraction']:.3f} of its best matmul allows",
        f"{ampere['gemm_fraction']:.3f} on every source, {lf['gemm_fraction']:.3f} without llm-foundry (on the "
        f"{ampere['records'] - lf['records']} Megatron-LM, BigScience and OPT runs), {' or '.join(sorted(others))} "
        f"without each other source",
        f"prefer the kernel-level {f['attention_fraction']:.3f} over",
    ]


def bigscience_sweep(v):
    """BigScience's dp4 tp8 pp12 micro-batch sweep: step = (m + p - 1)(a + b x micro-batch) fitted to
    the measured and the predicted steps, and the fixed cost per slot that orders its pairs."""
    recs = records("runs")
    rows = []
    for r in runs_matching(v, r"^bigscience-prequel-a100-181b-g384-dp4tp8pp12-mbs\d+$"):
        rec = recs[r["id"]]
        b, p = rec["batch"], rec["strategy"]["pp"]
        rows.append((b["micro_batch"], b["grad_accum"] + p - 1, r["measured"], r["predicted"]))

    def line(i):
        xs, ys = [row[0] for row in rows], [row[i] / row[1] for row in rows]
        mx, my = statistics.mean(xs), statistics.mean(ys)
        slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
        return my - slope * mx, slope

    lo, hi = 0.0, float("inf")
    for (_, s1, m1, p1), (_, s2, m2, p2) in itertools.combinations(rows, 2):
        # the measured order holds when sign(m1 - m2) == sign(p1 - p2 + c (s1 - s2))
        c = (p2 - p1) / (s1 - s2)
        if (m1 > m2) == (s1 > s2):
            lo = max(lo, c)
        else:
            hi = min(hi, c)
    return line(2), line(3), (lo, hi), len(rows) * (len(rows) - 1) // 2


@figures("docs/accuracy.md", "what limits accuracy: BigScience")
def bigscience(sc):
    v = sc.validate("runs")
    src = next(s for s in v["sources"] if s["source"].endswith("chronicles-prequel.md"))
    (ma, mb), (pa, pb), (lo, hi), pairs = bigscience_sweep(v)
    single = one(v, "^bigscience-prequel-a100-8l-n1-")
    single_ga = records("runs")[single["id"]]["batch"]["grad_accum"]
    ramp = one(v, "^bloom176b-.*-rampup$")
    wide = [r["error_pct"] for r in runs_matching(v, "^bigscience-prequel-a100-(8|80)l-")]
    sweep = [r["error_pct"] for r in runs_matching(v, "^bigscience-prequel-a100-181b-") if r["trust"] != "low"]
    jz = sc.json("predict", sc.scenario("jean-zay-all-reduce", {
        "model": "llama-2-7b", "hardware": {"box": "jean-zay-a100", "gpus": 32},
        "strategy": {"name": "ddp", "bucket_mb": 4e9 / MIB}, "training": {"micro_batch": 1, "seq_len": 2048}}))
    jz_busbw = next(c["busbw_GBps"] for c in jz["collectives"] if c["bytes"] == 4e9)
    return [
        f"**BigScience's Jean Zay runs** ({src['median_abs_error_pct']:.1f}% median over its {src['count']} runs)",
        f"where the catalog's `opa-100` gives {jz_busbw:.1f} GB/s",
        f"measured a = {1000 * ma:.0f} ms per slot and b = {1000 * mb:.0f} ms per sample, predicted a = "
        f"{1000 * pa:.0f} ms and b = {1000 * pb:.0f} ms. The missing time is a fixed ~{1000 * (ma - pa):.0f} ms per "
        f"micro-batch slot",
        f"any fixed cost between {1000 * lo:.0f} and {1000 * hi:.0f} ms per slot would order all "
        f"{WORDS.get(pairs, pairs)} of its pairs as measured",
        f"misses {1000 * (single['measured'] - single['predicted']) / single_ga:.0f} ms per micro-batch too",
        f"is {ramp['error_pct']:.1f}%, with DeepSpeed's BF16_Optimizer",
        f"the rest of its gap, {ramp['measured'] - ramp['predicted']:.1f} s or "
        f"{(ramp['measured'] - ramp['predicted']) / records('runs')[ramp['id']]['strategy']['pp']:.2f} s per stage "
        f"pass, is unexplained",
        f"are the furthest off ({span(wide)}, against {span(sweep)} for the 14,336-wide sweep)",
    ]


@figures("docs/accuracy.md", "what limits accuracy: llm-foundry")
def llm_foundry(sc):
    v = sc.validate("runs")
    recs = records("runs")
    groups = {}
    for r in runs_matching(v, "^llmfoundry-"):
        rec = recs[r["id"]]
        table = rec["source"]["locator"].split("'")[1]
        if "FP8" in table:
            continue
        key = (rec["hardware"]["gpu"], rec["strategy"]["activation_checkpointing"] == "full")
        groups.setdefault(key, []).append(r["error_pct"])
    med = {k: f"{statistics.median(e):+.1f}%" for k, e in groups.items()}
    big = [r for r in runs_matching(v, "^llmfoundry-a10080-")
           if recs[r["id"]]["strategy"]["activation_checkpointing"] == "full"
           and recs[r["id"]]["batch"]["micro_batch"] >= 5 and recs[r["id"]]["hardware"]["gpus"] == 8]
    worst = min(big, key=lambda r: r["error_pct"])
    w = recs[worst["id"]]
    hfu = secondary(w, "hfu")
    ceiling = next(g for g in json.loads((ROOT / "topologies" / "catalog" / "gpus.json").read_text())["gpus"]
                   if g["name"] == "a100-sxm4-80gb")["gemm_ceiling_tflops"]["bf16"]
    a40, a80, h100 = "a100-sxm4-40gb", "a100-sxm4-80gb", "h100-sxm5-80gb"
    return [
        f"A100-40GB (July 2023 table) with recompute {med[(a40, True)]}, without {med[(a40, False)]}; A100-80GB "
        f"(later tables) with recompute {med[(a80, True)]}, without {med[(a80, False)]}; H100 (BF16 tables) with "
        f"recompute {med[(h100, True)]}, without {med[(h100, False)]}",
        f"The A100-80GB table's recomputing runs on 8 GPUs at micro-batch 5 and above are "
        f"{dash([r['error_pct'] for r in big])}% too slow ({-worst['error_pct']:.0f}% on "
        f"{w['model']['name'].split('-')[-1].upper()} at {w['model']['seq_len']:,} tokens, micro-batch "
        f"{w['batch']['micro_batch']})",
        f"That table's own HFU for that run, {100 * hfu:.1f}% of 312 TFLOP/s, is {3.12 * hfu * 100:.0f} TFLOP/s: "
        f"{100 * 312 * hfu / ceiling:.0f}% of the best matmul measured on an A100 ({ceiling:.0f})",
    ]


def bus_bandwidth(sc, op, nodes):
    """The NCCL model's bus bandwidth of a 256 MiB all-gather (ZeRO-1's parameter bucket) or
    all-reduce (DDP's gradient bucket) on `nodes` of the playbook's AWS p5 nodes."""
    strategy = "zero1" if op == "all_gather" else "ddp"
    p = sc.json("predict", sc.scenario(f"p5-{op}-{nodes}", {
        "model": "gpt2-medium", "hardware": {"box": "aws-p5", "gpus": 8 * nodes},
        "strategy": {"name": strategy, "bucket_mb": 256}, "training": {"micro_batch": 1, "seq_len": 1024}}))
    return next(c["busbw_GBps"] for c in p["collectives"] if c["op"] == op and c["bytes"] == 256 * MIB)


@figures("docs/accuracy.md", "what limits accuracy: scale and ordering")
def scale_and_ordering(sc):
    ag = [bus_bandwidth(sc, "all_gather", n) for n in (1, 2, 4, 8, 16, 32, 64)]
    ar = [bus_bandwidth(sc, "all_reduce", n) for n in (1, 64)]
    usp = records("ultrascale-playbook")
    slot = {}
    for mb in (1, 2):
        r = next(r for i, r in usp.items() if i.startswith(f"usp-llama1b-n8-dp16-tp1-pp4-mbs{mb}-"))
        tokens = r["batch"]["global_batch"] * r["model"]["seq_len"]
        step = tokens / (r["measured"]["value"] * r["hardware"]["gpus"])
        slot[mb] = step / (r["batch"]["grad_accum"] + r["strategy"]["pp"] - 1)
    v = sc.validate("runs")
    s = v["summary_loso"]
    wrong = [p for p in v["pairs"] if not p["right"]]
    bs = [p for p in wrong if p["low_id"].startswith("bigscience")]
    lf = [p for p in wrong if p["low_id"].startswith("llmfoundry") and p["knob"] == "gpus"]
    closest = min(lf, key=lambda p: p["measured_high"] / p["measured_low"])
    recs = records("runs")
    measured = {i: r["measured"]["value"] for i, r in recs.items()}
    b3 = [measured[f"llmfoundry-a10040-3b-s2048-g{g}-bf16"] for g in (32, 64, 128)]
    b1 = {g: measured[f"llmfoundry-a10040-1b-s2048-g{g}-bf16"] for g in (16, 32, 128)}
    below = [100 * (1 - b1[32] / b1[g]) for g in (128, 16)]
    sources = {r["source"] for r in v["runs"]}
    compared = [x for x in v["sources"] if x["count"] > 0]
    return [
        f"where stepcast's NCCL model gives {', '.join(f'{x:.0f}' for x in ag[:-1])} and {ag[-1]:.0f} "
        f"(all-reduce: 436 to 33 measured, {ar[0]:.0f} to {ar[1]:.0f} predicted)",
        f"its one-node all-gather is already {100 * (1 - USP_ALL_GATHER_1_NODE_GBPS / ag[0]):.0f}% under stepcast's "
        f"{ag[0]:.0f} GB/s",
        f"(the 1B model at tp1 pp4 on 8 nodes: {slot[1]:.2f} s per micro-batch slot at micro-batch 1, {slot[2]:.2f} s "
        f"at micro-batch 2)",
        f"Of the {len(sources)} sources of `runs.jsonl`, {len(compared)} have a compared record",
        f"Ordering stays at {100 * s['ordering_accuracy']:.1f}% of {s['ordering_pairs']} pairs: {len(bs)} wrong in "
        f"the BigScience sweep (above) and {len(lf)} among llm-foundry's GPU-count pairs",
        f"(3B at micro-batch 6: {b3[0]:,.0f}, {b3[1]:,.0f}, {b3[2]:,.0f} tokens/s per GPU on 32, 64 and 128 A100-40GB)",
        f"one pair measured {100 * (closest['measured_high'] / closest['measured_low'] - 1):.2f}% apart",
        f"one (1B on 32 GPUs) {min(below):.0f}-{max(below):.0f}% below its neighbours on 16 and 128",
    ] + ([] if len(wrong) == len(bs) + len(lf) else [f"({len(wrong)} wrong pairs in all)"])


@figures("docs/accuracy.md", "what limits accuracy: other frameworks on H100")
def other_frameworks(sc):
    mc, tt, ne = (sc.validate(n) for n in HELD_OUT)
    tp8 = [r["error_pct"] for r in runs_matching(mc, "-tp8-")]
    shorter = [r["error_pct"] for r in runs_matching(tt, "-8b-") if not re.search("-cp[48]-", r["id"])]
    ff = {n: fit_free(x) for n, x in zip(HELD_OUT, (mc, tt, ne))}
    return [
        f"Megatron-Core's weak-scaling table is {mc['summary_loso']['median_abs_error_pct']:.1f}% off (median)",
        f"still too slow on TP 8 ({span(tp8)}), and too fast on 1.7B at TP 1 ({err(mc, GPT_1_7B)})",
        f"(a third held-out file) lands at {ne['summary_loso']['median_abs_error_pct']:.1f}% median, GPT-3 175B the "
        f"slowest ({err(ne, '-gpt3-175b-g128-')} and {err(ne, '-gpt3-175b-g512-')}:",
        f"Fit-free the Megatron-Core file is {fast_or_slow(ff[HELD_OUT[0]][2])} ({ff[HELD_OUT[0]][0]:.1f}%), NeMo's too "
        f"({ff[HELD_OUT[2]][0]:.1f}%), torchtitan's far more so ({ff[HELD_OUT[1]][0]:.1f}%,",
        f"the Hopper GEMM fraction ({in_step()['gemm_fraction']:.3f}, one H200 DeepSpeed run",
        f"allow: {err(tt, '-cp4-')} and {err(tt, '-cp8-')}, against {span(shorter)} on its other 8B rows",
    ]


def generated_lines(doc, command):
    """Every line `command` prints must be a line of `doc`."""
    out = run(*command)
    if out.returncode != 0:
        return [f"(generator exit {out.returncode}: {out.stderr[:300]})"]
    return out.stdout.splitlines()


@figures("docs/accuracy.md", "seed table")
def seed_table(sc):
    return generated_lines("docs/accuracy.md", [sys.executable, ROOT / "tests" / "goldens.py", sc.binary, "readme"])


@figures("docs/accuracy.md", "accuracy table")
def accuracy_table(sc):
    spec = importlib.util.spec_from_file_location("validation", ROOT / "tests" / "validation.py")
    validation = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(validation)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        validation.readme(sc.validate("runs"))
    return printed.getvalue().splitlines()


LINE_CHECKS = {("docs/accuracy.md", "seed table"), ("docs/accuracy.md", "accuracy table")}

# ------------------------------------------------------------------------- docs/model.md


def nccl_output(build):
    out = run(pathlib.Path(build) / "tests" / "integration_test", "-tc=collective model vs measured NCCL numbers", "-s")
    lines = out.stdout.splitlines()  # the table's rows follow its MESSAGE header, each at column 0
    rows = [l.removesuffix("|").rstrip() for l in lines if l.startswith("|") and not l.startswith("|---")]
    summary = next((l for l in lines if " rows compared, " in l), "")
    return rows, summary


def size_bytes(text):
    number, unit = text.split()
    return float(number) * {"B": 1, "KB": 2**10, "MB": 2**20, "GB": 2**30}[unit]


@figures("docs/model.md", "NCCL table counts")
def nccl_counts(sc):
    rows, summary = sc.nccl()
    m = re.match(r"(\d+) rows compared, (\d+) skipped", summary)
    if not m:
        return ["(the NCCL test printed no summary)"]
    compared, skipped = m.groups()
    v = sc.validate("collectives")
    s = v["summary_collectives"]
    ok = [r for r in v["runs"] if r["status"] == "ok" and not r["fed_constant"]]

    def signed(lo, hi):
        e = sorted(r["error_pct"] for r in ok if lo <= r["nodes"] <= hi)
        return f"{statistics.median(e):+.1f}%" if e else "-"

    def row(group, x):
        return (f"| {group} | {x['count']} | {x['median_abs_error_pct']:.1f}% | {x['p90_abs_error_pct']:.1f}% | "
                f"{x['max_abs_error_pct']:.1f}% |")

    fed = sum(1 for r in v["runs"] if r["status"] == "ok" and r["fed_constant"])
    return [
        f"holds {len(v['runs'])} published nccl-tests measurements",
        f"{fed} compared\nrecords were used to set a constant",
        f"{compared} records compared, {skipped} skipped with a\nreason",
        f"{signed(1, 1)} on one node, {signed(2, 15)} on 2 to 15\nnodes, {signed(16, 10**9)} on 16 nodes or more",
        row("all", s),
    ] + [row(g["group"], g) for g in s["groups"] if g["count"] > 0] + [summary.strip()]


@figures("docs/model.md", "the slowest of N GPUs")
def slowest_of_n(sc):
    base = {"model": "llama-3-8b", "hardware": {"box": "dgx-h100", "gpus": 1024}, "strategy": "fsdp_full_shard",
            "training": {"micro_batch": 1, "grad_accum": 1, "seq_len": 8192}}
    spread = json.loads(json.dumps(base))
    spread["hardware"]["gpu_speed_cv"] = 0.02
    a = sc.json("predict", sc.scenario("gpu-spread-none", base))["simulation"]["step_time_s"]
    b = sc.json("predict", sc.scenario("gpu-spread-2pct", spread))["simulation"]["step_time_s"]
    return [f"goes from {a:.3f} s to\n{b:.3f} s a step (+{100 * (b / a - 1):.1f}%: communication is not slowed)"]


@figures("docs/accuracy.md", "the p5 collective records behind the playbook's network")
def usp_network(sc):
    v = sc.validate("collectives")
    p5 = [r for r in v["runs"] if r["status"] == "ok" and r["network"] == "efa-v2-100g"]
    group = next(g for g in v["summary_collectives"]["groups"] if g["group"] == "network: efa-v2-100g")
    nodes = sorted({r["nodes"] for r in p5})
    return [f"{len(p5)} p5 records at {nodes[0]} to {nodes[-1]} nodes, median\n|error| "
            f"{group['median_abs_error_pct']:.1f}% over those that fed no constant"]


def nccl_rows(sc):
    """Each row of the NCCL test's table (with the constant it fed, or its skip reason) must
    open a row of docs/model.md's table (which may add to a skip reason)."""
    rows, _ = sc.nccl()
    if not rows:
        return ["docs/model.md: the NCCL table's generator printed no rows"]
    lines = (ROOT / "docs" / "model.md").read_text(encoding="utf-8").splitlines()
    return [f"docs/model.md: NCCL table row not found: {r}" for r in rows if not any(l.startswith(r) for l in lines)]


# ---------------------------------------------------------------------- docs/commands.md

STRATEGY_WORDS = {"zero1": "ZeRO-1", "zero2": "ZeRO-2", "zero3": "ZeRO-3", "fsdp_full_shard": "FSDP full shard",
                  "fsdp_shard_grad_op": "FSDP SHARD_GRAD_OP", "ddp": "DDP"}


def fused(s):
    s["training"]["grad_accumulation"] = "fused"


@figures("docs/commands.md", "Llama-2-70B plan")
def plan_70b(sc):
    p = sc.json("plan", PLAN_70B, "--global-batch", "1024")
    w, second = p["rows"][0], p["rows"][1]
    lw = w["layout"]
    f = sc.json("plan", sc.edited(PLAN_70B, "llama2-70b-fused", fused), "--global-batch", "1024")
    fw = f["rows"][0]
    fl = fw["layout"]
    tie = (f"({STRATEGY_WORDS[second['layout']['strategy']]} ties)"
           if round(second["step_time_s"], 2) == round(w["step_time_s"], 2) else "(no tie)")
    return [
        f"{STRATEGY_WORDS[lw['strategy']]} with context parallelism {lw['cp']}, micro-batch {lw['micro_batch']} x "
        f"{lw['grad_accum']} accumulation, {'no' if lw['recompute'] == 'none' else lw['recompute']} recompute: "
        f"{w['step_time_s']:.2f} s per step, {100 * w['mfu']:.1f}% MFU, {w['memory_per_gpu_bytes'] / 2**30:.1f} GiB per "
        f"GPU {tie}",
        f"{p['enumerated']:,} layouts enumerated, {p['screened']:,} fit, {p['bounded']} lowered, {p['simulated']} "
        f"simulated",
        f"at {fl['pp']} stages, {fl['grad_accum']} micro-steps each add",
        f"{STRATEGY_WORDS[fl['strategy']]}, context parallelism {fl['cp']}, {fl['pp']} stages x {fl['vpp']} chunks, "
        f"micro-batch {fl['micro_batch']} x {fl['grad_accum']}, {fw['step_time_s']:.2f} s, {100 * fw['mfu']:.1f}% MFU, "
        f"{fw['memory_per_gpu_bytes'] / 2**30:.1f} GiB per GPU, {100 * fw['bubble_s'] / fw['step_time_s']:.1f}% bubble",
    ]


@figures("docs/commands.md", "--gap 0")
def plan_gap(sc):
    def counts(scenario, batch):
        default = sc.json("plan", scenario, "--global-batch", batch)
        exact = sc.json("plan", scenario, "--global-batch", batch, "--gap", "0")
        return (f"{exact['bounded']} lowered and {exact['simulated']} simulated against {default['bounded']} and "
                f"{default['simulated']}")
    return [f"at `--global-batch 2048`: {counts(PLAN_405B, '2048')}; Llama-2-70B: {counts(PLAN_70B, '1024')})"]


def accumulate_64(s):
    s["training"]["grad_accum"] = 64


@figures("docs/commands.md", "need")
def need(sc):
    n = sc.json("need", ROT, "--exposed-comm", "5%")
    n64 = sc.json("need", sc.edited(ROT, "rule-of-thumb-ga64", accumulate_64), "--exposed-comm", "20%")
    return [
        f"the step computes for {n['compute_s']:.3f} s",
        f"DDP reduces the {n['gradient_bytes'] / 1e9:.1f} GB of bf16 gradients",
        f"with 64 micro-steps per step, 20% exposed needs {n64['needed_Gbps']:.0f} Gb/s per node "
        f"({n64['nics_needed']} x {n64['nic_Gbps']:.0f} GbE), while the rule of thumb, which hides the reduction behind "
        f"all the compute, asks {n64['rule_of_thumb_Gbps']:.0f} Gb/s",
    ]


def example_blocks(sc, doc):
    """Each fenced block whose first line is `$ stepcast ...` runs as written; each of its other
    lines must be a line of the output, where `...` stands for any text."""
    text = (ROOT / doc).read_text(encoding="utf-8")
    found = []
    for block in re.findall(r"```[a-z]*\n(\$ stepcast [^\n]*\n.*?)```", text, re.S):
        command, *shown = block.splitlines()
        out = sc.text(*shlex.split(command)[2:])
        printed = [l.rstrip() for l in (out.stdout + out.stderr).splitlines()]
        for line in shown:
            line = line.rstrip()
            if not line.strip() or line.strip() == "...":
                continue
            pattern = ".*".join(re.escape(part) for part in line.split("..."))
            if not any(re.fullmatch(pattern, p) for p in printed):
                near = difflib.get_close_matches(line, printed, n=1, cutoff=0.5)
                found.append(f"{doc}: example `{command}`: line not in its output: {line.strip()}"
                             + (f"\n    the output has `{near[0].strip()}`" if near else ""))
    return found


# ---------------------------------------------------------------------- docs/scenario.md


def no_overlaps(s):
    for k in ("tp_comm_overlap", "overlap_grad_reduce", "overlap_param_gather"):
        s["strategy"][k] = False


def rail_fat_tree(r):
    def edit(s):
        s["hardware"] = {"box": "dgx-h100", "gpus": s["hardware"]["gpus"],
                         "network": {"nic": "ib-ndr", "nics_per_node": 8, "topology": "rail_fat_tree",
                                     "oversubscription": r}}
    return edit


@figures("docs/scenario.md", "examples")
def scenario_examples(sc):
    overlaps = "scenarios/examples/llama31-70b-megatron-overlaps-128xh100.json"
    on = sc.json("predict", overlaps)["step_time_s"]
    off = sc.json("predict", sc.edited(overlaps, "no-overlaps", no_overlaps))["step_time_s"]
    step = {r: sc.json("predict", sc.edited(PLAN_405B, f"405b-rail-{r}", rail_fat_tree(r)))["step_time_s"] for r in (1, 8)}
    return [
        f"data-parallel overlaps below: {on:.1f} s a step, {off:.1f} s with the three set to false",
        f"sends slow at 8:1 ({step[1]:.2f} s -> {step[8]:.2f} s a step)",
    ]


@figures("docs/scenario.md", "bad-input example")
def bad_input(sc):
    (sc.tmp / "bad-input").mkdir(exist_ok=True)
    (sc.tmp / "bad-input" / "x.json").write_text(json.dumps({
        "model": "llama3-8b", "hardware": {"box": "dgx-h100-80gb", "gpus": 8},
        "strategy": {"name": "fsdp_full_shard", "prefetch": 1}, "training": {"micro_batch": 1}}))
    out = sc.text("predict", "x.json", cwd=sc.tmp / "bad-input")
    return [l for l in out.stderr.splitlines() if l.strip()] or [f"(no error; exit {out.returncode})"]


@figures("docs/scenario.md", "catalog")
def catalog(sc):
    c = sc.json("catalog")
    dup = sc.text("catalog", "--catalog", "dup", cwd=ROOT / "tests" / "data" / "catalog")
    m = re.search(r"(dup/gpus\.json: [^\n]*? is already in the catalog)", dup.stderr)
    return [
        f"{len(c['models'])} models (GPT-2", f"{len(c['gpus'])} GPUs (V100", f"{len(c['links'])} link kinds (NVLink",
        f"{len(c['boxes'])} boxes (DGX/HGX",
        f"(`{m.group(1)} ...`)" if m else f"(no duplicate-entry error; exit {dup.returncode})",
    ]


@figures("docs/scenario.md", "the schema table")
def schema_table(sc):
    out = sc.text("schema", "--markdown")
    return [f"<!-- generated: stepcast schema --markdown -->\n{out.stdout}<!-- end generated -->"]


BLOCKS = {("docs/scenario.md", "the schema table")}

# -------------------------------------------------------------------------- README Python


def python_block():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.search(r"```python\n(.*?)```", text, re.S).group(1)


def shown_digits(literal):
    return len(literal.split(".")[1]) if "." in literal else 0


def agrees(got, want, literal):
    """`got` equals `want` at the digits `literal` (the README's text of `want`) shows."""
    if isinstance(want, float):
        return isinstance(got, (int, float)) and round(got, shown_digits(literal)) == want
    if isinstance(want, (tuple, list)):
        parts = [p.strip() for p in split_top(literal[1:-1])]
        return (isinstance(got, (tuple, list)) and len(got) == len(want) and
                all(agrees(g, w, p) for g, w, p in zip(got, want, parts)))
    return got == want


def split_top(s):
    """Splits a literal's inside at its top-level commas (outside brackets and quotes)."""
    out, depth, quote, cur = [], 0, None, ""
    for ch in s:
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(cur)
            cur = ""
            continue
        cur += ch
    out.append(cur)
    return out


def python_example(build):
    """Runs README's Python example; one finding per `# value` line that differs."""
    sys.path.insert(0, str(pathlib.Path(build) / "python"))
    os.chdir(ROOT)
    scope, code, found = {}, [], []
    lines = python_block().splitlines()
    for i, line in enumerate(lines):
        after_code = i > 0 and lines[i - 1].strip() and not lines[i - 1].lstrip().startswith("#")
        if not (line.startswith("# ") and after_code):
            code.append(line)
            continue
        literal = line[2:].strip()
        tree = ast.parse("\n".join(code))
        code = []
        last = tree.body[-1]
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            if isinstance(last, ast.Expr) and not (isinstance(last.value, ast.Call) and
                                                   getattr(last.value.func, "id", "") == "print"):
                exec(compile(ast.Module(tree.body[:-1], []), "README", "exec"), scope)
                got = eval(compile(ast.Expression(last.value), "README", "eval"), scope)
                ok = agrees(got, ast.literal_eval(literal), literal)
            else:
                exec(compile(tree, "README", "exec"), scope)
                got = printed.getvalue().strip()
                ok = got == literal
        if not ok:
            found.append(f"README.md Python example: `# {literal}`, the program gives {got!r}")
    return found


# ----------------------------------------------------------------------------------- main


def nearest(text, wanted):
    """The document's text where `wanted` matches best (its longest common stretch, widened to
    `wanted`'s length), to show beside a figure that differs."""
    m = difflib.SequenceMatcher(None, text, wanted, autojunk=False).find_longest_match(0, len(text), 0, len(wanted))
    if m.size < 8:
        return None
    start = max(0, m.a - m.b)
    return text[start:start + len(wanted) + 8]


def differs(doc, what, wanted):
    if (doc, what) in LINE_CHECKS:
        lines = set((ROOT / doc).read_text(encoding="utf-8").splitlines())
        return [f"{doc}: {what}: line not found: {w}" for w in wanted if w.strip() and w not in lines]
    if (doc, what) in BLOCKS:
        text = (ROOT / doc).read_text(encoding="utf-8")
        return [] if all(w in text for w in wanted) else [f"{doc}: {what}: differs (paste `--print`'s block)"]
    text = flat(doc)
    found = []
    for w in wanted:
        w = re.sub(r"\s+", " ", w)
        if w not in text:
            near = nearest(text, w)
            found.append(f"{doc}: {what}: want `{w}`" + (f"\n    the doc has `{near}`" if near else ""))
    return found


def computed(fn, sc):
    """The figures `fn` computes, or one line saying why it could not."""
    try:
        return fn(sc)
    except Exception as e:  # a record or command gone: name it as a figure that differs
        return [f"({fn.__name__} could not compute its figures: {type(e).__name__}: {e})"]


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    options = [a for a in sys.argv[1:] if a.startswith("--")]
    if len(args) != 2 or options not in ([], ["--print"]):
        print(__doc__)
        return 2
    stepcast, build = pathlib.Path(args[0]).resolve(), pathlib.Path(args[1]).resolve()
    with tempfile.TemporaryDirectory() as tmp:
        sc = Stepcast(stepcast, tmp)
        # the slow commands first, two at a time
        sc.prefetch("validate", "data/validation/ultrascale-playbook.jsonl")
        sc.prefetch("validate", "data/validation/runs.jsonl", "--pairs")
        sc.prefetch("validate", "data/validation/megatron-bridge-nemo.jsonl")
        for scenario, batch in ((PLAN_70B, "1024"), (PLAN_405B, "2048")):
            sc.prefetch("plan", scenario, "--global-batch", batch)
            sc.prefetch("plan", scenario, "--global-batch", batch, "--gap", "0")
        sc.prefetch("plan", sc.edited(PLAN_70B, "llama2-70b-fused", fused), "--global-batch", "1024")
        nccl = sc.pool.submit(nccl_output, build)
        sc.nccl = nccl.result
        expected = [(doc, what, computed(fn, sc)) for doc, what, fn in FIGURES]
        if options == ["--print"]:
            for doc, what, wanted in expected:
                print(f"## {doc}: {what}")
                for w in wanted:
                    print(w)
                print()
            print("## docs/model.md: NCCL table rows (each opens a row)")
            print("\n".join(sc.nccl()[0]))
            return 0
        found = [f for doc, what, wanted in expected for f in differs(doc, what, wanted)]
        found += nccl_rows(sc)
        for doc in ("docs/commands.md", "docs/scenario.md", "docs/accuracy.md", "docs/model.md",
                    "docs/calibration.md", "docs/testing.md", "docs/ci.md", "docs/own-cluster.md"):
            found += example_blocks(sc, doc)
        sc.pool.shutdown()
    found += python_example(build)
    for f in found:
        print("DIFFERS", f)
    checked = sum(len(w) for doc, what, w in expected if (doc, what) not in LINE_CHECKS | BLOCKS)
    print(f"docs figures: {checked} strings of prose figures, the generated tables and the examples checked; "
          f"{len(found)} differ")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
