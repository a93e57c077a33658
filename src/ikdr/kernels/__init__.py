r"""The ISM family of kernels, their conic combinations and their bandwidth rules.

Public names, all importable from ``ikdr.kernels``:

* the kernel classes (:mod:`ikdr.kernels.family`) and :func:`make_kernel`
  (:mod:`ikdr.kernels.names`);
* the bandwidth rules :func:`median_sigma` and :func:`separation_sigma`
  (:mod:`ikdr.kernels.bandwidth`);
* the SNE kernel and its blocks for the asymmetric kernel SVD
  (:mod:`ikdr.kernels.sne`).

For ikdr's own modules, :mod:`ikdr.kernels.feature_bins` bins each feature's
values for the one-dimensional kernels of the marginal dependence.

Every kernel owns its mathematics and its capabilities (its Phi terms, its
low-rank factors, whether it is an affinity, whether it needs all rows), so
no module outside this package switches on kernel types.
"""
from .bandwidth import MEDIAN_SUBSAMPLE, median_sigma, separation, separation_sigma  # noqa: F401
from .base import (PANEL_FLOPS, ConicKernel, Kernel, KernelLike, LowRankPart,  # noqa: F401
                   projected_points)
from .family import Gaussian, Linear, Multiquadric, Polynomial, RelativeGaussian, Squared
from .family import renamed_class
from .names import KERNEL_NAMES, make_kernel  # noqa: F401
from .sne import SNE, lowrank_plus_sparse, sne_matrix, sne_row_normalisers

__all__ = [
    "Kernel", "Linear", "Polynomial", "Gaussian", "RelativeGaussian", "Squared",
    "Multiquadric", "ConicKernel", "SNE", "make_kernel", "median_sigma", "separation_sigma",
    "separation", "sne_row_normalisers", "sne_matrix", "lowrank_plus_sparse", "LowRankPart",
]
# also importable here, for ikdr's own modules: KernelLike (the type of a kernel
# argument), KERNEL_NAMES (the names make_kernel takes), MEDIAN_SUBSAMPLE, PANEL_FLOPS,
# projected_points (XW on ikdr's threads)


def __getattr__(name: str) -> type:
    # kernel classes under their names before a rename (``Multiquadratic``): FutureWarning
    return renamed_class(__name__, name)
