r"""The row-block sweeps of a landmark pass (:mod:`ikdr.passes.landmarks` states the maths).

A pass is two sweeps over the rows of X, each a sum over row blocks: the
first gives, per factor, :math:`P = C^T E`, the d x m products A (dense Phi)
and the m x k products Q (Phi V); the second, once :math:`S P` and
:math:`S Q` are known, the degree term :math:`X^T\mathrm{diag}(\deg)X`
(dense Phi) and :math:`X^T(\Gamma\circ M)R` (Phi V).

Two implementations of the same per-block sums:

* :func:`native_first_sweep` / :func:`native_second_sweep`: the compiled core
  (``cpp/include/ikdr/landmark_pass.hpp``), for Nystrom factors given as kernel
  terms (Gaussian, polynomial, multiquadric and its inverse). Called once on a
  whole in-memory array or memmap (the core loops over its row blocks, reading
  each once) or once per chunk of rows on a cluster. float32 products,
  float64 sums; bitwise the same for any thread count. A problem passes the
  same :func:`sweep_workspace` to all its sweeps, whose scratch memory they
  reuse.
* :func:`numpy_first_sweep` / :func:`numpy_second_sweep`: NumPy per row block,
  for what the core does not make: the exact finite-rank factors of the
  linear and squared members and random Fourier features. They are also the
  reference the core is tested against.

Cost of a pass (flops, 2 per multiply-add; n rows, d features, q = columns
of W, k of V, m landmarks, K classes or r = rank of a general Gamma, summed
over the factors that enter Phi): projections 4 n d (q + k) (both sweeps),
kernel rows 4 n q m, and

* dense Phi: 2 n d m (classes; 2 n d m r general) + n d^2 (the degree term,
  upper triangle) + K d m^2 + K d^2 m (assembling the per-class products);
* Phi V (matrix-free): 2 n m k (classes; 2 n m r k) + 2 n m (1 + k)
  (classes; 2 n m r (1 + k)) + 2 n d k: nothing d x d, no n d^2 term.

:func:`pass_flops` states these for the "auto" choice between exact and
landmark passes.
"""
from __future__ import annotations

import copy

import numpy as np
import scipy.sparse as sp

from .._native import LandmarkGamma, landmark_first_sweep, landmark_second_sweep, sweep_workspace

__all__ = ["GammaStructure", "numpy_first_sweep", "numpy_second_sweep", "native_first_sweep",
           "native_second_sweep", "native_rhs", "pass_flops", "sweep_workspace", "native_block_rows",
           "NATIVE_BLOCK_BYTES"]

#: the core's row blocks: about this many bytes of a block's rows and kernel rows, so that
#: a block stays in cache from one step of the sweep to the next; larger blocks leave the
#: cache between the steps and a pass slows down (benchmarks/bench_landmark_pass.py
#: times the sweeps against the GEMM roofline)
NATIVE_BLOCK_BYTES = 1 << 23


