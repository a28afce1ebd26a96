#!/usr/bin/env python3
"""Checks that the C++ sources follow .clang-format (the house style): lists every file
clang-format would change and exits 1. Usage: format_check.py CLANG_FORMAT [REPO_ROOT].
Reformat with: clang-format -i $(git ls-files '*.cpp' '*.hpp'). The tree is formatted by
clang-format 14 (Debian 12's); another major version formats some lines otherwise, so with
one the check is skipped (exit 77) rather than failed."""
import pathlib
import subprocess
import sys

FOLDERS = ["base", "topologies", "model", "scenario", "simulator", "predict", "planner", "validate", "report", "cli",
           "python", "calibrate", "bench", "fuzz", "tests"]


def main() -> int:
    clang_format = sys.argv[1]
    version = subprocess.run([clang_format, "--version"], capture_output=True, text=True).stdout
    if "version 14." not in version:
        print(f"format: skipped: {version.strip() or clang_format} is not clang-format 14")
        return 77
    root = pathlib.Path(sys.argv[2] if len(sys.argv) > 2 else pathlib.Path(__file__).resolve().parent.parent)
    files = sorted(p for folder in FOLDERS for p in (root / folder).rglob("*") if p.suffix in {".cpp", ".hpp"}
                   and "node_modules" not in p.parts)
    unformatted = []
    for path in files:
        out = subprocess.run([clang_format, "--style=file", str(path)], capture_output=True, text=True, cwd=root)
        if out.returncode != 0 or out.stdout != path.read_text(encoding="utf-8"):
            unformatted.append(str(path.relative_to(root)))
    for f in unformatted:
        print("not formatted:", f)
    print(f"format: {len(unformatted)} of {len(files)} files differ from .clang-format")
    return 1 if unformatted else 0


if __name__ == "__main__":
    sys.exit(main())
