#!/usr/bin/env python3
"""Runs docs/ci.md's CI recipe as written, so that it cannot rot.

    package/ci_recipe.py --doc docs/ci.md --build BUILD --cpack CPACK --source SOURCE_DIR

The page's blocks marked `<!-- ci-recipe: NAME -->`: NAME "workflow" is the GitHub Actions
workflow (YAML); any other NAME is a file of the team's repository, written there as shown.
The test builds the .deb (cpack -G DEB), lays out the repository the page describes (the
package at the workflow's STEPCAST_DEB, the bundled NeMo H100 measured runs under RUNS, the
synthetic H100 calibration file at CALIBRATION), then runs every `run:` step of the job in
order, as GitHub does: `bash --noprofile --norc -eo pipefail`, the job's `env:`, and
GITHUB_PATH / GITHUB_ENV carried to later steps. `apt-get` on PATH stands in for Debian's: it
checks that the package's Depends are installed and unpacks it with `dpkg -x` (no root).
`uses:` steps are not run; the paths their `with:` names must exist afterwards, and the JUnit
file must parse (xml.etree) with one test case per record.
Exit status: 0 pass, 1 fail, 77 skipped (no dpkg-deb, or a build without the HTML report's
charting library, which the recipe's --html needs).
"""
import argparse
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

MARK = re.compile(r"^<!-- ci-recipe: (\S+) -->\s*$")


def blocks(doc):
    """{name: text} of the fenced blocks right after a ci-recipe mark."""
    lines = doc.read_text(encoding="utf-8").splitlines()
    out = {}
    for i, line in enumerate(lines):
        m = MARK.match(line)
        if not m:
            continue
        if i + 1 >= len(lines) or not lines[i + 1].startswith("```"):
            sys.exit(f"{doc}:{i + 1}: a ci-recipe mark must be followed by a fenced block")
        end = next(j for j in range(i + 2, len(lines)) if lines[j].startswith("```"))
        out[m.group(1)] = "\n".join(lines[i + 2:end]) + "\n"
    if "workflow" not in out:
        sys.exit(f"{doc}: no block marked <!-- ci-recipe: workflow -->")
    return out


def indent(line):
    return len(line) - len(line.lstrip(" "))


def scalar(text):
    """A YAML scalar as this recipe writes them: plain or double-quoted, with a comment."""
    text = text.strip()
    if text.startswith('"'):
        return text[1:text.index('"', 1)]
    return re.sub(r"\s+#.*$", "", text)


def job_of(workflow):
    """(env, steps) of the workflow's only job; each step a dict of its keys, `run` unfolded,
    `with` a dict. A parser for the subset the recipe uses, not for YAML at large."""
    lines = [l for l in workflow.splitlines() if l.strip() and not l.lstrip().startswith("#")]
    jobs = next(i for i, l in enumerate(lines) if l == "jobs:")
    env, steps, i = {}, [], jobs + 2
    while i < len(lines):
        line = lines[i]
        if indent(line) == 4 and line.strip() == "env:":
            i += 1
            while i < len(lines) and indent(lines[i]) > 4:
                key, value = lines[i].strip().split(":", 1)
                env[key] = scalar(value)
                i += 1
            continue
        if indent(line) == 4 and line.strip() == "steps:":
            i += 1
            while i < len(lines) and indent(lines[i]) > 4:
                step, i = parse_step(lines, i)
                steps.append(step)
            continue
        i += 1
    return env, steps


def parse_step(lines, i):
    base = indent(lines[i]) + 2  # the keys' column, after "- "
    step = {}
    first = True
    while i < len(lines) and (first or indent(lines[i]) >= base):
        first = False
        key, value = lines[i][base:].split(":", 1)
        i += 1
        if value.strip() == "|":
            body = []
            while i < len(lines) and indent(lines[i]) > base:
                body.append(lines[i][base + 2:])
                i += 1
            step[key] = "\n".join(body) + "\n"
        elif value.strip() == "":
            sub = {}
            while i < len(lines) and indent(lines[i]) > base:
                k, v = lines[i].strip().split(":", 1)
                sub[k] = scalar(v)
                i += 1
            step[key] = sub
        else:
            step[key] = scalar(value)
    return step, i


APT_GET = r"""#!/usr/bin/env bash
# apt-get for the CI recipe's test: `update` does nothing; `install ./x.deb` checks that the
# package's Depends are installed here (as apt would resolve them), unpacks it with dpkg -x
# into $CI_RECIPE_ROOT and links its commands into this folder, which is on PATH.
set -euo pipefail
[ "$1" = update ] && exit 0
[ "$1" = install ] || { echo "apt-get (test): only update and install" >&2; exit 100; }
shift
deb=""
for a in "$@"; do
  case "$a" in -*) ;; *.deb) deb="$a" ;; *) echo "apt-get (test): installs ./FILE.deb only, not $a" >&2; exit 100 ;; esac
done
[ -f "$deb" ] || { echo "E: Unsupported file $deb given on commandline" >&2; exit 100; }
# Installed: the package itself, or an installed package that provides it (a virtual package).
# The lists are read whole before they are searched: a `grep -q` that stops at its first match
# would end the pipeline early, and under pipefail its writers' SIGPIPE would read as "no".
installed() {
  [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ] && return 0
  local provided
  provided=$(dpkg-query -W -f='${Status}|${Provides}\n' 2>/dev/null | grep "^install ok installed|" | cut -d'|' -f2 |
    tr ',' '\n' | sed 's/(.*//; s/[[:space:]]//g')
  grep -qxF "$1" <<<"$provided"
}
for pkg in $(dpkg-deb -f "$deb" Depends | tr ',' '\n' | sed 's/|.*//; s/(.*//; s/[[:space:]]//g'); do
  installed "$pkg" ||
    { echo "apt-get (test): $deb depends on $pkg, not installed here" >&2; exit 100; }
done
dpkg -x "$deb" "$CI_RECIPE_ROOT"
for f in "$CI_RECIPE_ROOT"/usr/bin/*; do ln -sf "$f" "$(dirname "$0")/"; done
echo "apt-get (test): unpacked $(dpkg-deb -f "$deb" Package) $(dpkg-deb -f "$deb" Version)"
"""


