"""Kernels by name: the names the estimators, the command line and :func:`make_kernel` accept."""
from __future__ import annotations

import warnings

from .._utils.typing import SigmaLike
from .base import Kernel, KernelLike
from .family import Gaussian, Linear, Multiquadric, Polynomial, RelativeGaussian, Squared
from .sne import SNE

__all__ = ["KERNEL_NAMES", "RENAMED_NAMES", "kernel_class", "make_kernel"]

KERNEL_NAMES = {
    "linear": Linear,
    "polynomial": Polynomial,
    "poly": Polynomial,
    "gaussian": Gaussian,
    "rbf": Gaussian,
    "squared": Squared,
    "multiquadric": Multiquadric,
    "relative_gaussian": RelativeGaussian,
    "sne": SNE,
}


#: kernel names renamed in ikdr 0.2: old name -> name; still accepted, with a FutureWarning
RENAMED_NAMES = {"multiquadratic": "multiquadric"}


def kernel_class(name: str) -> type[Kernel]:
    """The kernel class a name stands for (any case); a ValueError listing the names
    for an unknown one. A renamed name (:data:`RENAMED_NAMES`) gives a FutureWarning."""
    key = name.lower()
    if key in RENAMED_NAMES:
        warnings.warn(f"the kernel name {name!r} is deprecated and will be removed: use "
                      f"{RENAMED_NAMES[key]!r} (the same kernel)", FutureWarning, stacklevel=3)
        key = RENAMED_NAMES[key]
    if key not in KERNEL_NAMES:
        raise ValueError(f"unknown kernel {name!r}; expected one of {sorted(KERNEL_NAMES)} "
                         "or an ikdr.kernels.Kernel")
    return KERNEL_NAMES[key]


def make_kernel(kernel: KernelLike | None, *, sigma: SigmaLike = "median") -> Kernel:
    """A kernel object from a name (``"gaussian"``, ``"polynomial"``, ...) or a kernel.

    ``sigma`` is used by the Gaussian kernel when the kernel is given by name.
    """
    if isinstance(kernel, Kernel):
        return kernel
    if isinstance(kernel, str):
        cls = kernel_class(kernel)
        return cls(sigma=sigma) if cls in (Gaussian, SNE) else cls()
    raise TypeError(f"kernel must be a name or an ikdr.kernels.Kernel, got {type(kernel).__name__}")
