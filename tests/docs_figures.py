#!/usr/bin/env python3
"""Checks the figures README.md prints, and the generated tables and summaries of docs/,
against what the program gives today.

  docs_figures.py STEPCAST BUILD_DIR

README: the first command's answer (step time, tokens, MFU, time and cost of the billion
tokens, memory, overlap), the headline accuracy, the error message of the exit-code example,
and the Python example, run as written with the module from BUILD_DIR/python (each `# ...`
line under an expression is its value, numbers compared at the digits shown).
docs/scenario.md: the schema table (`stepcast schema --markdown`). docs/accuracy.md: the seed table (tests/goldens.py readme), the accuracy table
(tests/validation.py readme) and each held-out file's median and p90. docs/model.md: the
rows of the NCCL table (tests/collective_measured_test.cpp). Exits 1 and names every figure
that differs; the fix is to rerun the generator and paste, or to say why the figure moved.
Dated figures (docs/history.md, docs/benchmarks.md: timings of one machine) are not checked.
"""
import ast
import contextlib
import io
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLE = "scenarios/examples/llama3-8b-fsdp-16xh100.json"
HELD_OUT = ["megatron-core-h100", "torchtitan-h100", "nemo-h100"]


def flat(path):
    """A document with its whitespace runs collapsed, so a figure may break across lines."""
    return re.sub(r"\s+", " ", (ROOT / path).read_text(encoding="utf-8"))


def run(*args, **kw):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, cwd=ROOT, **kw)


def stepcast_json(stepcast, *args):
    out = run(stepcast, *args, "--json")
    if out.returncode != 0:
        raise RuntimeError(f"stepcast {' '.join(map(str, args))}: exit {out.returncode}: {out.stderr[:400]}")
    return json.loads(out.stdout)


def readme_answer(stepcast):
    """The first command's answer, as README's paragraph words it."""
    p = stepcast_json(stepcast, "predict", EXAMPLE)
    sim = p["simulation"]
    return [
        f"{p['step_time_s']:.1f} s per step of {p['tokens_per_step'] / 2**20:.0f}M tokens",
        f"{100 * p['mfu']:.0f}% MFU",
        f"{p['time_per_epoch_s'] / 3600:.1f} h and {p['cost_per_epoch_usd']:.0f} USD for the billion tokens",
        f"{p['memory_per_gpu_bytes'] / 2**30:.0f} GiB of the {p['memory']['capacity_bytes'] / 2**30:.0f} per GPU",
        f"communication {100 * sim['overlap_ratio']:.1f}% hidden behind compute",
    ]


def readme_accuracy(stepcast):
    v = stepcast_json(stepcast, "validate", "data/validation/runs.jsonl")
    loso, free = v["summary_loso"], v["summary_fit_free"]
    return [
        f"Accuracy against {loso['count']} published runs, leave one source out: a median |error| of "
        f"{loso['median_abs_error_pct']:.1f}%, p90 {loso['p90_abs_error_pct']:.1f}%",
        f"({free['median_abs_error_pct']:.1f}% / {free['p90_abs_error_pct']:.1f}% with no fitted value at all",
    ]


def readme_error_example(stepcast):
    """The exit-code example's message, from a scenario with micro_batch -1."""
    with tempfile.TemporaryDirectory() as d:
        bad = pathlib.Path(d) / "x.json"
        bad.write_text(json.dumps({"model": "gpt2", "hardware": {"box": "dgx-a100", "gpus": 8}, "strategy": "ddp",
                                   "training": {"micro_batch": -1}}))
        out = run(stepcast, "predict", bad)
    m = re.search(r"x\.json: /training/micro_batch: [^\n]*", out.stderr)
    return [f"`{m.group(0)}`" if m else f"(no micro_batch error; exit {out.returncode})"]


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


def contains(doc, wanted, what):
    text = flat(doc)
    return [f"{doc}: {what}: `{w}` not found" for w in wanted if re.sub(r"\s+", " ", w) not in text]


def generated_lines(doc, command, what):
    """Every line `command` prints must be a line of `doc`."""
    out = run(*command)
    if out.returncode != 0:
        return [f"{doc}: {what}: generator exit {out.returncode}: {out.stderr[:300]}"]
    lines = set((ROOT / doc).read_text(encoding="utf-8").splitlines())
    return [f"{doc}: {what}: line not found: {line}" for line in out.stdout.splitlines()
            if line.strip() and line not in lines]


def generated_block(doc, command, what):
    """The block between `<!-- generated: ... -->` and `<!-- end generated -->` is exactly what
    `command` prints."""
    text = (ROOT / doc).read_text(encoding="utf-8")
    m = re.search(r"<!-- generated: [^>]*-->\n(.*?)<!-- end generated -->", text, re.S)
    if not m:
        return [f"{doc}: {what}: no generated block"]
    out = run(*command)
    if out.returncode != 0 or out.stdout != m.group(1):
        return [f"{doc}: {what}: differs from `{' '.join(map(str, command[1:]))}` (paste its output)"]
    return []


def held_out(stepcast):
    wanted = []
    for name in HELD_OUT:
        s = stepcast_json(stepcast, "validate", f"data/validation/{name}.jsonl")["summary_loso"]
        wanted.append(f"median |error| {s['median_abs_error_pct']:.1f}%, p90 {s['p90_abs_error_pct']:.1f}%")
    return contains("docs/accuracy.md", wanted, "held-out summary")


def nccl_rows(build):
    """Each measured row the NCCL test prints (its cells up to the error; the docs add what
    constant a row fed) must open a row of docs/model.md's table; skipped rows are notes."""
    out = run(pathlib.Path(build) / "tests" / "integration_test", "-tc=collective model vs measured NCCL numbers", "-s")
    rows = [re.sub(r"^.*MESSAGE: ", "", l).strip() for l in out.stdout.splitlines() if "|" in l]
    rows = [r.removesuffix("|").rstrip() for r in rows
            if r.startswith("|") and "SKIPPED" not in r and not r.startswith("| system") and not r.startswith("|---")]
    if not rows:
        return ["docs/model.md: the NCCL table's generator printed no rows"]
    lines = (ROOT / "docs" / "model.md").read_text(encoding="utf-8").splitlines()
    return [f"docs/model.md: NCCL table row not found: {r}" for r in rows if not any(l.startswith(r) for l in lines)]


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    stepcast, build = pathlib.Path(sys.argv[1]).resolve(), pathlib.Path(sys.argv[2]).resolve()
    found = contains("README.md", readme_answer(stepcast), "the first command's answer")
    found += contains("README.md", readme_accuracy(stepcast), "headline accuracy")
    found += contains("README.md", readme_error_example(stepcast), "exit-code example")
    found += generated_lines("docs/accuracy.md", [sys.executable, ROOT / "tests" / "goldens.py", stepcast, "readme"],
                             "seed table")
    found += generated_lines("docs/accuracy.md", [sys.executable, ROOT / "tests" / "validation.py", stepcast,
                                                  ROOT / "data" / "validation" / "runs.jsonl", "readme"],
                             "accuracy table")
    found += generated_block("docs/scenario.md", [stepcast, "schema", "--markdown"], "the schema table")
    found += held_out(stepcast)
    found += nccl_rows(build)
    found += python_example(build)
    for f in found:
        print("DIFFERS", f)
    print(f"docs figures: {len(found)} differ")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
