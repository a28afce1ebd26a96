#!/usr/bin/env python3
"""`stepcast validate --junit FILE`, read by a real XML parser (xml.etree.ElementTree).

    tests/junit_check.py STEPCAST RUNS

On both sides of a per-record tolerance (--max-record-error 20, then 30) the report must be
JUnit XML whose counts add up: <testsuites> and each <testsuite> carry tests, failures,
errors and skipped equal to what their <testcase>s hold; one case per record (classname its
source, name its id), in the records' order; a failure exactly for the compared records (ok,
not low trust) whose |error| exceeds the tolerance, its message giving predicted, measured
and the tolerance; <skipped message="reason"/> for skipped records (the reason as `--json`
gives it) and for low-trust ones; the `stepcast gate` suite with one case per limit. The
exit status is 3 with a record beyond the tolerance and 0 without.
"""
import json
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path


def fail(message):
    sys.exit(f"FAIL: {message}")


def counted(element):
    cases = list(element.iter("testcase"))
    return {"tests": len(cases),
            "failures": sum(1 for c in cases if c.find("failure") is not None),
            "errors": sum(1 for c in cases if c.find("error") is not None),
            "skipped": sum(1 for c in cases if c.find("skipped") is not None)}


def check(stepcast, runs, tolerance, tmp):
    xml = Path(tmp) / f"junit-{tolerance}.xml"
    out = subprocess.run([stepcast, "validate", runs, "--json", "--max-record-error", str(tolerance),
                          "--junit", str(xml)], capture_output=True, text=True)
    report = json.loads(out.stdout)
    records = report["runs"]
    beyond = [r["id"] for r in records
              if r["status"] == "ok" and r["trust"] != "low" and abs(r["error_pct"]) > tolerance]
    expected_rc = 3 if beyond else 0
    if out.returncode != expected_rc:
        fail(f"--max-record-error {tolerance}: exit {out.returncode}, expected {expected_rc}\n{out.stderr}")

    root = ET.parse(xml).getroot()  # raises on anything that is not well-formed XML
    if root.tag != "testsuites":
        fail(f"root element <{root.tag}>, expected <testsuites>")
    for element in [root, *root.findall("testsuite")]:
        got = {k: int(element.get(k, -1)) for k in ("tests", "failures", "errors", "skipped")}
        if got != counted(element):
            fail(f"<{element.tag} name={element.get('name')!r}> says {got}, its cases hold {counted(element)}")

    suites = root.findall("testsuite")
    gate = [s for s in suites if s.get("name") == "stepcast gate"]
    if len(gate) != 1 or len(gate[0].findall("testcase")) != 1:
        fail("expected one `stepcast gate` suite with one case (the one limit given)")
    cases = [c for s in suites if s is not gate[0] for c in s.findall("testcase")]
    sources = list(dict.fromkeys(r["source"] for r in records))  # suites in order of first record
    expected = [r["id"] for source in sources for r in records if r["source"] == source]
    if [c.get("name") for c in cases] != expected:
        fail("not one test case per record, by source, in the records' order")
    by_id = {c.get("name"): c for c in cases}
    for r in records:
        case = by_id[r["id"]]
        if case.get("classname") != r["source"]:
            fail(f"{r['id']}: classname {case.get('classname')!r}, expected the source {r['source']!r}")
        failure, skipped = case.find("failure"), case.find("skipped")
        if r["status"] != "ok":
            if skipped is None or skipped.get("message") != r["status"].removeprefix("skipped: "):
                fail(f"{r['id']}: expected <skipped message={r['status']!r}>")
        elif r["trust"] == "low":
            if skipped is None or not skipped.get("message").startswith("low trust"):
                fail(f"{r['id']}: a low-trust record must be skipped with that reason")
        elif (failure is not None) != (r["id"] in beyond):
            fail(f"{r['id']}: |error| {abs(r['error_pct']):.1f}% against {tolerance}%: failure {failure is not None}")
        elif failure is not None:
            message = failure.get("message")
            for part in (f"above the {tolerance}% tolerance", "predicted ", "measured "):
                if part not in message:
                    fail(f"{r['id']}: failure message lacks {part!r}: {message}")
    print(f"ok: --max-record-error {tolerance}: exit {out.returncode}; tests={root.get('tests')} "
          f"failures={root.get('failures')} skipped={root.get('skipped')}")
    return root


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    stepcast, runs = sys.argv[1:]
    with tempfile.TemporaryDirectory() as tmp:
        crossed = check(stepcast, runs, 20, tmp)
        passed = check(stepcast, runs, 30, tmp)
    if int(crossed.get("failures")) < 2 or int(passed.get("failures")) != 0:
        fail("expected a record and the gate's case to fail at 20%, nothing at 30% (tests/data/gate/runs.jsonl)")
    if int(crossed.get("skipped")) != 2:
        fail("expected 2 skipped cases (one skipped record, one of low trust)")


if __name__ == "__main__":
    main()
