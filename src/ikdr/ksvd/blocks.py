"""Blocks of the KSVD kernel matrix G_ij = kappa(x_i, z_j), never stored whole.

* ``DenseBlocks``: dense points, kernel blocks from :mod:`ikdr.kernels`.
* ``SparseBlocks``: sparse points (a graph's adjacency). Every built-in kernel
  is a function of ``d2_ij = r_i + c_j - 2 P_ij`` with ``P = X Z^T`` sparse, so
  G = diag(dl) (u v^T + S) with S sparse on the pattern of P: exact products
  and blocks in O(nnz(P)) work, never a dense n x m array unless asked for.
* ``Centered``: H_n G H_m from the blocks of G and its exact means.
* ``ArrayBlocks``: a given dense G.

Every evaluator has ``n``, ``m``, ``block(rows, cols)`` and ``operator``
(a LinearOperator, or None when products cost a full kernel pass).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator

from .. import kernels as _kernels
from .._config import require_memory
from .._utils.validation import check_finite_result

def _take(a, idx):
    return a if idx is None else a[idx]


class DenseBlocks:
    """Blocks of G between dense points X (n x d) and Z (m x d), by the C++ core.

    SNE rows are normalised over all m columns; their log-sum-exp shift and
    sum come from one tiled C++ pass (O(n m d) time, O(n) memory) the first
    time a block needs them.
    """

    def __init__(self, X, Z, kernel, gamma, degree, callable_kernel=None):
        self.X, self.Z = X, Z
        self.n, self.m = X.shape[0], Z.shape[0]
        self.kernel, self.gamma, self.degree = kernel, gamma, degree
        self.callable_kernel = callable_kernel
        self._shift = self._sums = None

    @property
    def sigma(self):
        return self.gamma / np.sqrt(2.0)  # exp(-d2 / gamma^2) = exp(-d2 / (2 sigma^2))

    def _ism_kernel(self):
        """The kernel of ikdr.kernels that evaluates G (all but SNE)."""
        if self.kernel == "linear":
            return _kernels.Linear()
        if self.kernel == "polynomial":
            return _kernels.Polynomial(degree=int(self.degree), c=1.0)
        return _kernels.Gaussian(sigma=self.sigma)

    def normalisers(self, rows=None):
        """SNE (shift, sum) of the rows ``rows`` of X over all columns."""
        if rows is None:
            if self._shift is None:
                self._shift, self._sums = _kernels.sne_row_normalisers(
                    self.X, self.Z, self.sigma)
            return self._shift, self._sums
        if self._shift is not None:
            return self._shift[rows], self._sums[rows]
        return _kernels.sne_row_normalisers(self.X[rows], self.Z, self.sigma)

    def block(self, rows=None, cols=None):
        Xr = np.ascontiguousarray(_take(self.X, rows))
        Zc = np.ascontiguousarray(_take(self.Z, cols))
        require_memory(8 * Xr.shape[0] * Zc.shape[0],
                       f"a dense {Xr.shape[0]} x {Zc.shape[0]} block of G")
        if self.callable_kernel is not None:
            return _call_kernel(self.callable_kernel, Xr, Zc)
        # small blocks: thread start-up costs more than the work, many times the work
        # on a loaded machine (the threads' per-call cost: benchmarks/bench_call_overhead.py)
        if self.kernel == "sne":
            shift, sums = self.normalisers(rows)
            G = _kernels.sne_matrix(Xr, Zc, self.sigma, shift, sums)
        else:
            G = self._ism_kernel().matrix(Xr, Zc)
        return check_finite_result(G, f"the {self.kernel} kernel matrix G")

    def new_rows(self, Xnew):
        """G between new rows and the training columns (SNE: normalised over them)."""
        return DenseBlocks(Xnew, self.Z, self.kernel, self.gamma, self.degree,
                            self.callable_kernel).block()

    def new_columns(self, Znew):
        """G between the training rows and new columns (SNE: training normalisers)."""
        other = DenseBlocks(self.X, Znew, self.kernel, self.gamma, self.degree,
                             self.callable_kernel)
        if self.kernel == "sne":
            other._shift, other._sums = self.normalisers()
        return other.block()


    operator = None  # dense points: products with G cost a full kernel pass; build G instead


def dense_kernel_matrix(kernel, gamma, degree=2):
    """``kappa(X, Z) -> G`` for dense points: the whole block of :class:`DenseBlocks`
    (the kernel of the learned compatibility map, evaluated at every step)."""
    return lambda X, Z: DenseBlocks(np.ascontiguousarray(X), np.ascontiguousarray(Z), kernel,
                                     gamma, degree).block()


def _call_kernel(fn, X, Z):
    G = np.asarray(fn(X, Z), dtype=np.float64)
    if G.shape != (X.shape[0], Z.shape[0]):
        raise ValueError(f"the kernel callable returned shape {G.shape}, expected "
                         f"{(X.shape[0], Z.shape[0])}")
    if not np.all(np.isfinite(G)):
        raise ValueError("the kernel callable returned NaN or infinite values")
    return G


def _row_norms_sq(X):
    return np.asarray(X.multiply(X).sum(axis=1)).ravel()


def _complement_min(P, c):
    """min_{j not in pattern(P_i)} c_j for every row i (inf if the row is full)."""
    n, m = P.shape
    counts = np.diff(P.indptr)
    K = int(min(m, counts.max(initial=0) + 1))
    order = np.argsort(c, kind="stable")[:K]
    rank = np.full(m, K, dtype=np.int64)
    rank[order] = np.arange(K)
    out = np.empty(n)
    step = max(1, 8_000_000 // max(K, 1))
    row_of = np.repeat(np.arange(n), counts)
    for r0 in range(0, n, step):
        r1 = min(n, r0 + step)
        seen = np.zeros((r1 - r0, K + 1), dtype=bool)
        lo, hi = P.indptr[r0], P.indptr[r1]
        seen[row_of[lo:hi] - r0, rank[P.indices[lo:hi]]] = True
        first = np.argmin(seen[:, :K], axis=1)
        missing = ~seen[np.arange(r1 - r0), first]
        out[r0:r1] = np.where(missing, c[order[first]], np.inf)
    return out


class SparseBlocks:
    """Blocks of G between sparse points, as diag(dl) (u v^T + S).

    With P = X Z^T (sparse), r_i = ||x_i||^2, c_j = ||z_j||^2 and
    d2_ij = r_i + c_j - 2 P_ij, off the pattern of P every kernel is separable:
    linear 0, polynomial 1, RBF exp(-r_i/g^2) exp(-c_j/g^2). S holds the
    difference on the pattern. SNE rows are shifted by their exact minimum
    squared distance (log-sum-exp) and divided by their exact sums, both in
    O(nnz(P) + n log m).
    """

    def __init__(self, X, Z, kernel, gamma, degree, *, row_stats=None):
        self.X, self.Z = X, Z
        self.n, self.m = X.shape[0], Z.shape[0]
        self.kernel, self.gamma, self.degree = kernel, gamma, degree
        P = (X @ Z.T).tocsr()
        P.sum_duplicates()
        P.sort_indices()
        self.r, self.c = _row_norms_sq(X), _row_norms_sq(Z)
        rows = np.repeat(np.arange(self.n), np.diff(P.indptr))
        cols = P.indices
        n, m = self.n, self.m
        if kernel == "linear":
            self.dl, self.u, self.v = np.ones(n), np.zeros(n), np.zeros(m)
            data = P.data.copy()
        elif kernel == "polynomial":
            self.dl, self.u, self.v = np.ones(n), np.ones(n), np.ones(m)
            data = (P.data + 1.0) ** int(degree) - 1.0
        else:
            inv_g2 = 1.0 / gamma ** 2
            d2 = np.maximum(self.r[rows] + self.c[cols] - 2.0 * P.data, 0.0)
            if kernel == "rbf":
                self.dl = np.ones(n)
                self.u, self.v = np.exp(-self.r * inv_g2), np.exp(-self.c * inv_g2)
                data = np.exp(-d2 * inv_g2) - self.u[rows] * self.v[cols]
            else:  # sne
                if row_stats is None:
                    shift, cmin = self._sne_shift(P, rows, d2)
                else:
                    shift, cmin = row_stats[0], row_stats[2]
                self.cmin = cmin
                self.u = np.exp(-(self.r + cmin - shift) * inv_g2)
                self.v = np.exp(-(self.c - cmin) * inv_g2)
                data = np.exp(-(d2 - shift[rows]) * inv_g2) - self.u[rows] * self.v[cols]
                if row_stats is None:
                    S = sp.csr_matrix((data, cols, P.indptr), shape=(n, m))
                    sums = self.u * self.v.sum() + np.asarray(S.sum(axis=1)).ravel()
                else:
                    sums = row_stats[1]
                self.shift, self.sums = shift, sums
                self.dl = 1.0 / sums
        self.S = sp.csr_matrix((data, cols, P.indptr), shape=(n, m))
        self._St = None

    def _sne_shift(self, P, rows, d2):
        # Exact row minimum of d2: on the pattern from d2, off it r_i + min c_j.
        cmin = float(self.c.min())
        off = self.r + _complement_min(P, self.c)
        on = np.full(self.n, np.inf)
        np.minimum.at(on, rows, d2)
        return np.minimum(on, off), cmin

    @property
    def St(self):
        if self._St is None:
            self._St = self.S.T.tocsr()
        return self._St

    def block(self, rows=None, cols=None):
        u, v, dl = _take(self.u, rows), _take(self.v, cols), _take(self.dl, rows)
        require_memory(8 * u.shape[0] * v.shape[0], f"a dense {u.shape[0]} x {v.shape[0]} block of G")
        S = self.S if rows is None else self.S[rows]
        if cols is not None:
            S = S[:, cols]
        if rows is None or S.shape[0] * S.shape[1] > 1_000_000:
            # large blocks: one parallel C++ pass instead of three numpy passes
            return _kernels.lowrank_plus_sparse(dl, u, v, S)
        out = np.multiply.outer(u, v)
        S = S.tocoo()
        out[S.row, S.col] += S.data
        out *= dl[:, None]
        return out

    def matmat(self, B):
        B = np.asarray(B, dtype=np.float64).reshape(self.m, -1)
        return self.dl[:, None] * (np.multiply.outer(self.u, self.v @ B) + self.S @ B)

    def rmatmat(self, B):
        B = self.dl[:, None] * np.asarray(B, dtype=np.float64).reshape(self.n, -1)
        return np.multiply.outer(self.v, self.u @ B) + self.St @ B

    @property
    def operator(self):
        mv = lambda x: self.matmat(x).ravel()  # noqa: E731
        rmv = lambda x: self.rmatmat(x).ravel()  # noqa: E731
        return LinearOperator((self.n, self.m), matvec=mv, rmatvec=rmv,
                              matmat=self.matmat, rmatmat=self.rmatmat, dtype=np.float64)

    def new_rows(self, Xnew):
        return SparseBlocks(Xnew, self.Z, self.kernel, self.gamma, self.degree).block()

    def new_columns(self, Znew):
        stats = (self.shift, self.sums, self.cmin) if self.kernel == "sne" else None
        return SparseBlocks(self.X, Znew, self.kernel, self.gamma, self.degree,
                             row_stats=stats).block()



class Centered:
    """H_n G H_m from the blocks of G and its exact row / column means."""

    def __init__(self, base):
        self.base, self.n, self.m = base, base.n, base.m
        self.row_mean, self.col_mean = _row_col_means(base)
        self.grand_mean = float(self.row_mean.mean())

    def block(self, rows=None, cols=None):
        B = self.base.block(rows, cols)
        return (B - _take(self.row_mean, rows)[:, None] - _take(self.col_mean, cols)[None, :]
                + self.grand_mean)

    @property
    def operator(self):
        op = self.base.operator
        if op is None:
            return None
        H = lambda B: B - B.mean(axis=0, keepdims=True)  # noqa: E731  (H B, B with 2-D columns)
        mm = lambda B: H(op.matmat(H(np.asarray(B).reshape(self.m, -1))))  # noqa: E731
        rm = lambda B: H(op.rmatmat(H(np.asarray(B).reshape(self.n, -1))))  # noqa: E731
        return LinearOperator((self.n, self.m), matvec=lambda x: mm(x).ravel(),
                              rmatvec=lambda x: rm(x).ravel(), matmat=mm, rmatmat=rm,
                              dtype=np.float64)


def _row_col_means(blocks, chunk_elements=4_000_000):
    """Exact row and column means of G: O(n m) time, O(chunk) memory."""
    if blocks.operator is not None:
        op = blocks.operator
        return (op.matvec(np.ones(blocks.m)).ravel() / blocks.m,
                op.rmatvec(np.ones(blocks.n)).ravel() / blocks.n)
    rows = np.empty(blocks.n)
    cols = np.zeros(blocks.m)
    step = max(1, chunk_elements // blocks.m)
    for r0 in range(0, blocks.n, step):
        B = blocks.block(np.arange(r0, min(blocks.n, r0 + step)), None)
        rows[r0:r0 + B.shape[0]] = B.mean(axis=1)
        cols += B.sum(axis=0)
    return rows, cols / blocks.n


class ArrayBlocks:
    def __init__(self, G):
        self.G, (self.n, self.m) = G, G.shape

    def block(self, rows=None, cols=None):
        B = self.G if rows is None else self.G[rows]
        return B if cols is None else B[:, cols]


def block_operator(blocks, chunk_elements=4_000_000):
    """G as a LinearOperator: the blocks' own, or products by row chunks of G."""
    if blocks.operator is not None:
        return blocks.operator
    n, m = blocks.n, blocks.m
    step = max(1, chunk_elements // m)

    def mm(B):
        B = np.asarray(B, dtype=np.float64).reshape(m, -1)
        return np.vstack([blocks.block(np.arange(a, min(n, a + step)), None) @ B
                          for a in range(0, n, step)])

    def rm(B):
        B = np.asarray(B, dtype=np.float64).reshape(n, -1)
        out = np.zeros((m, B.shape[1]))
        for a in range(0, n, step):
            out += blocks.block(np.arange(a, min(n, a + step)), None).T @ B[a:a + step]
        return out

    return LinearOperator((n, m), matvec=lambda x: mm(x).ravel(), rmatvec=lambda x: rm(x).ravel(),
                          matmat=mm, rmatmat=rm, dtype=np.float64)
