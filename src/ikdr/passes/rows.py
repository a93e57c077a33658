"""Rows in memory or on disk: validation, blocks and projections, read one block at a time.

X may be an ``np.memmap`` larger than memory: every function here reads it in
row blocks of about :data:`BLOCK_BYTES` bytes and never copies it whole.
:class:`MemoryRows` is the row source of a pass written as a sum over row
blocks (the landmark passes); :class:`ikdr.passes.dask_data.DaskRows` is its
twin for rows on a Dask cluster, with the same methods.
"""
from __future__ import annotations

import contextlib
import contextvars

import numpy as np
import scipy.sparse as sp

from .._utils.sampling import sample_rows
from .._utils.validation import check_magnitude
from ..kernels import MEDIAN_SUBSAMPLE

__all__ = ["BLOCK_BYTES", "rows_per_block", "row_blocks", "check_rows", "validated_rows",
           "fit_kernel_on_rows", "project", "LazyProjection", "MemoryRows", "sum_parts"]

#: rows of X per block: about this many bytes of X (float64) per block
BLOCK_BYTES = 1 << 25


def rows_per_block(d, block_rows=None, width=0):
    if block_rows is not None:
        return max(1, int(block_rows))
    return max(256, BLOCK_BYTES // (8 * max(1, d, width)))


def row_blocks(n, d, block_rows=None, *, width=0):
    """The ``slice`` objects of the row blocks of an n x d array; ``width``: the
    widest n_b x width array a block makes (m landmark columns), which bounds it too."""
    b = rows_per_block(d, block_rows, width)
    return [slice(s, min(n, s + b)) for s in range(0, n, b)]


#: the row arrays an estimator validated for the fit under way (:func:`validated_rows`)
_VALIDATED: contextvars.ContextVar[tuple] = contextvars.ContextVar("ikdr_validated_rows",
                                                                  default=())


@contextlib.contextmanager
def validated_rows(X):
    """Within the context, :func:`check_rows` returns this very X (the same
    object) without reading it again: an estimator that validated X once makes
    several fits on it (the "auto" landmark rule), and each validation is a
    full read of X, from disk for a memmap (``benchmarks/bench_nystrom_ism.py
    --sections memmap``). Outside the context, X is read again,
    so data changed between fits is validated again."""
    token = _VALIDATED.set(_VALIDATED.get() + (X,))
    try:
        yield X
    finally:
        _VALIDATED.reset(token)


def check_rows(X, name="X", *, block_rows=None):
    """Validate a 2-D real array (an ndarray or ``np.memmap``) one row block at a
    time, never loading or copying it whole: at least 2 rows, finite (NaN or
    infinity: a ValueError naming the first bad row and its row block), values whose squares do
    not overflow. Returns X unchanged (float32 and float64 kept; other in-memory
    dtypes are converted to float64)."""
    if any(X is checked for checked in _VALIDATED.get()):
        return X
    if sp.issparse(X):
        raise TypeError(f"{name}: sparse input is not supported here; pass a dense array")
    if not isinstance(X, np.ndarray):
        X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"{name} must be 2-D (n_samples, n_features), got shape {X.shape}")
    if X.dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
        if isinstance(X, np.memmap):
            raise ValueError(f"{name} is a memmap of dtype {X.dtype}; the landmark passes read "
                             "float32 or float64 memmaps")
        X = np.asarray(X, dtype=np.float64)
    n, d = X.shape
    if n < 2:
        raise ValueError(f"{name} has {n} sample(s); at least 2 are required")
    if d < 1:
        raise ValueError(f"{name} has 0 features")
    biggest = 0.0
    for sl in row_blocks(n, d, block_rows):
        B = np.asarray(X[sl])
        # two reductions and no temporaries (NaN propagates through both); the
        # first bad row is looked for only in a block that has one
        top, bottom = (float(B.max()), float(B.min())) if B.size else (0.0, 0.0)
        if not (np.isfinite(top) and np.isfinite(bottom)):
            i = sl.start + int(np.argmax((~np.isfinite(B)).any(axis=1)))
            raise ValueError(f"{name} contains NaN or infinite values (first in row {i}, "
                             f"row block {sl.start}:{sl.stop})")
        biggest = max(biggest, abs(top), abs(bottom))
    check_magnitude(biggest, X.dtype, name)
    return X


def fit_kernel_on_rows(kernel, X, random_state=None):
    """The kernel's data-dependent parameters from at most 3,000 rows drawn as
    :func:`ikdr.median_sigma` draws them (X is not loaded whole: a memmap, or
    the blocks of a dask array on a cluster)."""
    return kernel.fit(sample_rows(X, MEDIAN_SUBSAMPLE, random_state),
                      random_state=random_state)