def build_deb(build, cpack, out):
    r = subprocess.run([cpack, "-G", "DEB", "--config", str(build / "CPackConfig.cmake"), "-B", str(out)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"cpack -G DEB failed:\n{r.stdout}{r.stderr}")
    debs = sorted(out.glob("stepcast_*.deb"))
    if len(debs) != 1:
        sys.exit(f"cpack wrote {len(debs)} stepcast_*.deb in {out}")
    return debs[0]


def lay_out(repo, env, files, deb, source):
    """The team's repository as docs/ci.md describes it."""
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text, encoding="utf-8")
    target = repo / env["STEPCAST_DEB"]
    if target.name != deb.name:
        sys.exit(f"docs/ci.md names the package {target.name}, the build makes {deb.name}: update the page")
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(deb, target)
    runs = repo / env["RUNS"]
    runs.mkdir(parents=True, exist_ok=True)
    shutil.copy(source / "data/validation/nemo-h100.jsonl", runs)
    if env.get("CALIBRATION"):
        (repo / env["CALIBRATION"]).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source / "calibrate/fit/testdata/synthetic_kernel_hardware.json", repo / env["CALIBRATION"])


def run_steps(repo, tmp, env, steps):
    """Every run: step in order, as GitHub runs them; False when one fails."""
    shim = tmp / "bin"
    shim.mkdir()
    (shim / "apt-get").write_text(APT_GET)
    (shim / "apt-get").chmod(0o755)
    github_path, github_env = tmp / "github_path", tmp / "github_env"
    github_path.touch()
    github_env.touch()
    base = dict(os.environ)
    for k in ("STEPCAST_DATA_DIR", "STEPCAST_CATALOG_PATH"):
        base.pop(k, None)
    base.update(env, CI="true", GITHUB_WORKSPACE=str(repo), GITHUB_PATH=str(github_path),
                GITHUB_ENV=str(github_env), CI_RECIPE_ROOT=str(tmp / "root"))
    for n, step in enumerate(steps, 1):
        name = step.get("name", step.get("uses", f"step {n}"))
        if "run" not in step:
            print(f"-- {name}: not run here ({step.get('uses')})")
            continue
        paths = [p for p in github_path.read_text().splitlines() if p]
        step_env = dict(base, PATH=os.pathsep.join([*reversed(paths), str(shim), base["PATH"]]))
        for line in github_env.read_text().splitlines():
            if "=" in line:
                k, v = line.split("=", 1)
                step_env[k] = v
        print(f"-- {name}", flush=True)
        r = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]], cwd=repo,
                           env=step_env)
        if r.returncode != 0:
            print(f"FAIL: step \"{name}\" exited {r.returncode}")
            return False
    return True


def check_outputs(repo, steps):
    ok = True
    for step in steps:
        for key in ("report_paths", "path"):
            path = step.get("with", {}).get(key)
            if path and not (repo / path).exists():
                print(f"FAIL: \"{step.get('name')}\" publishes {path}, which the steps did not write")
                ok = False
    junit = next((s["with"]["report_paths"] for s in steps if "report_paths" in s.get("with", {})), None)
    if not junit or not (repo / junit).exists():
        print("FAIL: the workflow publishes no JUnit report")
        return False
    root = ET.parse(repo / junit).getroot()
    records = sum(1 for c in root.iter("testcase") if c.get("classname") != "stepcast gate")
    runs = sum(1 for f in (repo / "runs").glob("*.jsonl") for line in f.read_text().splitlines() if line.strip())
    if root.tag != "testsuites" or records != runs:
        print(f"FAIL: {junit}: {records} record test cases under <{root.tag}>, expected {runs} under <testsuites>")
        ok = False
    print(f"{junit}: tests={root.get('tests')} failures={root.get('failures')} skipped={root.get('skipped')}")
    return ok


def main():
    a = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    a.add_argument("--doc", type=pathlib.Path, required=True)
    a.add_argument("--build", type=pathlib.Path, required=True)
    a.add_argument("--cpack", default="cpack")
    a.add_argument("--source", type=pathlib.Path, required=True)
    args = a.parse_args()
    if not shutil.which("dpkg-deb") or not shutil.which("dpkg"):
        print("skipped: dpkg-deb is missing (not a Debian system): the recipe installs a .deb")
        return 77
    files = blocks(args.doc)
    env, steps = job_of(files.pop("workflow"))
    with tempfile.TemporaryDirectory() as t:
        tmp = pathlib.Path(t)
        deb = build_deb(args.build, args.cpack, tmp / "deb")
        probe = subprocess.run([str(args.build / "cli" / "stepcast"), "predict", "--html", str(tmp / "p.html"),
                                str(args.source / "scenarios/seeds/gpt2-xl-ddp-8xa100.json")],
                               capture_output=True, text=True)
        if probe.returncode != 0 and "npm ci" in probe.stderr:
            print("skipped: this build has no charting library for --html (run `bash .ci/setup`)")
            return 77
        repo = tmp / "repo"
        repo.mkdir()
        lay_out(repo, env, files, deb, args.source)
        if not run_steps(repo, tmp, env, steps) or not check_outputs(repo, steps):
            return 1
    print("ok: docs/ci.md's workflow ran as written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
