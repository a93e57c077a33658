"""ikdr: interpretable kernel dimension reduction by the Iterative Spectral Method."""
from . import _core  # noqa: F401
