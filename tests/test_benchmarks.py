"""The benchmarks and studies folders keep their own rules: every script listed in its
folder's README, every file a README names present, and ikdr's internals imported only
where the script says why."""
import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
FOLDERS = [BENCHMARKS, ROOT / "studies"]
pytestmark = pytest.mark.skipif(not (BENCHMARKS / "README.md").exists(),
                                reason="the benchmarks are not in this tree (an installed wheel)")

#: ikdr's public modules (docs/architecture.md, "Compatibility"); any other ikdr module,
#: or a name with a leading underscore, is an internal
PUBLIC = {"ikdr", "ikdr.kernels", "ikdr.gamma", "ikdr.distributed", "ikdr.spectral",
          "ikdr.metrics", "ikdr.graph", "ikdr.datasets"}


def _scripts(folder=None):
    return sorted(p for f in ([folder] if folder else FOLDERS) for p in f.rglob("*.py")
                  if p.name != "__init__.py" and ".asv" not in p.parts)


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda f: f.name)
def test_every_script_is_listed_in_the_readme(folder):
    readme = (folder / "README.md").read_text()
    listed = set(re.findall(r"`([\w/.]+\.py)`", readme))
    missing = [str(p.relative_to(folder)) for p in _scripts(folder)
               if str(p.relative_to(folder)) not in listed]
    assert missing == [], f"not in {folder.name}/README.md: {missing}"


#: a file or folder a README names: in code spans (`results/sparse.md`) and link targets
NAMED_PATH = re.compile(r"`([\w.-]+(?:/[\w.-]+)*/?)`|\]\(([^)#\s]+)\)")
FILE_LIKE = re.compile(r"/|\.(?:py|md|json|jsonl|png|toml)$")


def named_paths(text):
    """The paths a README names, as written: each code span that is a bare path (no
    spaces, no placeholder such as ``<name>``) with a folder or a file suffix, and each
    relative link target."""
    found = []
    for span, link in NAMED_PATH.findall(text):
        path = span or link
        if ("://" in path or not FILE_LIKE.search(path) or path.startswith("/")
                or re.fullmatch(r"\.\w+", path)):          # a suffix alone: "the `.md` files"
            continue
        found.append(path)
    return found


def test_named_paths_catches_a_missing_page(tmp_path):
    text = "| `bench_x.py` | writes `results/nothing_here.md` and [a page](../nowhere.md) |"
    assert named_paths(text) == ["bench_x.py", "results/nothing_here.md", "../nowhere.md"]
    assert named_paths("`pip install \".[bench]\"`, `--out DIR`, `ikdr.solver`, `.json`") == []


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda f: f.name)
def test_every_path_the_readme_names_exists(folder):
    """The README lists only what exists: a results page, script, figure or folder it names
    is in the tree, relative to the README's folder or to the repository root. A page that
    a script writes but no committed run holds is named in plain text, "(no run committed)"."""
    missing = [path for path in named_paths((folder / "README.md").read_text())
               if not ((folder / path).exists() or (ROOT / path).exists())]
    assert missing == [], f"{folder.name}/README.md names files that do not exist: {missing}"


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


def _peers():
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location("ikdr_benchmarks_peers", BENCHMARKS / "_peers.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_compact_json_puts_a_record_on_a_line_and_rounds():
    import json

    import numpy as np

    records = {"seeds": [0, 1], "rows": [{"a": np.float64(0.123456789), "n": np.int64(3)},
                                         {"a": float("nan"), "ok": np.bool_(True)}]}
    text = _peers().compact_json(records)
    assert text.splitlines()[3:5] == ['  {"a": 0.1235, "n": 3},', '  {"a": NaN, "ok": true}']
    assert json.loads(text)["seeds"] == [0, 1]


@pytest.mark.parametrize("path", sorted(p for f in FOLDERS for p in (f / "results").glob("*.json")),
                         ids=lambda p: f"{p.parents[1].name}/{p.name}")
def test_committed_results_json_is_compact(path):
    """A committed results file is in the writer's compact form (a record a line, floats to
    four digits), not a value a line: a run of hundreds of records stays reviewable."""
    import json

    text = path.read_text(encoding="utf-8")
    assert text == _peers().compact_json(json.loads(text)), (
        f"{path.name}: not as _peers.compact_json writes it")


def _asv_classes():
    """{class name: its benchmark methods} of the asv suite (``benchmarks/benchmarks/``)."""
    found = {}
    for path in sorted((BENCHMARKS / "benchmarks").glob("bench_*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ClassDef):
                found[node.name] = [f.name for f in node.body if isinstance(f, ast.FunctionDef)
                                    and re.match(r"(time|timeraw|peakmem|mem|track)_", f.name)]
    return found


def _record_table():
    """{results page: [asv class names]} from the README's table of what records each page."""
    readme = (BENCHMARKS / "README.md").read_text()
    rows = {}
    for line in readme.splitlines():
        page = re.match(r"\|\s*`(results/[\w.]+\.md)`.*\|\s*(.+?)\s*\|\s*$", line)
        if page:
            rows[page.group(1)] = re.findall(r"`([A-Z]\w+)`", page.group(2))
    return rows


def test_every_results_page_has_an_asv_record():
    """asv is the performance record of the results pages: each page in
    ``benchmarks/results/`` has a row in the README's table, naming suite classes that
    exist and time something."""
    rows, classes = _record_table(), _asv_classes()
    pages = sorted(f"results/{p.name}" for p in (BENCHMARKS / "results").glob("*.md"))
    assert [p for p in pages if p not in rows] == [], "results pages without an asv record"
    named = {name for names in rows.values() for name in names}
    assert all(rows.values()), "a row of the table names no asv benchmark"
    assert sorted(named - set(classes)) == [], "the table names classes the suite lacks"
    assert [c for c in named if not classes[c]] == [], "a named class has no benchmark method"