def project(X, W, dtype, block_rows=None):
    """Z = XW (n x q) in ``dtype``, by row blocks."""
    n, d = X.shape
    W = np.asarray(W, dtype=dtype)
    Z = np.empty((n, W.shape[1]), dtype=dtype)
    for sl in row_blocks(n, d, block_rows):
        Z[sl] = np.asarray(X[sl], dtype=dtype) @ W
    return Z


class LazyProjection:
    """Z = XW of a row source (``take`` and ``project``, as :class:`MemoryRows`),
    projected only where read: ``Z[index]`` projects those rows, ``np.asarray(Z)``
    all of them. k-means++ landmarks on a large n read a uniform pool of rows
    only: a full float64 projection of a million-row memmap would be a read of
    every row for each landmark fit (``benchmarks/bench_nystrom_ism.py
    --sections memmap``)."""

    def __init__(self, rows, W):
        self.rows, self.W = rows, np.asarray(W, dtype=np.float64)
        self.shape = (rows.shape[0], self.W.shape[1])

    def __getitem__(self, index):
        return self.rows.take(index) @ self.W

    def __array__(self, dtype=None, copy=None):
        Z = self.rows.project(self.W, np.float64)
        return Z if dtype is None else Z.astype(dtype, copy=False)


def sum_parts(total, part):
    """``total + part`` for the partials of a pass: arrays, None (nothing), or
    tuples and lists of them, summed element by element."""
    if total is None:
        return part
    if part is None:
        return total
    if isinstance(part, (tuple, list)):
        return type(part)(sum_parts(a, b) for a, b in zip(total, part))
    return total + part


def add_into(total, part):
    """:func:`sum_parts`, adding in place into ``total``'s arrays where the sum keeps
    their shape and dtype (partials a reduction made itself: a d x d x classes sum
    of the class-moment screen is 49 MB at d = 784, and a new array per block
    costs its page faults as well as the sum)."""
    if total is None or part is None or not isinstance(total, (tuple, list, np.ndarray)):
        return sum_parts(total, part)
    if isinstance(part, (tuple, list)):
        return type(part)(add_into(a, b) for a, b in zip(total, part))
    if isinstance(part, np.ndarray) and total.shape == part.shape and total.flags.writeable \
            and np.result_type(total, part) == total.dtype:
        return np.add(total, part, out=total)
    return total + part


def _copied(parts):
    """``parts`` (arrays, None, or tuples and lists of them) with every array copied."""
    if isinstance(parts, (tuple, list)):
        return type(parts)(_copied(p) for p in parts)
    return parts.copy() if isinstance(parts, np.ndarray) else parts


class MemoryRows:
    r"""The rows of an ndarray or ``np.memmap``, visited one row block at a time.

    ``map_reduce(fn, block_args, shared)`` is the pass
    :math:`\sum_b fn(X_b, \text{block\_args}(b), \text{shared})` with the block
    partials added in block order (``start`` first): the arithmetic of a loop
    over the blocks, each read once.
    """

    #: whether the compiled sweeps may read the rows (dense rows in memory)
    native_sweeps = True

    def __init__(self, X, block_rows=None):
        self.X = X
        self.block_rows = block_rows
        self.shape = X.shape
        self.dtype = X.dtype

    def slices(self, width=0):
        """The row blocks, as slices (``width``: the widest n_b x width array a
        block makes, which bounds the block's rows too)."""
        return row_blocks(self.shape[0], self.shape[1], self.block_rows, width=width)

    def map_reduce(self, fn, block_args, shared=(), start=None, width=0, whole=False):
        """``start + sum_b fn(X_b, block_args(slice_b), *shared)``, the partials added
        in block order; ``whole``: ``fn`` loops over the row blocks itself (the
        core's sweeps), so it is called once, on all the rows."""
        # the partials add into a copy of start (never into start itself), or into
        # the first partial (fn's new result)
        total = None if start is None else _copied(start)
        for sl in [slice(0, self.shape[0])] if whole else self.slices(width):
            total = add_into(total, fn(self.X[sl], block_args(sl), *shared))
        return total

    def take(self, index):
        """The rows ``index`` as a float64 array."""
        return np.asarray(self.X[index], dtype=np.float64)

    def project(self, W, dtype):
        """XW (n x q) in ``dtype``, by row blocks."""
        return project(self.X, W, dtype, self.block_rows)
