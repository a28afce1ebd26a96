#!/usr/bin/env python3
"""Writes a copy of a JSON file with values replaced at JSON pointers, for the hostile-input
command-line tests (tests/cli_hostile_input.cmake): the inputs are made at test time from
the repository's valid ones rather than committed as near-copies.

usage: patch_json.py IN OUT POINTER=JSON_VALUE...   e.g. /gemm/0/time_s_median=1e300
A JSON_VALUE that Python's json cannot hold (1e309) is written verbatim."""
import json
import sys


def main():
    src, dst, *edits = sys.argv[1:]
    with open(src) as f:
        doc = json.load(f)
    verbatim = {}
    for n, edit in enumerate(edits):
        pointer, _, text = edit.partition("=")
        parts = [p.replace("~1", "/").replace("~0", "~") for p in pointer.split("/")[1:]]
        parent = doc
        for p in parts[:-1]:
            parent = parent[int(p)] if isinstance(parent, list) else parent[p]
        key = int(parts[-1]) if isinstance(parent, list) else parts[-1]
        marker = f"@@verbatim{n}@@"
        verbatim[json.dumps(marker)] = text
        parent[key] = marker
    out = json.dumps(doc, indent=2)
    for marker, text in verbatim.items():
        out = out.replace(marker, text)
    with open(dst, "w") as f:
        f.write(out + "\n")


if __name__ == "__main__":
    main()
