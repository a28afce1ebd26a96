#!/usr/bin/env python3
"""Checks that includes between stepcast's modules point one way (issue 9).

Each module may include project headers only from itself and the modules listed for it
(below it in README's "How it works"). Usage: module_includes.py [REPO_ROOT]; exits 1 and
lists every include that points the wrong way.
"""
import pathlib
import re
import sys

# module -> the modules it may include (besides itself), bottom to top.
ALLOWED = {
    "base": set(),
    "topologies": {"base"},
    "model": {"base", "topologies"},
    "simulator": {"base", "topologies", "model"},
    "validate": {"base", "topologies", "model", "simulator"},
    "calibrate/fit": {"base", "topologies", "model"},
}
MODULES = {"base", "topologies", "model", "simulator", "validate", "calibrate", "cli", "bench", "fuzz", "tests"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def module_of(header: str) -> str | None:
    """The module a quoted include names ("calibrate/fit/x.hpp" -> "calibrate/fit")."""
    if header.startswith("calibrate/fit/"):
        return "calibrate/fit"
    first = header.split("/", 1)[0]
    return first if "/" in header and first in MODULES else None


def violations(root: pathlib.Path) -> list[str]:
    out = []
    for module, allowed in ALLOWED.items():
        for path in sorted((root / module).rglob("*")):
            if path.suffix not in {".cpp", ".hpp", ".cu"}:
                continue
            for header in INCLUDE.findall(path.read_text(encoding="utf-8")):
                target = module_of(header)
                if target is None or target == module:
                    continue
                if target not in allowed:
                    out.append(f"{path.relative_to(root)}: includes {header} ({module} may include "
                               f"{', '.join(sorted(allowed)) or 'no other module'})")
    return out


def main() -> int:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
    found = violations(root)
    for line in found:
        print(line)
    print(f"module includes: {len(found)} pointing the wrong way")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