def native_block_rows(d, width, dtype, block_rows=None):
    """Rows per block of the core's sweeps: ``block_rows`` when given, else
    :data:`NATIVE_BLOCK_BYTES` of the block's d + ``width`` (landmark) columns."""
    if block_rows is not None:
        return max(1, int(block_rows))
    return max(256, NATIVE_BLOCK_BYTES // (np.dtype(dtype).itemsize * (d + width)))


class GammaStructure:
    """A factored Gamma as the passes use it: the class-indicator form of the
    supervised :math:`HYY^TH` when it is one (detected from the factor), else
    the general signed factor."""

    def __init__(self, gamma):
        if not gamma.is_factored:
            raise ValueError("the landmark approximation needs a factored Gamma "
                             "(G diag(s) G^T); a dense Gamma has no such structure")
        G, s, _ = gamma.arrays(np.float64)
        self.G = G
        self.s = np.ones(G.shape[1]) if s is None else np.asarray(s, dtype=np.float64)
        self.codes = None
        if np.all(self.s == 1.0) and G.shape[1] >= 2:
            p = -G.min(axis=0)
            Y = G + p
            codes = np.argmax(Y, axis=1)
            top = Y[np.arange(Y.shape[0]), codes]
            # Y one-hot (to 1e-12) with p its column means; without an n x classes
            # one-hot copy, which np.allclose would make (a full read and write of Y
            # at a million rows)
            onehot = np.abs(top - 1.0).max() <= 1e-12 and \
                (np.abs(Y).sum(axis=1) - np.abs(top)).max() <= 1e-12 * Y.shape[1]
            if onehot and np.allclose(p, np.bincount(codes, minlength=Y.shape[1]) / Y.shape[0],
                                      rtol=0, atol=1e-12):
                self.codes = codes
                self.p = p
                self.a = p[codes]
                self.ssq = float(p @ p)
                self.n_classes = G.shape[1]

    @property
    def centred(self):
        """Gamma 1 = 0 (the supervised HYY^TH always; a general factor when
        G s (G^T 1) vanishes to rounding)."""
        if self.classes:
            return True
        rows = self.G @ (self.s * self.G.sum(axis=0))
        return bool(np.abs(rows).max() <= 1e-12 * max(1.0, float(np.abs(self.G).max()) ** 2 * len(rows)))

    @property
    def classes(self):
        return self.codes is not None

    def block(self, sl):
        """The structure of the rows ``sl`` alone (what one row block's task needs);
        its methods then take ``slice(None)``."""
        out = copy.copy(self)
        out.G = self.G[sl]
        if self.classes:
            out.codes, out.a = self.codes[sl], self.a[sl]
        return out

    def native(self, dtype):
        """Gamma's rows as the core's sweeps take them (classes, or the factor in ``dtype``)."""
        if self.classes:
            return LandmarkGamma(codes=self.codes, proportions=self.p)
        return LandmarkGamma(factor=np.asarray(self.G, dtype=dtype))

    def columns(self, sl):
        """The block's columns that the first sweep multiplies by C^T:
        ``[Y, 1, a]`` (classes) or ``G`` (general)."""
        if self.classes:
            c = self.codes[sl]
            E = np.zeros((c.shape[0], self.n_classes + 2))
            E[np.arange(c.shape[0]), c] = 1.0
            E[:, -2] = 1.0
            E[:, -1] = self.a[sl]
            return E
        return self.G[sl]

    def value(self, P, S):
        """:math:`1^T(\\Gamma\\circ CSC^T)1` from P = C^T columns."""
        SP = S @ P
        if self.classes:
            k = self.n_classes
            within = float(np.einsum("ij,ij->", P[:, :k], SP[:, :k]))
            return within - 2.0 * float(P[:, -1] @ SP[:, -2]) + self.ssq * float(P[:, -2] @ SP[:, -2])
        return float(np.einsum("ij,ij,j->", P, SP, self.s))

    def degrees(self, sl, C, SP):
        """Rows ``sl`` of :math:`(\\Gamma\\circ CSC^T)1` (C the block of C, SP = S P)."""
        T = C @ SP.astype(C.dtype)
        if self.classes:
            k = self.n_classes
            c = self.codes[sl]
            own = T[np.arange(T.shape[0]), c]
            return own - self.a[sl] * T[:, k] - T[:, k + 1] + self.ssq * T[:, k]
        return (T * self.G[sl]) @ self.s



def _per_class(A, B, structure, rows):
    """``A_c^T B_c`` for every class c of a supervised Gamma's row block (class
    indicators, docs/maths.md section 5): classes x a x b, float64."""
    codes = structure.codes[rows]
    per_class = np.zeros((structure.n_classes, A.shape[1], B.shape[1]))
    for c in range(structure.n_classes):
        members = codes == c
        if members.any():
            per_class[c] = A[members].T @ B[members]
    return per_class


def _class_products(A, B, structure, rows, dtype):
    """Per row block of a supervised Gamma: ``A_c^T B_c`` for every class c
    (:func:`_per_class`) and ``A^T diag(a) B`` (float64), the two pieces the
    landmark passes' C^T Gamma R terms combine."""
    cross = A.T @ (structure.a[rows].astype(dtype)[:, None] * B)
    return _per_class(A, B, structure, rows), np.asarray(cross, dtype=np.float64)

#: the rows of a block view of the structure (every row of the block)
_ALL = slice(None)


def _x_gamma_c(st, Xb, C):
    """Per block: ``X_c^T C_c`` per class (classes x d x m) or general
    ``X^T diag(g_r) C`` for every r (d x r x m), float64."""
    if st.classes:
        return _per_class(Xb, C, st, _ALL)
    Gb = st.G.astype(C.dtype)
    return np.stack([np.asarray(Xb.T @ (Gb[:, j, None] * C), dtype=np.float64)
                     for j in range(Gb.shape[1])], axis=1)


def _c_gamma_r(st, C, Rb):
    """Per block: ``C^T`` times the right-hand side split by Gamma's structure."""
    if st.classes:
        return _class_products(C, Rb, st, _ALL, C.dtype)
    Gb = st.G.astype(C.dtype)
    r, k = Gb.shape[1], Rb.shape[1]
    stacked = (Gb[:, :, None] * Rb[:, None, :]).reshape(Rb.shape[0], r * k)
    return np.asarray(C.T @ stacked, dtype=np.float64).reshape(C.shape[1], r, k)


def _gamma_m_r(st, C, S, Q):
    r"""The block's rows of :math:`(\Gamma\circ CSC^T)R` from the first sweep's C^T R terms."""
    C = np.asarray(C, dtype=np.float64)
    if st.classes:
        Qc, Qa = Q
        codes = st.codes
        Q1 = Qc.sum(axis=0)
        out = np.empty((C.shape[0], Qa.shape[1]))
        for c in range(st.n_classes):
            rows = codes == c
            if rows.any():
                out[rows] = C[rows] @ (S @ Qc[c])
        a = st.a[:, None]
        return out - a * (C @ (S @ Q1)) - C @ (S @ Qa) + st.ssq * (C @ (S @ Q1))
    r = Q.shape[1]
    G = st.G
    out = np.zeros((C.shape[0], Q.shape[2]))
    for j in range(r):
        out += st.s[j] * G[:, j, None] * (C @ (S @ Q[:, j, :]))
    return out


def _rows(X_b, dtype):
    """A block of rows in ``dtype``: dense, or sparse (CSR rows stay sparse: every
    product below is then O(nnz) times the dense factor's columns)."""
    return X_b.astype(dtype) if sp.issparse(X_b) else np.asarray(X_b, dtype=dtype)


def numpy_first_sweep(X_b, st, W, V, factors, dense, dtype):
    """One row block's first-sweep terms, per factor ``(P, A, Q)``: the C^T columns of
    Gamma's structure, the X^T Gamma C products (dense Phi) and the C^T Gamma R
    products (Phi V). A pass sums them over the blocks."""
    Xb = _rows(X_b, dtype)
    Zb = np.asarray(Xb @ W.astype(dtype))
    E = st.columns(_ALL).astype(dtype)
    Rb = None if V is None else np.asarray(Xb @ V.astype(dtype))
    out = []
    for f in factors:
        C = np.asarray(f.rows(Zb))
        P = np.asarray(C.T @ E, dtype=np.float64)
        A = None
        if dense and f.products:
            A = _x_gamma_c(st, Xb, C)
        Q = None if Rb is None else _c_gamma_r(st, C, Rb)
        out.append((P, A, Q))
    return out


def numpy_second_sweep(X_b, st, W, V, factors, Q_sums, SPs, lap_weight, dense, dtype):
    """One row block's share of the terms that need the degrees: ``[X_b^T diag(deg) X_b
    (dense Phi), X_b^T (Gamma o M) R_b (Phi V)]``, None where not asked."""
    Xb = _rows(X_b, dtype)
    Zb = np.asarray(Xb @ W.astype(dtype))
    Rb = None if V is None else np.asarray(Xb @ V.astype(dtype))
    deg = None
    ob = None if V is None else np.zeros(Rb.shape, dtype=np.float64)
    for i, f in enumerate(factors):
        uses = [(k, c) for k, c in f.uses if k != "value"]
        if not uses:
            continue
        C = np.asarray(f.rows(Zb))
        if lap_weight[i] != 0.0:
            part = lap_weight[i] * st.degrees(_ALL, C, SPs[i])
            deg = part if deg is None else deg + part
        if V is not None:
            MR = _gamma_m_r(st, C, f.core, Q_sums[i])
            for kind, coef in uses:
                ob += (coef if kind == "inner" else -coef) * MR
    phi_part = None
    if deg is not None and dense:
        weighted = Xb.multiply(deg.astype(dtype)[:, None]).tocsr() if sp.issparse(Xb) else \
            deg.astype(dtype)[:, None] * Xb
        phi_part = Xb.T @ weighted
        phi_part = np.asarray(phi_part.toarray() if sp.issparse(phi_part) else phi_part,
                              dtype=np.float64)
    pv_part = None
    if V is not None:
        if deg is not None:
            ob += deg[:, None] * Rb
        pv_part = np.asarray(Xb.T @ ob.astype(dtype), dtype=np.float64)
    return [phi_part, pv_part]




def native_first_sweep(X_b, st, W, V, factors, dense, dtype, block_rows, n_threads=None,
                       workspace=None):
    """The first sweep over the rows X_b (any number: the core loops over blocks of
    ``block_rows``), in the tuple layout of :func:`numpy_first_sweep`; ``workspace``:
    the scratch memory it reuses (:func:`ikdr._native.sweep_workspace`)."""
    W = np.asarray(W, dtype=dtype)
    parts = landmark_first_sweep(X_b, W, [f.native for f in factors], st.native(dtype),
                                 products=[f.products for f in factors], V=V, dense=dense,
                                 block_rows=block_rows, n_threads=n_threads, dtype=dtype,
                                 workspace=workspace)
    if not st.classes:
        return [tuple(p) for p in parts]
    # C^T diag(a) R = sum_c p_c C_c^T R_c (a_i = p of row i's class): no second product
    return [(P, A, None if Q is None else (Q, np.tensordot(st.p, Q, axes=1))) for P, A, Q in parts]


def native_second_sweep(X_b, st, W, V, factors, rhs, dense, dtype, block_rows, n_threads=None,
                        workspace=None):
    """The second sweep over the rows X_b: ``[phi or None, Phi V or None]``."""
    W = np.asarray(W, dtype=dtype)
    return list(landmark_second_sweep(X_b, W, [f.native for f in factors], st.native(dtype), rhs,
                                      V=V, dense=dense, block_rows=block_rows, n_threads=n_threads,
                                      dtype=dtype, workspace=workspace))


def native_rhs(st, factors, sums, lap_weight, k, dtype):
    r"""The second sweep's right-hand sides from the first sweep's sums, per factor
    (None outside Phi), with column 0 the degree weights and columns 1..k those
    of :math:`(\Gamma\circ CSC^T)R` times the factor's Phi coefficient.

    Classes (K x m x (1 + k)): row i's degree is :math:`C_i h_{c_i}`, with
    :math:`h_c = SP_{:,c} + (s - p_c) SP_{:,K} - SP_{:,K+1}`, and its row of
    :math:`(\Gamma\circ M)R` is :math:`C_i H_{c_i}`, with
    :math:`H_c = SQ_c + (s - p_c) SQ_1 - SQ_a` (the class identity of the module
    docstring of :mod:`ikdr.passes.landmarks`). General (m x r x (1 + k)):
    :math:`s_j SP_{:,j}` and :math:`s_j S Q_j`, which the core weights by
    :math:`g_{ij}` row by row.
    """
    out = []
    for lap, f, (P, _, Q) in zip(lap_weight, factors, sums):
        if not f.products:
            out.append(None)
            continue
        coef = sum(c if kind == "inner" else -c for kind, c in f.uses if kind != "value")
        S = f.core
        SP = S @ P
        if st.classes:
            K = st.n_classes
            dev = st.ssq - st.p
            H = np.empty((K, S.shape[0], 1 + k))
            H[:, :, 0] = lap * (SP[:, :K] + SP[:, K, None] * dev - SP[:, K + 1, None]).T
            if Q is not None:
                # S Q_c for every class at once: one m x m by m x (K k) GEMM (an
                # einsum here runs the m^2 K k products unblocked, far from the GEMM rate)
                Qc = Q[0]
                SQ = (S @ Qc.transpose(1, 0, 2).reshape(S.shape[1], -1)).reshape(
                    S.shape[0], K, k).transpose(1, 0, 2)
                H[:, :, 1:] = coef * (SQ + dev[:, None, None] * SQ.sum(axis=0) - S @ Q[1])
        else:
            H = np.empty((S.shape[0], P.shape[1], 1 + k))
            H[:, :, 0] = lap * SP * st.s
            if Q is not None:
                SQ = (S @ Q.reshape(S.shape[1], -1)).reshape(S.shape[0], *Q.shape[1:])
                H[:, :, 1:] = coef * SQ * st.s[None, :, None]
        out.append(np.ascontiguousarray(H, dtype=dtype))
    return out


def pass_flops(n, d, q, m, *, k=0, dense=False, groups=1, classes=True):
    """Flops of one native landmark pass (2 per multiply-add; see the module
    docstring): n rows, d features, q columns of W, m landmarks (summed over the
    factors), k columns of V (0: no Phi V), ``dense`` for the d x d Phi,
    ``groups`` classes (``classes``) or the rank of a general Gamma. A pass with
    neither is the objective's: one sweep."""
    r = 1 if classes else groups
    sweeps = 2 if (k or dense) else 1
    # every sweep projects its rows and makes their kernel rows
    flops = sweeps * (2.0 * n * d * (q + k) + 2.0 * n * q * m)
    if dense:
        # X_c^T C_c, the degree term (upper triangle), the per-class assembly
        # (D_c P, triangular, and its symmetric rank-m product; LandmarkProblem._quadratic)
        flops += 2.0 * n * d * m * r + n * d * d + groups * (d * m * m + d * d * m)
    if k:
        # C_c^T R_c, the second sweep's weights C H, X^T O
        flops += 2.0 * n * m * r * k + 2.0 * n * m * r * (1 + k) + 2.0 * n * d * k
    elif dense:
        flops += 2.0 * n * m * r
    return flops
