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

from . import _legacy
from . import _native  # noqa: F401  (loads the compiled core: threadpoolctl must see it)
from ._config import build_info, get_num_threads, num_threads, set_num_threads, show_config
from ._config import get_memory_budget, memory_budget, set_memory_budget
from ._config import package_version as _package_version

_legacy.install()      # estimators pickled by ikdr 0.1 load (old module paths)

#: public name -> module that defines it (imported on first access)
_LAZY = {
    "ISM": ".reduction.ism",
    "KernelDependenceNetwork": ".reduction.kdn",
    "ism": ".reduction.function",
    "importance_intervals": ".reduction.stability",
    "ImportanceIntervals": ".reduction.stability",
    "importance_table": ".inspection",
    "ImportanceTable": ".inspection",
    "TargetWarning": ".reduction.targets",
    "AlternationResult": ".cluster.alternation",
    "alternate": ".cluster.alternation",
    "default_n_components": ".cluster.alternation",
    "ISMClustering": ".cluster.ism_clustering",
    "SemiSupervisedISM": ".cluster.ism_clustering",
    "KDAC": ".cluster.kdac",
    "select_sigma_lambda": ".cluster.kdac",
    "KNetClustering": ".cluster.knet",
    "KernelSVD": ".ksvd.estimator",
    "asymmetric_nystrom": ".ksvd.solvers",
    "ksvd_bicluster": ".ksvd.bicluster",
    "learn_compat_map": ".ksvd.compat",
    "ISMConvergence": ".solver.certificate",
    "ISMResult": ".solver.driver",
    "choose_n_components": ".solver.driver",
    "principal_angle": "._utils.subspace",
    "hsic": ".metrics",
    "Gamma": ".gamma",
    "supervised_gamma": ".gamma",
    "median_sigma": ".kernels",
}
_SUBMODULES = ("datasets", "distributed", "gamma", "graph", "kernels", "metrics", "spectral")

if TYPE_CHECKING:  # what the lazy names are, for type checkers and IDEs
    from . import datasets, distributed, gamma, graph, kernels, metrics, spectral
    from ._utils.subspace import principal_angle
    from .cluster.alternation import AlternationResult, alternate, default_n_components
    from .cluster.ism_clustering import ISMClustering, SemiSupervisedISM
    from .cluster.kdac import KDAC, select_sigma_lambda
    from .cluster.knet import KNetClustering
    from .gamma import Gamma, supervised_gamma
    from .inspection import ImportanceTable, importance_table
    from .kernels import median_sigma
    from .ksvd.bicluster import ksvd_bicluster
    from .ksvd.compat import learn_compat_map
    from .ksvd.estimator import KernelSVD
    from .ksvd.solvers import asymmetric_nystrom
    from .metrics import hsic
    from .reduction.function import ism
    from .reduction.ism import ISM
    from .reduction.kdn import KernelDependenceNetwork
    from .reduction.stability import ImportanceIntervals, importance_intervals
    from .reduction.targets import TargetWarning
    from .solver.certificate import ISMConvergence
    from .solver.driver import ISMResult, choose_n_components

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
    "get_memory_budget", "memory_budget", "set_memory_budget", "importance_intervals",
    "ImportanceIntervals", "importance_table", "ImportanceTable", "TargetWarning",
]
