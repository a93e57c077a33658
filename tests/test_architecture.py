"""The package's architecture, checked from the source: layers, cycles, private names, sizes.

docs/architecture.md draws the layers; this file is what keeps them true.
Every import counts, including those inside functions (only the command line
imports its estimators lazily, to start fast). Imports guarded by
``if TYPE_CHECKING:`` are for type checkers and do not run.
"""
import ast
from pathlib import Path

import pytest

import ikdr

SRC = Path(ikdr.__file__).parent

#: the layers, lowest first: a module may import from its own layer and below only
LAYERS = [
    ("core", ["ikdr._core", "ikdr._native", "ikdr._config", "ikdr._utils"]),
    ("kernels", ["ikdr.kernels"]),
    ("gamma", ["ikdr.gamma"]),
    ("spectral", ["ikdr.spectral"]),
    ("passes", ["ikdr.passes"]),
    ("solver", ["ikdr.solver"]),
    ("algorithms", ["ikdr.reduction.function", "ikdr.cluster.alternation",
                    "ikdr.cluster.knet_training"]),
    ("estimators", ["ikdr.reduction", "ikdr.cluster", "ikdr.ksvd", "ikdr.metrics", "ikdr.graph",
                    "ikdr.datasets"]),
    ("entry points", ["ikdr.cli", "ikdr.distributed", "ikdr.__main__", "ikdr"]),
]

#: the modules that compute passes one way or another (the providers and their rows)
PROVIDERS = ("ikdr.passes.exact", "ikdr.passes.landmarks", "ikdr.passes.landmark_clustering",
             "ikdr.passes.factors", "ikdr.passes.rows", "ikdr.passes.dask",
             "ikdr.passes.dask_data", "ikdr.passes.choice")
#: the algorithms that receive a provider and must not choose or import one
PROVIDER_FREE = ("ikdr.solver.driver", "ikdr.solver.steps", "ikdr.solver.trust_region",
                 "ikdr.solver.certificate", "ikdr.cluster.alternation", "ikdr.spectral")
#: packages allowed to import ikdr modules inside functions: the command line loads the
#: estimator of its subcommand only (``ikdr --help`` and ``ikdr info`` start fast)
LAZY_IMPORTERS = ("ikdr.cli",)
MAX_LINES = 600


def _module_name(path):
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted(SRC.rglob("*.py"))}
#: compiled extension modules (no source to read)
COMPILED = {"ikdr._core"}


def _resolve(module, node):
    """Absolute module name of an ImportFrom node in ``module``."""
    if node.level == 0:
        return node.module
    is_package = MODULES[module].name == "__init__.py"
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _is_type_checking(node):
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _imports(module):
    """[(target module, imported name or None, line, inside a function)] of a module."""
    tree = ast.parse(MODULES[module].read_text())
    found = []

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            if _is_type_checking(child):
                continue
            nested = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            if isinstance(child, ast.ImportFrom):
                target = _resolve(module, child)
                for alias in child.names:
                    sub = f"{target}.{alias.name}"
                    if sub in MODULES or sub in COMPILED:      # ``from package import module``
                        found.append((sub, None, child.lineno, in_function))
                    else:
                        found.append((target, alias.name, child.lineno, in_function))
            elif isinstance(child, ast.Import):
                for alias in child.names:
                    found.append((alias.name, None, child.lineno, in_function))
            visit(child, nested)

    visit(tree, False)
    return [(t, n, line, f) for t, n, line, f in found if t == "ikdr" or t.startswith("ikdr.")]


IMPORTS = {m: _imports(m) for m in MODULES}


def _layer(module):
    best, level = -1, None
    for i, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, level = len(prefix), i
    return level


def test_every_module_has_a_layer():
    assert [m for m in MODULES if _layer(m) is None] == []


