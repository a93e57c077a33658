"""The benchmarks folder keeps its own rules: every script listed in its README, and
ikdr's internals imported only where the script says why."""
import ast
import re
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
pytestmark = pytest.mark.skipif(not (BENCHMARKS / "README.md").exists(),
                                reason="the benchmarks are not in this tree (an installed wheel)")

#: ikdr's public modules (docs/architecture.md, "Compatibility"); any other ikdr module,
#: or a name with a leading underscore, is an internal
PUBLIC = {"ikdr", "ikdr.kernels", "ikdr.gamma", "ikdr.distributed", "ikdr.spectral",
          "ikdr.metrics", "ikdr.graph", "ikdr.datasets"}


def _scripts():
    return sorted(p for p in BENCHMARKS.rglob("*.py") if p.name != "__init__.py"
                  and ".asv" not in p.parts)


def test_every_script_is_listed_in_the_readme():
    readme = (BENCHMARKS / "README.md").read_text()
    listed = set(re.findall(r"`([\w/.]+\.py)`", readme))
    missing = [str(p.relative_to(BENCHMARKS)) for p in _scripts()
               if str(p.relative_to(BENCHMARKS)) not in listed]
    assert missing == [], f"not in benchmarks/README.md: {missing}"


def _internal_imports(path):
    """[(line, what)] of the imports of ikdr internals in a script."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and \
                node.module.split(".")[0] == "ikdr":
            for alias in node.names:
                module = f"{node.module}.{alias.name}"
                internal = (node.module not in PUBLIC or re.match(r"_(?!_)", alias.name)
                            or any(part.startswith("_") for part in node.module.split(".")))
                if internal:
                    found.append((node.lineno, module))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "ikdr" and alias.name not in PUBLIC:
                    found.append((node.lineno, alias.name))
    return found


def test_internals_are_imported_only_with_a_reason():
    """An import of an ikdr internal has a comment on its line or in the comment block
    right above it (the script's reason: what the public API does not offer)."""
    silent = []
    for path in _scripts():
        lines = path.read_text().splitlines()
        for lineno, what in _internal_imports(path):
            line = lines[lineno - 1]
            above = lineno - 2
            while above >= 0 and lines[above].strip().startswith("from ikdr"):
                above -= 1      # the first of a run of imports carries the comment
            reason = "#" in line.split("noqa")[0] or (
                above >= 0 and lines[above].strip().startswith("#"))
            if not reason:
                silent.append(f"{path.relative_to(BENCHMARKS)}:{lineno} {what}")
    assert silent == [], silent
