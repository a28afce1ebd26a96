#!/usr/bin/env python3
"""Checks that includes between stepcast's rooms point one way, and that the simulator
room holds the engine alone.

Each module may include project headers only from itself and the modules listed for it
(below it in README's module map). Every declaration under simulator/ is in the namespace
stepcast::sim: a scenario, a prediction or a view there is in the wrong room; and no view
under report/ calls the model (predict, plan, simulate, ...).
Usage: module_includes.py [REPO_ROOT]; exits 1 and lists every include that points the wrong
way and every simulator file outside stepcast::sim.
"""
import pathlib
import re
import sys

# module -> the modules it may include (besides itself), bottom to top:
# base <- topologies <- model <- {scenario, simulator} <- predict <- {planner, validate}
#   <- report <- {cli, python}; calibrate/fit above model.
BELOW_PREDICT = {"base", "topologies", "model", "scenario", "simulator", "predict"}
ALLOWED = {
    "base": set(),
    "topologies": {"base"},
    "model": {"base", "topologies"},
    "scenario": {"base", "topologies", "model"},
    "simulator": {"base", "topologies", "model"},
    "predict": {"base", "topologies", "model", "scenario", "simulator"},
    "planner": BELOW_PREDICT,
    "validate": BELOW_PREDICT,
    "calibrate/fit": {"base", "topologies", "model"},
    "report": BELOW_PREDICT | {"planner", "validate", "calibrate/fit"},
    "cli": BELOW_PREDICT | {"planner", "validate", "calibrate/fit", "report"},
    "python": BELOW_PREDICT | {"planner", "validate", "calibrate/fit", "report"},
}
MODULES = set(ALLOWED) | {"calibrate", "bench", "fuzz", "tests"}
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


NAMESPACE = re.compile(r"^namespace\s+([\w:]+)\s*\{", re.M)


def simulator_outside_sim(root: pathlib.Path) -> list[str]:
    """Files under simulator/ that open a namespace other than stepcast::sim."""
    out = []
    for path in sorted((root / "simulator").glob("*.[ch]pp")):
        if path.name.endswith("_test.cpp"):
            continue
        for ns in NAMESPACE.findall(path.read_text(encoding="utf-8")):
            if ns.startswith("stepcast") and ns != "stepcast::sim" and not ns.startswith("stepcast::sim::"):
                out.append(f"{path.relative_to(root)}: namespace {ns} (the simulator room is stepcast::sim alone)")
    return out


MODEL_CALL = re.compile(r"(?<![\w.:>])(predict|plan|plan_range|simulate|lower|validate_runs|need)\s*\(")


def views_that_run_the_model(root: pathlib.Path) -> list[str]:
    """report/ formats results; a call of predict(), plan(), simulate() ... there runs the model."""
    out = []
    for path in sorted((root / "report").glob("*.cpp")):
        if path.name.endswith("_test.cpp"):
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("//")[0]
            if (m := MODEL_CALL.search(code)) and not code.lstrip().startswith(("std::string", "///")):
                out.append(f"{path.relative_to(root)}:{n}: calls {m.group(1)}() (views never run the model)")
    return out


def main() -> int:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
    found = violations(root) + simulator_outside_sim(root) + views_that_run_the_model(root)
    for line in found:
        print(line)
    print(f"module includes: {len(found)} pointing the wrong way or in the wrong room")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
