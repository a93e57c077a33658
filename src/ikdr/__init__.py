"""ikdr: interpretable kernel dimension reduction by the Iterative Spectral Method.

Functions for embedding in other libraries (the ISM solver, kernels, Gamma
builders, HSIC) and scikit-learn estimators for end users, over one C++ core.
"""
from importlib.metadata import PackageNotFoundError, version as _version

from . import _core, gamma, kernels  # noqa: F401
from ._config import get_num_threads, num_threads, set_num_threads, show_config
from ._hsic import hsic
from ._ism import ISM
from ._kdn import KernelDependenceNetwork
from ._knet import KNetClustering
from ._solver import ISMResult, choose_n_components, ism, principal_angle
from .gamma import Gamma, supervised_gamma
from .kernels import median_sigma

try:
    __version__ = _version("ikdr")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = _core.build_info().get("version", "0+unknown")

__all__ = [
    "ISM", "ISMResult", "Gamma", "KNetClustering", "KernelDependenceNetwork", "choose_n_components", "gamma", "get_num_threads", "hsic",
    "ism", "kernels", "median_sigma", "num_threads", "principal_angle", "set_num_threads",
    "show_config", "supervised_gamma", "__version__",
]
