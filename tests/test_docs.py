"""The README's lines work as printed, and the documentation builds without a warning.

The README checks always run: its two set-up commands (the same as the install guide's
and CI's), its length, the docs build command it gives (the same everywhere), and every
command line and Python block it shows, run in a temporary folder.

The build checks run when the docs extra is installed (``pip install ".[docs]"``); CI's
test extra does not install it. The site is built once per test session by
:func:`build_site` with the gallery's examples run, as
``python -m sphinx -W -b html docs docs/_build/html`` does, and
``tests/test_docs_html.py`` (what a reader sees in the built HTML) shares it. Set
``IKDR_DOCS_OUT=DIR`` to build into ``DIR/html`` and keep it (with the HTML test's
screenshots in ``DIR/screenshots``); otherwise a temporary directory is used and
removed at exit.
"""
import atexit
import functools
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

import ikdr

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
NEEDED = ("sphinx", "furo", "numpydoc", "myst_parser", "sphinx_gallery", "matplotlib")
missing = [name for name in NEEDED if importlib.util.find_spec(name) is None]
SKIP_REASON = (f"the docs extra is not installed (missing: {', '.join(missing)}): "
               "pip install '.[docs]' to build and check the documentation")
DOCS_UNAVAILABLE = bool(missing) or not (DOCS / "conf.py").exists()
needs_docs = pytest.mark.skipif(DOCS_UNAVAILABLE, reason=SKIP_REASON)
in_checkout = pytest.mark.skipif(not README.is_file(), reason="reads the README of a source "
                                 "checkout: run the tests from the checkout")

#: the two set-up commands the README opens with, the install guide repeats and CI runs
SETUP = ['python -m pip install . && python examples/supervised_wine.py',
         'python -m pip install ".[test]" && python -m pytest tests']
SPHINX = re.compile(r"python -m sphinx [^`\n]*?docs docs/_build/html")


def code_blocks(text, language):
    return re.findall(rf"```{language}\n(.*?)```", text, re.DOTALL)


@in_checkout
def test_readme_opens_with_the_two_setup_commands():
    text = README.read_text(encoding="utf-8")
    first = text[text.index("```"):].split("\n")
    assert first[0] == "```bash" and first[1:3] == SETUP and first[3] == "```", first[:4]
    assert "\n".join(SETUP) in (DOCS / "guide" / "install.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
    assert SETUP[1] in ci, "CI runs another test command than the README's"


@in_checkout
def test_readme_is_at_most_150_lines():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 150, f"the README has {len(lines)} lines"


@in_checkout
def test_one_docs_build_command_everywhere():
    """The README, the install guide, docs/conf.py and these tests give the same command."""
    found = {}
    for path in (README, DOCS / "guide" / "install.md", DOCS / "conf.py", Path(__file__)):
        found[path.relative_to(ROOT).as_posix()] = set(SPHINX.findall(
            path.read_text(encoding="utf-8")))
    commands = set().union(*found.values())
    assert all(found.values()) and len(commands) == 1, found
    assert " -W " in commands.pop(), "the documented build must fail on a warning"


@in_checkout
def test_install_advice_names_what_installs():
    """ikdr is installed from a checkout, not from a package index: no page, script or
    message tells users to install ``ikdr[extra]`` by name (the checkout's ``".[extra]"``
    works), and the package metadata names no package-index page as the project's home."""
    wrong = re.compile(r"pip install [\"']?ikdr\[")
    offenders = []
    for pattern in ("*.md", "*.py", "*.txt", "*.toml"):
        for path in ROOT.rglob(pattern):
            parts = path.relative_to(ROOT).parts
            if parts[0] in {"build", ".git", ".asv"} or "_build" in parts:
                continue
            if wrong.search(path.read_text(encoding="utf-8", errors="replace")):
                offenders.append(path.relative_to(ROOT).as_posix())
    assert offenders == [], offenders
    assert "pypi.org" not in (ROOT / "pyproject.toml").read_text(encoding="utf-8")


@in_checkout
def test_readme_command_lines_run_as_printed(tmp_path):
    """Every command line after the set-up block, in a fresh folder, as a user types it
    (``ikdr`` and ``python`` are this interpreter's)."""
    blocks = code_blocks(README.read_text(encoding="utf-8"), "bash")[1:]
    lines = [line for block in blocks for line in block.splitlines() if line.strip()]
    assert any(line.startswith("ikdr reduce 'runs/*.csv'") for line in lines), lines
    python = f'"{sys.executable}"'
    for line in lines:
        command = re.sub(r"^ikdr\b", f"{python} -m ikdr", line)
        command = re.sub(r"(^|&& )python\b", rf"\g<1>{python}", command)
        r = subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True,
                           text=True, timeout=600)
        assert r.returncode == 0, f"{line}\n{r.stderr[-2000:]}"
    summary = (tmp_path / "batch" / "summary.csv").read_text().splitlines()
    assert len(summary) == 5 and all(",ok," in row for row in summary[1:]), summary


@in_checkout
def test_readme_python_runs(tmp_path):
    for block in code_blocks(README.read_text(encoding="utf-8"), "python"):
        r = subprocess.run([sys.executable, "-c", block], cwd=tmp_path, capture_output=True,
                           text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-2000:]