def test_imports_point_down():
    upward = [f"{m}:{line} imports {t} ({LAYERS[_layer(t)][0]} above {LAYERS[_layer(m)][0]})"
              for m, imports in IMPORTS.items() for t, _, line, _ in imports
              if t in MODULES and _layer(t) > _layer(m)]
    assert upward == []


def test_no_import_cycle_counting_imports_inside_functions():
    graph = {m: sorted({t for t, _, _, _ in IMPORTS[m] if t in MODULES and t != m})
             for m in MODULES}
    # the package root re-exports its public names lazily: importing ``ikdr`` from
    # inside the package would run the root; that edge is a cycle by itself
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def strongconnect(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in graph:
        if v not in index:
            strongconnect(v)
    assert cycles == []


def test_no_import_inside_a_function_except_the_command_line():
    inside = [f"{m}:{line} imports {t}" for m, imports in IMPORTS.items()
              for t, _, line, in_function in imports
              if in_function and not m.startswith(LAZY_IMPORTERS)]
    assert inside == []


def test_no_private_name_crosses_modules():
    crossing = [f"{m}:{line} imports {t}.{name}" for m, imports in IMPORTS.items()
                for t, name, line, _ in imports if name is not None and name.startswith("_")
                and not name.startswith("__") and t != m]
    assert crossing == []


def test_the_algorithms_receive_their_provider():
    """solve, alternate and the spectral step never choose how passes are computed."""
    chosen = [f"{m}:{line} imports {t}" for m in PROVIDER_FREE for t, _, line, _ in IMPORTS[m]
              if t.startswith(PROVIDERS)]
    assert chosen == []


def test_one_function_picks_the_provider():
    """Only ikdr.passes.choice looks at where the rows live to pick a provider."""
    pickers = {m for m, imports in IMPORTS.items()
               for t, name, _, _ in imports if name in ("DaskPasses", "ExactPasses", "ClusteringPasses",
                                                        "ExactClustering")}
    assert pickers <= {"ikdr.passes.choice", "ikdr.passes", "ikdr.distributed",
                       "ikdr.solver.approximate"}, pickers


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_is_a_house_of_several_rooms(module):
    lines = len(MODULES[module].read_text().splitlines())
    assert lines <= MAX_LINES, f"{module} has {lines} lines"


def test_only_the_door_imports_the_compiled_core():
    users = {m for m, imports in IMPORTS.items() if any(t == "ikdr._core" for t, *_ in imports)}
    assert users == {"ikdr._native"}


def test_only_the_kernel_layer_the_landmark_sweeps_and_the_eigensolver_use_the_door():
    users = {m for m, imports in IMPORTS.items() if any(t == "ikdr._native" for t, *_ in imports)}
    # the landmark sweeps call the core's row-block loops with factors their kernels made
    allowed = {"ikdr", "ikdr._config", "ikdr._utils.eig", "ikdr.passes.landmark_sweeps",
               "ikdr.passes.factors"}
    assert {m for m in users if not m.startswith("ikdr.kernels")} <= allowed, users


def test_no_module_calls_private_kernel_functions():
    offenders = []
    for m, path in MODULES.items():
        if m.startswith("ikdr.kernels") or m == "ikdr._native":
            continue
        text = path.read_text()
        for private in ("._terms(", "._term(", "_fused(", "_cast_terms("):
            if private in text:
                offenders.append(f"{m}: {private}")
    assert not offenders, offenders


def test_no_isinstance_switch_on_kernel_types_outside_kernels():
    """Kernels own their capabilities (affinity, low-rank factors, rows they need)."""
    kernel_types = {"Gaussian", "RelativeGaussian", "Polynomial", "Linear", "Squared",
                    "Multiquadric", "ConicKernel", "SNE"}
    offenders = []
    for m, path in MODULES.items():
        if m.startswith("ikdr.kernels"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance":
                names = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
                if names & kernel_types:
                    offenders.append(f"{m}:{node.lineno} {ast.unparse(node)}")
    assert offenders == []
