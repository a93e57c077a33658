"""The documentation builds without a single warning (``python -m sphinx -W``).

Runs only when the docs extra is installed (``pip install "ikdr[docs]"``); CI's
test extra does not install it, so CI stays fast. The gallery's examples are not
executed here (``plot_gallery=0``) unless ``IKDR_DOCS_GALLERY=1``; the full build,
``python -m sphinx -W -b html docs docs/_build/html``, runs them.

The site is built once per test session by :func:`build_site`, which
``tests/test_docs_html.py`` (what a reader sees in the built HTML) shares. Set
``IKDR_DOCS_OUT=DIR`` to build into ``DIR/html`` and keep it (with the HTML
test's screenshots in ``DIR/screenshots``); otherwise a temporary directory is
used and removed at exit.
"""
import atexit
import functools
import importlib.util
import os
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
NEEDED = ("sphinx", "furo", "numpydoc", "myst_parser", "sphinx_gallery", "matplotlib")
missing = [name for name in NEEDED if importlib.util.find_spec(name) is None]
SKIP_REASON = f"docs extra not installed ({', '.join(missing)})"
DOCS_UNAVAILABLE = bool(missing) or not (DOCS / "conf.py").exists()
pytestmark = pytest.mark.skipif(DOCS_UNAVAILABLE, reason=SKIP_REASON)


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
    if os.environ.get("IKDR_DOCS_GALLERY") != "1":
        cmd[4:4] = ["-D", "plot_gallery=0"]
    # the build imports the same ikdr as this process (installed or PYTHONPATH=src)
    package_parent = str(Path(ikdr.__file__).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        filter(None, [package_parent, os.environ.get("PYTHONPATH")])), MPLBACKEND="Agg")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1200)
    return proc, out


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
                 "api/index", "benchmarks/index", "validation"):
        assert f'href="{page}.html"' in index, page


def test_docs_build_writes_only_ignored_files():
    """What the build writes into the source tree (docs/api, ...) is covered by .gitignore."""
    before, start = tree_before_build()
    build_site()
    after = untracked_files()
    if before is None or after is None:
        pytest.skip("not a git checkout")
    # new files, and files the build rewrote (a tree where an older build left them)
    new = sorted(f for f in after if f not in before
                 or (ROOT / f).is_file() and (ROOT / f).stat().st_mtime >= start - 1)
    assert not new, "the docs build wrote files that .gitignore does not cover:\n" + "\n".join(
        new[:40])
