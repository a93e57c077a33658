"""ikdr: interpretable kernel dimension reduction by the Iterative Spectral Method.

Functions for embedding in other libraries (the ISM solver, kernels, Gamma
builders, HSIC) and scikit-learn estimators for end users, over one C++ core.

``import ikdr`` loads only the thread/version configuration and the compiled
core; the estimators, the submodules and the command line are imported on
first use (module ``__getattr__``), so that a program which only imports ikdr
pays little for it (``benchmarks/bench_import.py``).
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from . import _native  # noqa: F401  (loads the compiled core: threadpoolctl must see it)
from ._config import build_info, get_num_threads, num_threads, set_num_threads, show_config
from ._config import get_memory_budget, memory_budget, set_memory_budget
from ._config import package_version as _package_version
from ._config import register_threadpoolctl as _register_threadpoolctl

_register_threadpoolctl()

#: public name -> module that defines it (imported on first access)
_LAZY = {
    "ISM": "._ism",
    "AlternationResult": "._clustering",
    "ISMClustering": "._clustering",
    "SemiSupervisedISM": "._clustering",
    "alternate": "._clustering",
    "default_n_components": "._clustering",
    "KDAC": "._kdac",
    "select_sigma_lambda": "._kdac",
    "KernelDependenceNetwork": "._kdn",
    "KNetClustering": "._knet",
    "KernelSVD": "._ksvd",
    "asymmetric_nystrom": "._ksvd_solvers",
    "ksvd_bicluster": "._ksvd_bicluster",
    "learn_compat_map": "._ksvd_compat",
    "ISMConvergence": "._solver",
    "ISMResult": "._solver",
    "choose_n_components": "._solver",
    "ism": "._solver",
    "principal_angle": "._solver",
    "hsic": "._hsic",
    "Gamma": ".gamma",
    "supervised_gamma": ".gamma",
    "median_sigma": ".kernels",
}
_SUBMODULES = ("datasets", "gamma", "graph", "kernels", "metrics", "spectral")

if TYPE_CHECKING:  # what the lazy names are, for type checkers and IDEs
    from . import datasets, gamma, graph, kernels, metrics, spectral
    from ._clustering import AlternationResult, ISMClustering, SemiSupervisedISM, alternate
    from ._clustering import default_n_components
    from ._hsic import hsic
    from ._ism import ISM
    from ._kdac import KDAC, select_sigma_lambda
    from ._kdn import KernelDependenceNetwork
    from ._knet import KNetClustering
    from ._ksvd import KernelSVD
    from ._ksvd_bicluster import ksvd_bicluster
    from ._ksvd_compat import learn_compat_map
    from ._ksvd_solvers import asymmetric_nystrom
    from ._solver import ISMConvergence, ISMResult, choose_n_components, ism, principal_angle
    from .gamma import Gamma, supervised_gamma
    from .kernels import median_sigma

    __version__: str


if not TYPE_CHECKING:  # type checkers see the imports above instead

    def __getattr__(name: str) -> Any:
        if name == "__version__":
            value: Any = _package_version()
        elif name in _SUBMODULES:
            value = importlib.import_module("." + name, __name__)
        elif name in _LAZY:
            value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        else:
            raise AttributeError(f"module 'ikdr' has no attribute {name!r}")
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "AlternationResult", "alternate", "default_n_components", "ISM", "ISMClustering", "ISMConvergence", "ISMResult", "KDAC", "KNetClustering",
    "KernelDependenceNetwork", "KernelSVD", "SemiSupervisedISM", "Gamma", "asymmetric_nystrom",
    "build_info", "choose_n_components", "datasets", "gamma", "get_num_threads", "graph", "hsic",
    "ksvd_bicluster", "learn_compat_map", "metrics", "select_sigma_lambda",
    "ism", "kernels", "median_sigma", "num_threads", "principal_angle", "set_num_threads",
    "show_config", "spectral", "supervised_gamma", "__version__",
    "get_memory_budget", "memory_budget", "set_memory_budget",
]
