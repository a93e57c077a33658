"""The public API is typed: py.typed ships, mypy is clean, signatures are annotated."""
import inspect
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import ikdr

PACKAGE = Path(ikdr.__file__).resolve().parent


def test_py_typed_marker_ships():
    assert (PACKAGE / "py.typed").is_file()


def _public_callables():
    import ikdr.datasets
    import ikdr.gamma
    import ikdr.graph
    import ikdr.kernels
    import ikdr.metrics

    for module in (ikdr, ikdr.datasets, ikdr.gamma, ikdr.graph, ikdr.kernels, ikdr.metrics):
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name)
            if inspect.isclass(obj) and obj.__module__.startswith("ikdr"):
                if "__init__" in vars(obj):
                    yield f"{obj.__module__}.{name}.__init__", obj.__init__
            elif inspect.isfunction(obj) and obj.__module__.startswith("ikdr"):
                yield f"{obj.__module__}.{name}", inspect.unwrap(obj)


def test_every_public_signature_is_annotated():
    missing = []
    for name, fn in _public_callables():
        sig = inspect.signature(fn)
        params = [p for p in sig.parameters.values() if p.name not in ("self", "cls")]
        if any(p.annotation is inspect.Parameter.empty for p in params) or \
                sig.return_annotation is inspect.Signature.empty:
            missing.append(name)
    assert not missing, f"unannotated public signatures: {missing}"


ESTIMATOR_METHODS = ("fit", "transform", "predict", "fit_predict", "fit_transform",
                     "decision_function", "transform_columns", "accuracy")


def _estimator_methods():
    from sklearn.base import BaseEstimator

    for name in ikdr.__all__:
        cls = getattr(ikdr, name)
        if inspect.isclass(cls) and issubclass(cls, BaseEstimator):
            for method in ESTIMATOR_METHODS:
                fn = getattr(cls, method, None)
                owner = next((c for c in cls.__mro__ if method in vars(c)), None)
                if fn is not None and owner is not None and owner.__module__.startswith("ikdr"):
                    yield f"{name}.{method}", inspect.unwrap(fn)


def test_estimator_methods_are_annotated():
    """fit, transform, predict and their kin on every public estimator (those ikdr
    defines; the ones scikit-learn's mixins provide are typed there or not at all)."""
    found = dict(_estimator_methods())
    assert {"ISM.fit", "ISM.transform", "KDAC.fit", "KernelSVD.fit",
            "KNetClustering.predict", "KernelDependenceNetwork.predict"} <= set(found)
    missing = []
    for name, fn in found.items():
        sig = inspect.signature(fn)
        params = [p for p in sig.parameters.values() if p.name not in ("self", "cls")]
        if any(p.annotation is inspect.Parameter.empty for p in params) or \
                sig.return_annotation is inspect.Signature.empty:
            missing.append(name)
    assert not missing, f"unannotated estimator methods: {missing}"


@pytest.mark.skipif(shutil.which("mypy") is None and
                    subprocess.run([sys.executable, "-c", "import mypy"],
                                   capture_output=True).returncode != 0,
                    reason="mypy is not installed: pip install '.[typing]'")
def test_mypy_clean():
    repo = Path(__file__).resolve().parents[1]
    source = repo / "src" / "ikdr"
    if source.is_dir():
        # a checkout: its source tree with its config. (mypy given the installed
        # package's path would take site-packages for a source root and report
        # every module there as shadowing a library.)
        cmd = [sys.executable, "-m", "mypy", "--no-incremental",
               "--config-file", str(repo / "pyproject.toml"), str(source)]
    else:
        # an installed wheel alone (cibuildwheel's quick tests): the package by name;
        # its dependencies ship no stubs (pyproject's overrides say the same)
        cmd = [sys.executable, "-m", "mypy", "--no-incremental", "--ignore-missing-imports",
               "-p", "ikdr"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
