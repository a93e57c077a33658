"""Sphinx configuration of the ikdr documentation.

Build: ``python -m sphinx -W -b html docs docs/_build/html`` (needs ``pip install ".[docs]"`` in the checkout).

Generated at build time, so the site follows the code and the measurements:

* ``api/`` -- one autosummary page per public object, listed from each public
  module's ``__all__`` (a new public object gets its page without editing here);
* ``benchmarks/`` and ``studies/`` -- one page per ``benchmarks/results/*.md`` and
  ``studies/results/*.md`` file, which the benchmark and study scripts write (the docs
  include them, they never copy numbers);
* ``auto_examples/`` -- the gallery, run by sphinx-gallery from ``gallery/``;
* ``_generated/extras.md`` -- the optional extras of ``pyproject.toml``, which the
  install guide includes.
"""
from __future__ import annotations

import datetime
import inspect
import os
import re
import sys
from pathlib import Path, PurePosixPath

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent

try:
    import ikdr
except ImportError:  # a source checkout with the core built in place (devbuild)
    sys.path.insert(0, str(ROOT / "src"))
    import ikdr

project = "ikdr"
author = "ikdr developers"
copyright = f"{datetime.date.today().year}, {author}"
release = ikdr.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_generated", "gallery/*.md", "Thumbs.db", ".DS_Store"]
templates_path = ["_templates"]
html_static_path = ["_static"]
html_css_files = ["ikdr.css"]      # tables: a smaller font, wide ones scroll within the column

html_theme = "furo"
html_title = f"ikdr {release}"

myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3

autosummary_generate = True
autodoc_default_options = {"members": True, "inherited-members": False}
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_xref_param_type = False
numpydoc_attributes_as_param_list = True

# no intersphinx: the build must not depend on the network (CI builds offline)

# -- math: MathJax served from the built site itself, so formulas render without a network -----
# The MathJax 3 files come from the PyPI package sphinx-mathjax-offline (in the docs extra);
# only what tex-chtml.js loads is copied into _static/mathjax/ (about 9 MB instead of 24 MB).
# Without the package the build falls back to Sphinx's default CDN copy, and the HTML test
# (tests/test_docs_html.py) fails.
MATHJAX_ENTRY = "tex-chtml.js"


def _mathjax_source():
    import importlib.util
    spec = importlib.util.find_spec("sphinx-mathjax-offline")   # its import name has hyphens
    if spec is None or not spec.submodule_search_locations:
        return None
    src = Path(next(iter(spec.submodule_search_locations))) / "static" / "mathjax"
    return src if (src / MATHJAX_ENTRY).is_file() else None


MATHJAX_SOURCE = _mathjax_source()
if MATHJAX_SOURCE is not None:
    mathjax_path = f"mathjax/{MATHJAX_ENTRY}"


def _copy_mathjax(app, exc):
    """Copy tex-chtml.js and the components it loads on demand into _static/mathjax/."""
    if exc is not None or MATHJAX_SOURCE is None or app.builder.format != "html":
        return
    from sphinx.util.fileutil import copy_asset

    def excluded(path):     # the other combined bundles, never loaded by tex-chtml.js
        parts = PurePosixPath(path).parts       # relative to the source: "./tex-svg.js"
        return len(parts) == 1 and parts[0].endswith(".js") and parts[0] != MATHJAX_ENTRY
    copy_asset(str(MATHJAX_SOURCE), os.path.join(app.outdir, "_static", "mathjax"),
               excluded=excluded)

sphinx_gallery_conf = {
    "examples_dirs": str(DOCS / "gallery"),
    "gallery_dirs": str(DOCS / "auto_examples"),
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "image_scrapers": ("matplotlib",),
    "matplotlib_animations": False,
    "default_thumb_file": None,
    "show_memory": False,
    "run_stale_examples": False,
    # no "Computation times" page: a build-machine table, not a topic of the user guide
    "write_computation_times": False,
}


# -- generated pages ---------------------------------------------------------------------------

def _write(path: Path, text: str):
    """Write only when the content changes (keeps incremental builds incremental)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


def _public(module):
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n, obj in vars(module).items()
                 if not n.startswith("_") and getattr(obj, "__module__", None) == module.__name__
                 and (inspect.isclass(obj) or inspect.isfunction(obj))]
    return [n for n in names if not n.startswith("_")]


SUBMODULES = {
    "ikdr.kernels": "Kernels: the ISM family, conic combinations, the median heuristic and "
                    "the SNE helpers of the asymmetric kernel SVD.",
    "ikdr.gamma": "Gamma builders: the paradigm's matrix Gamma, kept factored where it can be.",
    "ikdr.metrics": "Clustering and decomposition metrics.",
    "ikdr.datasets": "Generated data sets of the papers and image helpers.",
    "ikdr.graph": "Directed graphs: a stochastic block model, node embeddings and their score.",
}
CONFIG_MODULE = "ikdr._config"


def _section(title, text, names, module="ikdr", template=None):
    rule = "-" * len(title)
    lines = [title, rule, "", text, "", f".. currentmodule:: {module}", "",
             ".. autosummary::", "   :toctree: generated/", "   :nosignatures:"]
    if template:
        lines.append(f"   :template: {template}")
    lines += [""] + [f"   {n}" for n in names] + [""]
    return "\n".join(lines)


def generate_api():
    """docs/api/index.rst from the package's ``__all__`` lists."""
    from sklearn.base import BaseEstimator

    import ikdr._config as config

    submodules = {name: sys.modules[name] for name in SUBMODULES if __import__(name)}
    documented_elsewhere = set()
    for name, module in submodules.items():
        for n in _public(module):
            documented_elsewhere.add(id(getattr(module, n)))
    estimators, configuration, functions, reexported = [], [], [], []
    config_names = set(_public(config)) | {"build_info"}
    for name in sorted(set(ikdr.__all__) | {"build_info"}):
        obj = getattr(ikdr, name, None)
        if obj is None or inspect.ismodule(obj) or name.startswith("__"):
            continue
        if id(obj) in documented_elsewhere:
            # importable as ikdr.<name> too (Gamma, median_sigma, ...): its page is the
            # module's; the top-level name is listed and linked to it
            home = next(m for m, module in submodules.items()
                        if getattr(module, name, None) is obj and name in _public(module))
            reexported.append(f":py:obj:`ikdr.{name} <{home}.{name}>`")
            continue
        if inspect.isclass(obj) and issubclass(obj, BaseEstimator):
            estimators.append(name)
        elif getattr(obj, "__module__", "") == CONFIG_MODULE or name in config_names:
            configuration.append(name)
        else:
            functions.append(name)
    parts = [
        ".. This file is generated by docs/conf.py from the package's __all__ lists.", "",
        "API reference", "=============", "",
        "Every public object of ikdr, generated from its numpydoc docstring. The "
        "estimators follow scikit-learn's conventions (``fit``, ``transform`` / "
        "``predict``, fitted attributes ending in ``_``); each estimator's page gives "
        "the paper equation it implements and its references.", "",
        _section("Estimators", "scikit-learn estimators for end users.", estimators,
                 template="class.rst"),
        _section("Solver, results and functions",
                 "The one ISM solver, its result and certificate, HSIC and the functional "
                 "forms of the methods, for use inside other libraries. "
                 + ("Also importable from ``ikdr`` itself, and documented with their "
                    "modules below: " + ", ".join(reexported) + "." if reexported else ""),
                 functions, template=None),
        _section("Configuration", "Threads of the compiled core, the memory budget and the "
                 "build.", configuration),
    ]
    for name, module in submodules.items():
        parts.append(_section(f"``{name}``", SUBMODULES[name], _public(module), module=name))
    _write(DOCS / "api" / "index.rst", "\n".join(parts))


def _read_pyproject():
    try:
        import tomllib
    except ImportError:     # Python < 3.11: the docs extra installs tomli
        import tomli as tomllib
    with open(ROOT / "pyproject.toml", "rb") as fh:
        return tomllib.load(fh)


def generate_extras_table():
    """docs/_generated/extras.md: the optional extras, from pyproject.toml alone.

    The packages come from ``[project.optional-dependencies]`` and the purpose of each
    extra from ``[tool.ikdr.extras]``; an extra without a purpose (or a purpose without an
    extra) stops the build, so the install guide cannot drift from what pip installs.
    """
    pyproject = _read_pyproject()
    extras = pyproject["project"].get("optional-dependencies", {})
    purposes = pyproject.get("tool", {}).get("ikdr", {}).get("extras", {})
    if set(extras) != set(purposes):
        raise RuntimeError(
            "pyproject.toml: [tool.ikdr.extras] must describe exactly the extras of "
            f"[project.optional-dependencies]; missing {sorted(set(extras) - set(purposes))}, "
            f"unknown {sorted(set(purposes) - set(extras))}")
    rows = ["| extra | installs | for |", "|---|---|---|"]
    for name, requirements in extras.items():
        packages = ", ".join(f"`{r}`" for r in requirements)
        rows.append(f"| `{name}` | {packages} | {purposes[name]} |")
    _write(DOCS / "_generated" / "extras.md",
           "<!-- generated by docs/conf.py from pyproject.toml -->\n\n" + "\n".join(rows) + "\n")


#: the folders whose results/ the site includes, each as docs/<folder>/: the index page's
#: title and who wrote the pages
RESULT_FOLDERS = {
    "benchmarks": ("Benchmark results", "benchmark script that measured it"),
    "studies": ("Study results", "study that computed it"),
}

# Page titles where a results file's own heading does not suit the site: none, the same as
# another file's, or one that cites a work item of the tracker ("(issue 20)"), which a reader
# cannot look up. The file's body is still included unchanged.
BENCHMARK_TITLES = {
    "bench_manifold": "ISM against pymanopt's manifold solvers from the same start",
    "nystrom_ism": "Nystrom ISM against exact ISM: accuracy",
    "nystrom_scale": "Nystrom ISM against exact ISM: up to a million rows",
}
WORK_ITEM = re.compile(r"\s*\((?:see )?issues? #?\d+[^)]*\)|\s*[;,]?\s*\bissues? #?\d+\b",
                       re.IGNORECASE)


def generate_result_pages(folder):
    """One page per results file the scripts of ``folder`` (``benchmarks`` or ``studies``)
    wrote into ``folder/results/``, included verbatim, under ``docs/<folder>/``."""
    title_of_index, who = RESULT_FOLDERS[folder]
    results = ROOT / folder / "results"
    out = DOCS / folder
    out.mkdir(exist_ok=True)
    files = sorted(results.glob("*.md")) if results.is_dir() else []
    report = results / "reproduce" / "report.md"
    if report.exists():
        files.append(report)
    stems = []
    for path in files:
        stem = "reproduce_report" if path == report else path.stem
        rel = os.path.relpath(path, out).replace(os.sep, "/")
        lines = path.read_text(encoding="utf-8").splitlines()
        first = next((i for i, line in enumerate(lines) if line.strip()), None)
        heading = first is not None and lines[first].startswith("# ")
        title = BENCHMARK_TITLES.get(stem) or (
            WORK_ITEM.sub("", lines[first][2:]).strip() if heading else
            f"Results: `{path.name}`")
        start = f":start-line: {first + 1}\n" if heading else ""    # the file's own heading
        _write(out / f"{stem}.md",
               f"<!-- generated by docs/conf.py: includes {rel} -->\n\n# {title}\n\n"
               f"```{{include}} {rel}\n{start}:relative-images:\n:relative-docs: ../\n```\n")
        stems.append(stem)
    for stale in out.glob("*.md"):
        if stale.stem not in stems and stale.name != "index.md":
            stale.unlink()
    listing = "\n".join(stems) if stems else ""
    none = ("" if stems else
            f"No results file yet: run the scripts (see `{folder}/README.md`).\n")
    _write(out / "index.md",
           f"<!-- generated by docs/conf.py from {folder}/results/*.md -->\n\n"
           f"# {title_of_index}\n\n"
           f"Each page below is a file the {who} wrote into "
           f"`{folder}/results/`, included here unchanged: it names the machine, the date and "
           "the exact command. Numbers measured on a loaded or different machine differ; rerun "
           "the command to measure yours. How the scripts measure and what they compare is in "
           "{doc}`../guide/performance`.\n\n" + none +
           "```{toctree}\n:maxdepth: 1\n\n" + listing + "\n```\n")


_TABLE_ROW = re.compile(r"^\s*\|")
_DELIMITER_ROW = re.compile(r"^\s*\|(?:\s*:?-+:?\s*\|)+\s*$")
_COMMENT_LINE = re.compile(r"^\s*<!--.*-->\s*$")


def _cells(row):
    return len(re.split(r"(?<!\\)\|", row.strip())) - 2


def _escape_cell_pipes(row):
    """Escape each ``|`` that touches text: a separator has spaces (or the row's end) around it."""
    s, out = row.strip(), []
    for k, ch in enumerate(s):
        if (ch == "|" and 0 < k < len(s) - 1 and s[k - 1] != "\\"
                and not (s[k - 1] in " \t|" and s[k + 1] in " \t|")):
            ch = "\\|"
        out.append(ch)
    return "".join(out)


def repair_tables(text):
    """Markdown tables a benchmark script wrote that a Markdown parser would not read as tables.

    Two slips turn a table into a paragraph of pipes: an HTML comment line between its rows,
    and a ``|`` inside a cell (``(polish - cold)/|cold|``). The comment is moved below the
    table and such a ``|`` is escaped, only in a row whose cell count differs from the
    delimiter row's; every number stays as written.
    """
    lines = text.split("\n")
    out, i = [], 0
    while i < len(lines):
        if (i + 1 < len(lines) and _TABLE_ROW.match(lines[i])
                and _DELIMITER_ROW.match(lines[i + 1])):
            columns = _cells(lines[i + 1])
            table, held, j = [lines[i], lines[i + 1]], [], i + 2
            while j < len(lines) and (_TABLE_ROW.match(lines[j]) or (
                    _COMMENT_LINE.match(lines[j]) and j + 1 < len(lines)
                    and _TABLE_ROW.match(lines[j + 1]))):
                (held if _COMMENT_LINE.match(lines[j]) else table).append(lines[j])
                j += 1
            for k, row in enumerate(table):
                if k != 1 and _cells(row) != columns:    # a "|" inside a cell
                    table[k] = _escape_cell_pipes(row)
            out += table + ([""] + held if held else [])
            i = j
        else:
            out.append(lines[i])
            i += 1
    return "\n".join(out)


def _repair_included_tables(app, relative_path, parent_docname, content):
    if any(Path(relative_path).as_posix().startswith(f"../{folder}/results/")
           for folder in RESULT_FOLDERS):
        content[0] = repair_tables(content[0])


def skip_member(app, what, name, obj, skip, options):
    """Leave out scikit-learn's generated metadata-routing methods (set_*_request)."""
    if name == "get_metadata_routing" or (name.startswith("set_") and name.endswith("_request")):
        return True
    return None


def setup(app):
    app.connect("autodoc-skip-member", skip_member)
    app.connect("build-finished", _copy_mathjax)
    try:                    # Sphinx >= 7.2.5; recent myst-parser emits it for {include} too
        app.connect("include-read", _repair_included_tables)
    except Exception:       # older Sphinx: the HTML test reports the broken tables
        pass


generate_api()
generate_extras_table()
for _folder in RESULT_FOLDERS:
    generate_result_pages(_folder)
# left by an older configuration that wrote sphinx-gallery's execution-time table
for _stale in (DOCS / "sg_execution_times.rst", DOCS / "auto_examples" / "sg_execution_times.rst"):
    _stale.unlink(missing_ok=True)
