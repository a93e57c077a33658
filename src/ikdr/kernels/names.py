"""Kernels by name: the names the estimators, the command line and :func:`make_kernel` accept."""
from __future__ import annotations

from .._utils.typing import SigmaLike
from .base import Kernel, KernelLike
from .family import Gaussian, Linear, Multiquadratic, Polynomial, RelativeGaussian, Squared
from .sne import SNE

__all__ = ["KERNEL_NAMES", "make_kernel"]

KERNEL_NAMES = {
    "linear": Linear,
    "polynomial": Polynomial,
    "poly": Polynomial,
    "gaussian": Gaussian,
    "rbf": Gaussian,
    "squared": Squared,
    "multiquadratic": Multiquadratic,
    "multiquadric": Multiquadratic,
    "relative_gaussian": RelativeGaussian,
    "sne": SNE,
}


def make_kernel(kernel: KernelLike | None, *, sigma: SigmaLike = "median") -> Kernel:
    """A kernel object from a name (``"gaussian"``, ``"polynomial"``, ...) or a kernel.

    ``sigma`` is used by the Gaussian kernel when the kernel is given by name.
    """
    if isinstance(kernel, Kernel):
        return kernel
    if isinstance(kernel, str):
        key = kernel.lower()
        if key not in KERNEL_NAMES:
            raise ValueError(f"unknown kernel {kernel!r}; expected one of {sorted(set(KERNEL_NAMES))} "
                             "or an ikdr.kernels.Kernel")
        cls = KERNEL_NAMES[key]
        return cls(sigma=sigma) if cls in (Gaussian, SNE) else cls()
    raise TypeError(f"kernel must be a name or an ikdr.kernels.Kernel, got {type(kernel).__name__}")