def public_classes():
    """Every public class of the API reference, once."""
    import inspect

    seen, classes = set(), []
    for module in (ikdr, ikdr.kernels, ikdr.gamma, ikdr.metrics, ikdr.datasets):
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isclass(obj) and id(obj) not in seen:
                seen.add(id(obj))
                classes.append(obj)
    return classes


@pytest.mark.skipif(importlib.util.find_spec("numpydoc") is None, reason=SKIP_REASON)
def test_every_attribute_is_described():
    """Each entry of an Attributes section (fitted attributes, result fields, properties)
    says what it is: the API reference shows the text, not only a name and a type."""
    from numpydoc.docscrape import ClassDoc

    bare = [f"{cls.__module__}.{cls.__name__}.{entry.name}"
            for cls in public_classes() for entry in ClassDoc(cls)["Attributes"]
            if not "".join(entry.desc).strip()]
    assert not bare, "attributes without a description:\n" + "\n".join(bare)


RESULTS = [ROOT / folder / "results" for folder in ("benchmarks", "studies")]
FLOOR_SENTENCE = re.compile(r"Every (?:other )?floor in this table is met|Below (?:its|the) floor")


@pytest.mark.skipif(not RESULTS[0].is_dir(), reason="reads benchmarks/results/ of a source "
                    "checkout: run the tests from the checkout")
@pytest.mark.parametrize("path", sorted(p for folder in RESULTS for p in folder.glob("*.md")),
                         ids=lambda path: f"{path.parents[1].name}/{path.name}")
def test_results_file_says_machine_date_and_command(path):
    """Each results page opens with its title, then the machine, the date and the command
    on lines of their own; a table with a target column says in a sentence whether the
    floors were met."""
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines and lines[0].startswith("# "), f"{path.name}: no title on the first line"
    head = lines[:lines.index("", 2) if "" in lines[2:] else len(lines)]
    for field in ("machine", "date", "command"):
        assert sum(line.startswith(f"- {field}: ") for line in head) == 1, (
            f"{path.name}: no '- {field}: ...' line of its own under the title")
    headers = [line for line in lines if line.startswith("|") and re.search(
        r"\|\s*target\s*\|", line, re.IGNORECASE)]
    if headers:
        assert FLOOR_SENTENCE.search("\n".join(lines)), (
            f"{path.name}: a table with targets and no sentence saying which floors are met")


def untracked_files():
    """Files in the source tree that git neither tracks nor ignores (None: not a checkout)."""
    try:
        proc = subprocess.run(["git", "ls-files", "--others", "--exclude-standard", "-z"],
                              cwd=ROOT, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    return set(filter(None, proc.stdout.split("\0"))) if proc.returncode == 0 else None


@functools.lru_cache(maxsize=None)
def tree_before_build():
    return untracked_files(), time.time()


@functools.lru_cache(maxsize=None)
def build_site():
    """Build the HTML site once; return the finished sphinx process and the output folder."""
    tree_before_build()
    keep = os.environ.get("IKDR_DOCS_OUT")
    base = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="ikdr-docs-"))
    if not keep:
        atexit.register(shutil.rmtree, base, True)
    out, doctrees = base / "html", base / "doctrees"
    for stale in (out, doctrees):          # a kept folder: no page left from an older build
        shutil.rmtree(stale, ignore_errors=True)
    cmd = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-E", "-q", "-b", "html",
           "-d", str(doctrees), str(DOCS), str(out)]
    # the build imports the same ikdr as this process (installed or PYTHONPATH=src)
    package_parent = str(Path(ikdr.__file__).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        filter(None, [package_parent, os.environ.get("PYTHONPATH")])), MPLBACKEND="Agg",
        OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1200)
    return proc, out


@needs_docs
def test_docs_build_without_warnings():
    proc, out = build_site()
    assert proc.returncode == 0, proc.stderr[-4000:]
    # every public object has an API page; the user guide and the gallery are linked
    api = (out / "api" / "index.html").read_text(encoding="utf-8")
    for module in (ikdr, ikdr.kernels, ikdr.gamma, ikdr.metrics, ikdr.datasets):
        for name in module.__all__:
            if not name.startswith("__") and not isinstance(getattr(module, name), type(ikdr)):
                assert f">{name}<" in api or f".{name}<" in api, f"{module.__name__}.{name}"
    # Gamma, what ism() takes, under its top-level name as well as in ikdr.gamma's table
    assert ">ikdr.Gamma<" in api and 'href="generated/ikdr.gamma.Gamma.html' in api
    index = (out / "index.html").read_text(encoding="utf-8")
    for page in ("guide/kernels", "guide/convergence", "guide/cli", "auto_examples/index",
                 "api/index", "benchmarks/index", "studies/index", "validation"):
        assert f'href="{page}.html"' in index, page


@needs_docs
def test_docs_build_writes_only_ignored_files():
    """What the build writes into the source tree (docs/api, ...) is covered by .gitignore."""
    before, start = tree_before_build()
    build_site()
    after = untracked_files()
    if before is None or after is None:
        pytest.skip("the source tree is not a git checkout, so what the build writes cannot "
                    "be compared with .gitignore")
    # new files, and files the build rewrote (a tree where an older build left them)
    new = sorted(f for f in after if f not in before
                 or (ROOT / f).is_file() and (ROOT / f).stat().st_mtime >= start - 1)
    assert not new, "the docs build wrote files that .gitignore does not cover:\n" + "\n".join(
        new[:40])
