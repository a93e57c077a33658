"""Test data shared by several test files."""
import numpy as np


def mixture(n, d, n_classes, seed=0):
    """A standardised n x d mixture of ``n_classes`` Gaussian classes (labels y)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, n)
    X = rng.standard_normal((n_classes, d))[y] * 1.5 + rng.standard_normal((n, d)) * 3.0
    return (X - X.mean(0)) / X.std(0), y
