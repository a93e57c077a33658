"""Synthetic data shared by the asv benchmarks (a standardised class mixture)."""
import numpy as np


def mixture(n, d, n_classes=10, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, n)
    centers = rng.standard_normal((n_classes, d)) * 1.5
    X = centers[y] + rng.standard_normal((n, d)) * 3.0
    return (X - X.mean(0)) / X.std(0), y
