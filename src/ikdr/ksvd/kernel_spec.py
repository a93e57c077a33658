"""Which kernel a :class:`~ikdr.KernelSVD` computes, at which bandwidth, and its blocks.

The estimator's ``kernel``, ``sigma``, ``gamma`` and ``degree`` name one of the
paper's kernels (:data:`KERNELS`), a kernel of :mod:`ikdr.kernels` (whose
``block_spec`` says how the tiled blocks compute it) or any callable:
:func:`kernel_spec` resolves them once into a :class:`KernelSpec`.
:func:`fit_gamma` gives the paper's bandwidth gamma (``exp(-d2 / gamma^2)``,
gamma = sqrt(2) sigma) where the kernel has one, from the parameters or by the
median rule between the two point sets; :func:`make_blocks` evaluates the
blocks of G between the sets (:mod:`ikdr.ksvd.blocks`, or Dask row blocks,
:mod:`ikdr.ksvd.dask_blocks`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
import scipy.sparse as sp

from .. import kernels as _kernels
from ..passes.dask_data import DaskData
from .blocks import DenseBlocks, SparseBlocks
from .dask_blocks import KSVDBlocks

__all__ = ["KERNELS", "KERNEL_ALIASES", "MEDIAN_PAIRS", "KernelSpec", "kernel_spec",
           "paper_gamma", "fit_gamma", "make_blocks"]

KERNELS = ("rbf", "sne", "polynomial", "linear")
#: the names of the package's kernel vocabulary (:data:`ikdr.kernels.KERNEL_NAMES`) that
#: name one of these: the estimators' "gaussian" is the paper's "rbf"
KERNEL_ALIASES = {"gaussian": "rbf", "poly": "polynomial"}
#: rows and columns sampled for the median rule between the two sets
MEDIAN_PAIRS = 1000


@dataclass(frozen=True)
class KernelSpec:
    """The kernel of a fit: ``kind`` one of :data:`KERNELS` or "callable"; ``gamma``
    the paper's bandwidth when the parameters or the kernel fix it (None: the
    median rule, or a kernel without one); ``degree`` the polynomial's;
    ``function`` the callable or kernel object of kind "callable" (None
    otherwise)."""

    kind: str
    gamma: Optional[float]
    degree: int
    function: Any = None


def paper_gamma(sigma, gamma):
    """The paper's bandwidth gamma = sqrt(2) sigma (``gamma`` when given), or None for
    the median rule (``sigma="median"``)."""
    if gamma is not None:
        return float(gamma)
    return None if isinstance(sigma, str) else float(sigma) * np.sqrt(2.0)


def kernel_spec(kernel, sigma, gamma, degree) -> KernelSpec:
    """The :class:`KernelSpec` of the estimator's parameters.

    Kernels of :mod:`ikdr.kernels`: Gaussian(sigma) is "rbf" with gamma =
    sqrt(2) sigma, SNE(sigma) "sne" likewise, Linear "linear", Polynomial(p,
    c=1) "polynomial"; any other kernel object is used through its ``matrix``
    (dense inputs only).
    """
    k = kernel
    if isinstance(k, str):
        k = KERNEL_ALIASES.get(k.lower(), k.lower())
        if k in KERNELS:
            return KernelSpec(k, paper_gamma(sigma, gamma), degree)
        if k in _kernels.KERNEL_NAMES:     # another kernel of the vocabulary, as its object
            k = _kernels.make_kernel(k)
        else:
            raise ValueError(f"kernel must be one of {KERNELS}, a name of "
                             f"{sorted(_kernels.KERNEL_NAMES)}, a kernel of ikdr.kernels or "
                             f"a callable, got {kernel!r}")
    if isinstance(k, _kernels.Kernel):
        block = k.block_spec()          # the kernel says how the tiled blocks compute it
        if block is None:
            return KernelSpec("callable", None, degree, k)
        kind, kernel_sigma, kernel_degree = block
        if kind in ("rbf", "sne"):
            own = paper_gamma(sigma, gamma) if kernel_sigma is None else \
                kernel_sigma * np.sqrt(2.0)
            return KernelSpec(kind, own, degree)
        return KernelSpec(kind, None, degree if kernel_degree is None else kernel_degree)
    if callable(k):
        return KernelSpec("callable", None, degree, k)
    raise ValueError(f"kernel must be one of {KERNELS}, a kernel of ikdr.kernels or a "
                     f"callable, got {k!r}")


def median_gamma(X, Z, rng):
    """The median rule between the two sets (:func:`ikdr.kernels.median_sigma` with Z,
    at most :data:`MEDIAN_PAIRS` rows of each)."""
    return _kernels.median_sigma(X, Z, max_samples=MEDIAN_PAIRS, random_state=rng)


def fit_gamma(spec: KernelSpec, X, Z, rng):
    """The bandwidth of a fit on the sets X and Z: the spec's, or the median rule's
    between them for an "rbf" or "sne" kernel without one; None for the others."""
    if spec.kind not in ("rbf", "sne"):
        return None
    return float(spec.gamma) if spec.gamma is not None else median_gamma(X, Z, rng)


def make_blocks(spec: KernelSpec, X, Z, gamma):
    """The blocks of G between X and Z: on a cluster (X a
    :class:`~ikdr.passes.dask_data.DaskData`), sparse (either set sparse: both are
    taken so) or dense; a kernel object's data-dependent parameters are fixed once
    on both sets."""
    if isinstance(X, DaskData):       # the rows stay on the cluster
        return KSVDBlocks(X, Z, spec.kind, gamma, spec.degree, spec.function)
    if sp.issparse(X) != sp.issparse(Z):
        X = X if sp.issparse(X) else sp.csr_matrix(X)
        Z = Z if sp.issparse(Z) else sp.csr_matrix(Z)
    if sp.issparse(X):
        if spec.kind == "callable":
            raise TypeError("a kernel callable (or this kernel object) needs dense inputs; "
                            "pass dense arrays")
        return SparseBlocks(X, Z, spec.kind, gamma, spec.degree)
    fn = spec.function
    if isinstance(fn, _kernels.Kernel):
        fn = fn.fit(np.vstack([X, Z])).matrix
    return DenseBlocks(X, Z, spec.kind, gamma, spec.degree, callable_kernel=fn)
