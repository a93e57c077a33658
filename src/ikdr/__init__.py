"""ikdr: interpretable kernel dimension reduction by the Iterative Spectral Method.

Functions for embedding in other libraries (the ISM solver, kernels, Gamma
builders, HSIC) and scikit-learn estimators for end users, over one C++ core.
"""
from importlib.metadata import PackageNotFoundError, version as _version

from . import datasets, gamma, graph, kernels, metrics, spectral  # noqa: F401
from ._config import build_info, get_num_threads, num_threads, set_num_threads, show_config
from ._config import get_memory_budget, memory_budget, set_memory_budget
from ._hsic import hsic
from ._clustering import AlternationResult, ISMClustering, SemiSupervisedISM, alternate
from ._clustering import default_n_components
from ._ism import ISM
from ._kdac import KDAC, select_sigma_lambda
from ._kdn import KernelDependenceNetwork
from ._knet import KNetClustering
from ._ksvd import KernelSVD
from ._ksvd_bicluster import ksvd_bicluster
from ._ksvd_solvers import asymmetric_nystrom
from ._solver import ISMConvergence, ISMResult, choose_n_components, ism, principal_angle
from .gamma import Gamma, supervised_gamma
from .kernels import median_sigma

try:
    __version__ = _version("ikdr")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    from ._native import build_info as _build_info

    __version__ = _build_info().get("version", "0+unknown")

__all__ = [
    "AlternationResult", "alternate", "default_n_components", "ISM", "ISMClustering", "ISMConvergence", "ISMResult", "KDAC", "KNetClustering",
    "KernelDependenceNetwork", "KernelSVD", "SemiSupervisedISM", "Gamma", "asymmetric_nystrom",
    "choose_n_components", "datasets", "gamma", "get_num_threads", "graph", "hsic",
    "ksvd_bicluster", "metrics", "select_sigma_lambda",
    "ism", "kernels", "median_sigma", "num_threads", "principal_angle", "set_num_threads",
    "show_config", "spectral", "supervised_gamma", "__version__",
    "get_memory_budget", "memory_budget", "set_memory_budget",
]
