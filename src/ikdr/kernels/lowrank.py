"""The native sweeps of the landmark passes (:mod:`ikdr.passes.landmarks`), as
the passes reach the compiled core: through the kernel layer, which owns the
kernel terms their factors carry (:class:`ikdr.kernels.base.LowRankPart`)."""
from __future__ import annotations

from .._native import LandmarkFactor, LandmarkGamma, landmark_first_sweep, landmark_second_sweep

__all__ = ["LandmarkFactor", "LandmarkGamma", "landmark_first_sweep", "landmark_second_sweep"]
