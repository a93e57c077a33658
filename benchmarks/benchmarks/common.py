"""Synthetic data shared by the asv benchmarks: a standardised class mixture and
planted sparse documents."""
import numpy as np
import scipy.sparse as sp


def mixture(n, d, n_classes=10, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, n)
    centers = rng.standard_normal((n_classes, d)) * 1.5
    X = centers[y] + rng.standard_normal((n, d)) * 3.0
    return (X - X.mean(0)) / X.std(0), y


def documents(n, d, planted=10, tokens=40, seed=0):
    """(counts CSR n x d, labels): Zipf-distributed term counts, and two classes told
    apart by ``planted`` terms that occur mostly in class 1 (``benchmarks/bench_sparse.py``
    plants an XOR of term groups in the same kind of corpus, at full size)."""
    rng = np.random.default_rng(seed)
    p = np.arange(1, d + 1, dtype=np.float64) ** -1.1
    p /= p.sum()
    draws = rng.poisson(tokens, n)
    rows = np.repeat(np.arange(n), draws)
    cols = rng.choice(d, size=rows.size, p=p)
    y = rng.integers(0, 2, n)
    terms = rng.choice(np.arange(d // 20, d // 4), planted, replace=False)
    i, t = np.nonzero((rng.random((n, planted)) < 0.6) & (y[:, None] == 1))
    X = sp.csr_matrix((np.ones(rows.size + i.size),
                       (np.concatenate([rows, i]), np.concatenate([cols, terms[t]]))),
                      shape=(n, d))
    X.sum_duplicates()
    return X, y
