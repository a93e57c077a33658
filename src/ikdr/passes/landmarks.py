r"""Landmark (Nystrom) and random-feature passes: ISM at millions of samples.

Every exact ISM pass forms the n x n weights :math:`\Psi = \Gamma \circ f'(K_{XW})`
tile by tile: :math:`O(n^2 d)` flops. Here the kernel matrices of the pass are
replaced by low-rank forms :math:`K \approx C S C^T` (docs/maths.md, section 5;
costs in docs/nystrom.md):

* **Nystrom** (``approximation="nystrom"``): m landmark samples, with
  :math:`Z = XW` and :math:`Z_L` their projected rows, :math:`C = K(Z, Z_L)`
  (n x m, by :meth:`ikdr.kernels.Kernel.matrix`, i.e. the native door) and
  :math:`S = K(Z_L, Z_L)^+` (pseudo-inverse, eigenvalues below a relative
  ``rcond`` dropped; signed, so indefinite kernels such as the multiquadric's
  similarity :math:`-\sqrt{\beta + c^2}` are served too).
* **Random Fourier features** (``approximation="rff"``, Gaussian only):
  :math:`C = \sqrt{2/D}\cos(Z\Omega + b)`, :math:`S = I` (Rahimi and Recht
  2007), the authors' library's default.

Each member of the kernel contributes a *value* factor (the objective) and a
*derivative* factor (Phi). Gaussian: both are K itself, Laplacian weight
:math:`-1/\sigma^2`. Multiquadric: value :math:`-\sqrt{\beta + c^2}`,
derivative the inverse multiquadric :math:`1/\sqrt{\beta + c^2}` with Laplacian
weight -1. Polynomial of degree p: derivative :math:`p(\beta + c)^{p-1}`
(an inner-product weight). Linear and squared members are represented exactly
(their factors are ``[Z]`` and ``[Z, |z|^2, 1]``), so conic combinations work.

With :math:`\Gamma = G\,\mathrm{diag}(s)\,G^T` and :math:`M = CSC^T`:

* :math:`X^T(\Gamma\circ M)X = \sum_r s_r (X^T\mathrm{diag}(g_r)C)\,S\,(X^T\mathrm{diag}(g_r)C)^T`;
* the degrees :math:`(\Gamma\circ M)1 = \sum_r s_r\, g_r \circ (C S (C^Tg_r))`;
* the objective :math:`1^T(\Gamma\circ K)1 = \sum_r s_r (C^Tg_r)^T S (C^Tg_r)`.

For the supervised :math:`\Gamma = HYY^TH` the loop over classes is avoided:
with class proportions p, :math:`a_i = p_{c_i}` and :math:`s = \|p\|^2`,
:math:`\Gamma_{ij} = [c_i = c_j] - a_i - a_j + s`, so
:math:`X^T(\Gamma\circ M)X = \sum_c B_cSB_c^T - ESB^T - BSE^T + sBSB^T` with
:math:`B_c = X_c^TC_c` (together one n x d x m product), :math:`B = \sum_c B_c`
and :math:`E = X^T\mathrm{diag}(a)C = \sum_c p_c B_c`: one n*d*m product per
dense pass whatever the number of classes (the core orders each block's rows
by class), plus n*d^2 for the degree term :math:`X^T\mathrm{diag}(\deg)X`. A
Phi V pass (the matrix-free steps) needs neither: :math:`O(n d (q + k) + n m k)`.
Nothing n x n is formed; memory is :math:`O(b (d + m) + \text{classes}\, d m)`
beyond X (b rows per block, a few blocks in flight).

Every pass is two sweeps, each a sum over row blocks of X
(:mod:`ikdr.passes.landmark_sweeps`: the compiled core's sweeps for Nystrom
factors, NumPy's for exact finite-rank factors and random features), so X may
be an ``np.memmap`` larger than memory, read once per sweep, and rows on a
cluster are mapped chunk by chunk with the same per-chunk call.

References
----------
Williams, Seeger. Using the Nystrom method to speed up kernel machines. NIPS 2001.
Fowlkes, Belongie, Chung, Malik. Spectral grouping using the Nystrom method.
TPAMI 26 (2004).
Musco, Musco. Recursive sampling for the Nystrom method. NeurIPS 2017 (ridge
leverage scores). Arthur, Vassilvitskii. k-means++. SODA 2007.
Rahimi, Recht. Random features for large-scale kernel machines. NIPS 2007.
"""
from __future__ import annotations

import numbers
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg.blas
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state

from .._config import blas_threads as _hold_blas, get_num_threads
from .._utils.typing import RandomStateLike
from .._utils.subspace import principal_angle
from ..gamma import Gamma
from ..kernels import Kernel
from .factors import (DEFAULT_LANDMARK_METHOD, LANDMARK_METHODS, check_kernel_approximable,
                      kernel_factors, select_landmarks)
from .landmark_sweeps import (GammaStructure, SweepOptions, native_block_rows, native_first_sweep,
                              native_rhs, native_second_sweep, numpy_first_sweep,
                              numpy_second_sweep, pass_flops, sweep_workspace)
from .problem import BaseProblem
from .dask_data import as_data, is_distributed, row_source
from .rows import LazyProjection, MemoryRows, check_rows, fit_kernel_on_rows, rows_per_block
from .sparse_rows import check_sparse, forms_dense_phi, is_sparse, sparse_phi0
from .._utils.validation import plain

__all__ = ["landmark_step_costs", "EIGH_FLOPS", "APPROXIMATIONS", "LANDMARK_METHODS",
           "Approximation", "LandmarkPasses", "LandmarkProblem", "auto_landmarks", "landmark_data",
           "check_n_landmarks", "blas_threads", "THREADED_BLOCK_FLOPS", "check_landmark_options",
           "AUTO_START", "AUTO_MAX", "AUTO_TOL", "RFF_DEFAULT"]

APPROXIMATIONS = (None, "nystrom", "rff")
#: ``n_landmarks="auto"`` starts here and doubles ...
AUTO_START = 64
#: ... up to this many landmarks (its budget; at most n)
AUTO_MAX = 2048
#: ... until sin(largest principal angle) between successive fits is below this
AUTO_TOL = 1e-2
#: random Fourier features: their count is ``n_landmarks`` ("auto" starts at)
RFF_DEFAULT = 500
#: a block product above this many flops runs on ikdr's threads (see LandmarkProblem._pass)
THREADED_BLOCK_FLOPS = 1e8


def blas_threads(big):
    """Context: the BLAS on ikdr's thread count (``big``) or on one thread
    (:func:`ikdr._config.blas_threads`, the one limiter)."""
    return _hold_blas(get_num_threads() if big else 1)


class LandmarkProblem(BaseProblem):
    """Objective, Phi and Phi-products of ``Tr(Gamma K_XW)`` with every kernel
    matrix replaced by its landmark (or random-feature) factorisation: the
    solver's problem (:class:`ikdr.solver.problem.KernelProblem`), so the
    driver, its trust region and its certificate run on it unchanged.

    The landmark *indices* are fixed for the problem's life (chosen lazily on
    XW at the first W the solver evaluates, i.e. the Phi_0 start); the
    landmark *points* :math:`X_L W` move with W.
    """

    supports_coarse = False     # its passes are its own, not the kernel layer's
    #: trust-region steps gaining less than this (relative) end the fit: the landmark
    #: objective differs from the exact one by far more (1e-4 to 1e-2 relative,
    #: benchmarks/results/nystrom_ism.md), and its Phi is not the exact gradient
    #: of the landmark objective, so the gradient rule alone can crawl for tens
    #: of steps (measured: 22 steps, 60 passes, 1,000 x 7, m = 64)
    objective_floor = 1e-6

    def __init__(self, X, gamma, kernel, n_threads, *, provider):
        super().__init__(X, gamma, kernel, n_threads)
        self._X64 = X         # passes cast X block by block; never a whole copy
        self.provider = provider
        self.approx = approximation = provider.approximation
        #: the precision of the landmark passes (the approximation's, else X's)
        self.pass_dtype = approximation.compute_dtype(X)
        # one n-row scan per Gamma (a read of every label, not free at a million
        # rows), shared by the "auto" rule's fits and a clustering's W-steps
        self.structure = gamma.derived("landmark structure", lambda: GammaStructure(gamma))
        self.rows = row_source(X, approximation.block_rows)
        # sparse rows with many features: products only, never the d x d Phi
        self.supports_dense_phi = not is_sparse(X) or forms_dense_phi(X.shape[1])
        self.index = provider.index
        self.XL = None if self.index is None else self.rows.take(self.index)
        self.rff = None       # (omega, offset), drawn at the first W (its q columns)
        self._factor_cache = None   # (W's bytes and dtype, the factors of the last pass)
        self._workspace = sweep_workspace()  # the core sweeps' memory, from pass to pass
        self._precision_checked = self.pass_dtype != np.float32  # check_own_precision

    # -- landmarks ------------------------------------------------------------
    def _ensure_landmarks(self, W):
        if self.approx.kind == "rff" or self.XL is not None:
            return
        a = self.approx
        Z = LazyProjection(self.rows, W)
        self.index = select_landmarks(Z, min(a.n_landmarks, self.X.shape[0]), method=a.method,
                                      kernel=self.kernel, random_state=a.random_state)
        self.provider.index = self.index
        self.XL = self.rows.take(self.index)

    def _factors(self, W):
        q = W.shape[1]
        if not np.any(W):
            # W = 0 (Phi_0): every beta is 0 and every kernel matrix is constant,
            # which one landmark reproduces exactly.
            return kernel_factors(self.kernel, np.zeros((1, q)), self.pass_dtype)
        self._ensure_landmarks(W)
        if self.approx.kind == "rff" and self.rff is None:
            self.rff = self.approx.rff_parameters(q)
        ZL = None if self.XL is None else self.XL @ W
        return kernel_factors(self.kernel, ZL, self.pass_dtype, rff=self.rff)

    def _pass(self, W, V=None, dense=False):
        """One pass: (objective, dense Phi or None, Phi V or None).

        NumPy's BLAS runs on one thread while the core's sweeps run on ikdr's
        threads: its idle workers spin after each call and took the cores from
        the sweeps (perf: 46% of a first sweep's time in OpenBLAS's thread
        server, 20,000 x 256). The NumPy sweeps' BLAS runs with ikdr's thread
        count when a block's main product is large (about 1e8 flops) and with
        one thread otherwise: small products gain nothing from threads, and a
        threaded BLAS on busy cores waits for cores at every call, many times
        slower than one thread (``benchmarks/bench_landmark_pass.py`` runs both
        sweeps on 1 and 2 threads)."""
        n, d = self.X.shape
        m = self.approx.n_landmarks if isinstance(self.approx.n_landmarks, int) else 1
        big = min(n, rows_per_block(d, self.approx.block_rows, m)) * d * m > THREADED_BLOCK_FLOPS
        with blas_threads(False):       # m x m algebra: K_mm and its pseudo-inverse
            # the products of one eigensolve share W: its factors are made once
            key = (np.asarray(W).tobytes(), str(self.pass_dtype))
            if self._factor_cache is None or self._factor_cache[0] != key:
                self._factor_cache = (key, self._factors(W))
            factors = self._factor_cache[1]
        native = self.rows.native_sweeps and all(f.native is not None for f in factors)
        with blas_threads(big and not native):
            return self._pass_blocks(W, V, dense, factors, native)

    def _pass_blocks(self, W, V, dense, factors, native):
        W = np.asarray(W, dtype=np.float64)
        d = self.X.shape[1]
        st = self.structure
        width = max([f.core.shape[0] for f in factors] + [1])
        # native: the core makes every Nystrom factor given as kernel terms; exact
        # finite-rank factors (linear, squared members) and random features go
        # through NumPy.
        # The core reads an in-memory array or memmap of its own dtype (or float32
        # rows of a float64 pass) in place and loops over the row blocks itself (one
        # call per sweep); float64 rows of a float32 pass are cast block by block
        # here, and a cluster maps the same call over its chunks.
        whole = native and isinstance(self.rows, MemoryRows) and \
            self.X.dtype in (self.pass_dtype, np.dtype(np.float32))
        sweep = SweepOptions(native_block_rows(d, width, self.pass_dtype, self.approx.block_rows),
                             self.n_threads, self.pass_dtype, self._workspace)
        if native:
            first, first_args = native_first_sweep, (W, V, factors, dense, sweep)
        else:
            first, first_args = numpy_first_sweep, (W, V, factors, dense, self.pass_dtype)
        sums = self.rows.map_reduce(first, st.block, first_args, width=width, whole=whole)
        objective = 0.0
        phi = np.zeros((d, d)) if dense else None
        lap_weight = [0.0] * len(factors)
        need_second = False
        for i, (f, (P, A, _)) in enumerate(zip(factors, sums)):
            for kind, coef in f.uses:
                if kind == "value":
                    objective += coef * st.value(P, f.core)
                    continue
                sign = 1.0 if kind == "inner" else -1.0
                if dense:
                    phi += sign * coef * self._quadratic(A, f)
                if kind == "laplacian":
                    lap_weight[i] += coef
                    need_second = True
        if dense and V is None and not np.any(W) and st.centered:
            # W = 0 (Phi_0): every kernel matrix is constant, so the degrees are a
            # constant times Gamma 1 = 0: no degree term (n d^2 flops) to add
            need_second = False
        PV = None
        if V is not None or (dense and need_second):
            if native:
                k = 0 if V is None else V.shape[1]
                rhs = native_rhs(st, factors, sums, lap_weight, k, self.pass_dtype)
                second, second_args = native_second_sweep, (
                    W, V, factors, rhs, dense and need_second, sweep)
            else:
                SPs = [f.core @ P for f, (P, _, _) in zip(factors, sums)]
                second, second_args = numpy_second_sweep, (W, V, factors, [Q for _, _, Q in sums],
                                                           SPs, lap_weight, dense, self.pass_dtype)
            phi, PV = self.rows.map_reduce(
                second, st.block, second_args,
                start=[phi, np.zeros((d, V.shape[1])) if V is not None else None], width=width,
                whole=whole)
        if dense:
            phi = 0.5 * (phi + phi.T)
        return objective, phi, PV

    def _quadratic(self, A, factor):
        r""":math:`X^T(\Gamma\circ CSC^T)X` from the first sweep's d x m products,
        with :math:`S = PP^T - NN^T` (:attr:`~ikdr.passes.factors._Factor.core_factors`).

        Classes: with :math:`D_c = B_c - p_c B` (:math:`B = \sum_c B_c`), the
        class identity of the module docstring is
        :math:`\sum_c B_cSB_c^T - ESB^T - BSE^T + sBSB^T = \sum_c D_cSD_c^T`
        (:math:`E = \sum_c p_cB_c`, :math:`s = \sum_c p_c^2`); general:
        :math:`\sum_g s_g A_gSA_g^T`. Each term is :math:`(D_cP)(D_cP)^T` (less
        the same with N): one symmetric rank-m update per class, d^2 m flops
        instead of the 2 d^2 m of :math:`(D_cS)D_c^T`, plus the d m^2 of
        :math:`D_cP` (a triangular product after a Cholesky factorisation)."""
        P, N, upper = factor.core_factors
        st = self.structure
        if st.classes:
            D = A - st.p[:, None, None] * A.sum(axis=0)
            weights = np.ones(A.shape[0])
        else:
            D = np.ascontiguousarray(A.transpose(1, 0, 2))
            weights = np.asarray(st.s, dtype=np.float64)
        d, m = D.shape[1], D.shape[2]
        out = np.zeros((d, d), order="F")  # dsyrk's operand: its upper triangle is summed
        for side, sign in ((P, 1.0), (N, -1.0)):
            if side is None or side.shape[1] == 0:
                continue
            for w_sign in (1.0, -1.0):
                # the groups of one weight sign together, each scaled by sqrt|weight|:
                # one triangular product for all of them (not one per group)
                chosen = np.flatnonzero(weights * w_sign > 0)
                if chosen.size == 0:
                    continue
                root = np.sqrt(np.abs(weights[chosen]))
                scaled = D if chosen.size == D.shape[0] and np.all(root == 1.0) else \
                    D[chosen] * root[:, None, None]
                # (groups d) x m row-major, read as the column-major m x (groups d)
                # operand: Y^T = side^T D_g^T for every group g side by side
                stacked = scaled.reshape(-1, m).T
                if upper:       # (P alone then: D is overwritten once)
                    Yt = scipy.linalg.blas.dtrmm(1.0, side, stacked, side=0, lower=0, trans_a=1,
                                                 overwrite_b=1)
                else:
                    Yt = np.asfortranarray(side.T @ stacked)
                for g in range(chosen.size):
                    # Y_g Y_g^T = (Y_g^T)^T (Y_g^T): a column block of the F-ordered Y^T
                    out = scipy.linalg.blas.dsyrk(sign * w_sign, Yt[:, g * d:(g + 1) * d],
                                                  beta=1.0, c=out, trans=1, lower=0,
                                                  overwrite_c=1)
        return out + np.triu(out, 1).T

    def step_costs(self, q: int, k: int) -> tuple[float, float]:
        """(dense Phi step, pass with k columns) in flops (:func:`landmark_step_costs`):
        the solver weighs matrix-free steps by them. Landmarks: the
        approximation's m (256 while "auto" has not chosen), one factor per
        kernel member."""
        m = self.approx.n_landmarks if isinstance(self.approx.n_landmarks, int) else 256
        m *= len(list(self.kernel.members()))
        st = self.structure
        n, d = self.X.shape
        return landmark_step_costs(n, d, q, m, k, groups=st.n_classes if st.classes
                                   else st.G.shape[1], classes=st.classes)

    # -- the solver's interface -----------------------------------------------
    def _pass_in(self, own_dtype, W, V=None, dense=False):
        """A pass in the problem's precision (``own_dtype``: the plain steps) or in
        float64, as the exact problem's trust region and certificate get theirs:
        float32 block sums carry relative errors near 1e-6, enough to refuse
        good steps and to stall a trust region (measured: 89 passes instead of
        about 10 at 30,000 x 784)."""
        if own_dtype or self.pass_dtype == np.float64:
            if own_dtype and np.any(W):  # (Phi_0's W = 0 has no distances to check)
                self.check_own_precision(W)
            return self._pass(W, V=V, dense=dense)
        saved, self.pass_dtype = self.pass_dtype, np.dtype(np.float64)
        try:
            return self._pass(W, V=V, dense=dense)
        finally:
            self.pass_dtype = saved

    def phi0(self) -> np.ndarray:
        d = self.X.shape[1]
        if not self.supports_dense_phi:
            # at W = 0 every kernel value is f(0): the exact Phi_0, as an operator
            return sparse_phi0(self.kernel, self.X, self.gamma, dense=False)
        return self._pass_in(False, np.zeros((d, 1)), dense=True)[1]

    def objective(self, W: np.ndarray, own_dtype: bool = False) -> float:
        return self._pass_in(own_dtype, W)[0]

    def phi(self, W: np.ndarray, own_dtype: bool = False) -> tuple[np.ndarray, float]:
        objective, phi, _ = self._pass_in(own_dtype, W, dense=True)
        return phi, objective

    def phi_product(self, W: np.ndarray, V: np.ndarray,
                    own_dtype: bool = False) -> tuple[np.ndarray, float]:
        objective, _, PV = self._pass_in(own_dtype, W, V=np.asarray(V, dtype=np.float64))
        return PV, objective


#: flops of an m x m symmetric eigendecomposition with vectors, per m^3 (the
#: pseudo-inverse of the landmarks' kernel matrix, once per pass)
EIGH_FLOPS = 9.0


def landmark_step_costs(n, d, q, m, k, *, groups, classes=True):
    """(dense Phi step, pass with k columns) of a landmark problem in flops
    (:func:`ikdr.passes.landmark_sweeps.pass_flops`), each with the m x m
    pseudo-inverse of its landmark factor. A dense step also pays the
    eigendecomposition of the d x d Phi, counted as 4 d^3 (LAPACK's eigh on one
    thread runs at about the GEMM rate on that many flops; ``benchmarks/bench_cpm.py``
    times it against d): no panel amortises it here. The solver's choice of Phi solver and the
    "auto" landmark budget (:mod:`ikdr.reduction.cost`) both read it."""
    shape = dict(groups=groups, classes=classes)
    factor = EIGH_FLOPS * float(m) ** 3
    return (pass_flops(n, d, q, m, dense=True, **shape) + 4.0 * d ** 3 + factor,
            pass_flops(n, d, q, m, k=k, **shape) + factor)


def check_n_landmarks(n_landmarks, n_samples=None):
    """``"auto"`` or an int in [1, n_samples]; a ValueError naming the problem."""
    if isinstance(n_landmarks, str):
        if n_landmarks != "auto":
            raise ValueError('n_landmarks must be "auto" or a positive int, '
                             f"got {plain(n_landmarks)!r}")
        return "auto"
    if isinstance(n_landmarks, bool) or not isinstance(n_landmarks, numbers.Integral):
        raise TypeError(f'n_landmarks must be "auto" or a positive int, got '
                        f"{type(n_landmarks).__name__}")
    m = int(n_landmarks)
    if m < 1:
        raise ValueError(f"n_landmarks must be a positive int, got {m} (zero or negative)")
    if n_samples is not None and m > n_samples:
        raise ValueError(f"n_landmarks={m} is larger than the number of samples n={n_samples}")
    return m


@dataclass(frozen=True, eq=False)
class Approximation:
    """Settings of a landmark or random-feature approximation: what
    :func:`ikdr.ism` takes as ``approximation=``, and what
    :func:`ikdr.passes.resolve` builds the landmark provider
    (:class:`LandmarkPasses`) from. Frozen: a fit with other settings derives
    them with :func:`dataclasses.replace`.

    Parameters
    ----------
    kind : {"nystrom", "rff"}
    n_landmarks : int or "auto"
        m landmarks (Nystrom) or D random features (rff); "auto" only where a
        caller grows m itself (:func:`ikdr.reduction.approximate.approximate_ism`).
    method : {"uniform", "kmeans++", "leverage"}
    dtype : numpy dtype or None
        Precision of the block products (None: float32 for float32 X, else float64).
    random_state : int, RandomState or None
        Seeds the landmarks (or the random features).
    block_rows : int or None
        Rows per block of the passes.
    index : ndarray of int or None
        Fixed landmark rows; None: chosen on XW at the first W a fit evaluates.
    """

    kind: str = "nystrom"
    n_landmarks: int | str = 256
    method: str = DEFAULT_LANDMARK_METHOD
    dtype: Any = None
    random_state: RandomStateLike = None
    block_rows: int | None = None
    index: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("nystrom", "rff"):
            raise ValueError(f"approximation must be None, 'nystrom' or 'rff', got {self.kind!r}")
        if self.method not in LANDMARK_METHODS:
            raise ValueError(f"landmark method must be one of {LANDMARK_METHODS}, got "
                             f"{self.method!r}")
        # frozen: the checked value is set through object.__setattr__
        object.__setattr__(self, "n_landmarks", check_n_landmarks(self.n_landmarks))

    def compute_dtype(self, X):
        if self.dtype is not None:
            return np.dtype(self.dtype)
        return np.dtype(np.float32) if X.dtype == np.float32 else np.dtype(np.float64)

    def rff_parameters(self, q):
        """(omega, offset) of the random features in the q-dimensional projected space,
        drawn once per problem from ``random_state`` (omega unscaled: divided by sigma)."""
        rng = check_random_state(self.random_state)
        m = self.n_landmarks
        return rng.standard_normal((q, m)), rng.uniform(0, 2 * np.pi, m)


class LandmarkPasses:
    """The W-step's landmark provider (``check_data``, ``fit_kernel``, ``problem``,
    as the exact and Dask providers), built by :func:`ikdr.passes.resolve` from
    an :class:`Approximation`. ``index``: the landmark rows, chosen by the
    first problem that needs them and kept for the provider's later problems
    (the W-steps of a clustering alternation share them)."""

    name = "landmarks"

    def __init__(self, approximation: Approximation) -> None:
        self.approximation = approximation
        self.index = approximation.index

    def check_data(self, X: Any) -> Any:
        """X by row blocks (an ndarray or memmap, never copied whole), or on its
        cluster (a row-chunked dask array: the passes map over its chunks)."""
        if is_distributed(X):
            return as_data(X)
        if is_sparse(X):
            return check_sparse(X)
        return check_rows(X, block_rows=self.approximation.block_rows)

    def fit_kernel(self, kernel: Kernel, X: Any, random_state: RandomStateLike = None) -> Kernel:
        return fit_kernel_on_rows(kernel, X, random_state)

    def problem(self, X: Any, gamma: Gamma, kernel: Kernel,
                n_threads: int | None) -> LandmarkProblem:
        check_kernel_approximable(kernel, self.approximation.kind)
        return LandmarkProblem(X, gamma, kernel, n_threads, provider=self)


def check_landmark_options(estimator, n, kernel, approximation=None):
    """The estimator's ``approximation`` (or the one its "auto" chose,
    ``approximation``) and ``n_landmarks`` against n samples and the kernel
    (ValueErrors naming the problem, before any pass)."""
    approximation = approximation or estimator.approximation
    if approximation not in ("nystrom", "rff"):
        raise ValueError(f"approximation must be None, 'nystrom' or 'rff', got {approximation!r}")
    n_landmarks = check_n_landmarks(estimator.n_landmarks)
    check_kernel_approximable(kernel, approximation)
    if isinstance(n_landmarks, int) and approximation == "nystrom" and n_landmarks > n:
        raise ValueError(f"n_landmarks={n_landmarks} is larger than the number of samples n={n}")


def landmark_data(estimator, X, y, kernel, *, multi_output=True, approximation=None):
    """The estimators' input path with an approximation (ValueErrors before any long work).

    Checks ``approximation``, ``n_landmarks`` and that the approximation can
    serve ``kernel`` first, then X by row blocks (:func:`check_rows`: an
    ``np.memmap`` is never loaded whole, NaN anywhere is found), then y
    (in memory, same length); sets ``n_features_in_`` and, for a DataFrame X,
    ``feature_names_in_``. Returns (X, y).
    """
    from sklearn.utils import check_array, check_consistent_length
    from sklearn.utils.validation import validate_data

    n = np.shape(X)[0] if hasattr(X, "shape") else len(X)
    check_landmark_options(estimator, n, kernel, approximation)
    # the column names before check_rows makes X an array (the shape alone: a
    # memmap is not read here)
    validate_data(estimator, X, skip_check_array=True)
    X = check_rows(X)
    if y is not None:
        y = check_array(y, ensure_2d=False, dtype=None, ensure_all_finite=False,
                        input_name="y")
        if y.ndim == 2 and not multi_output:
            y = y.ravel()
        check_consistent_length(X, y)
    return X, y


def auto_landmarks(fit, n, *, start=AUTO_START, cap=AUTO_MAX, tol=AUTO_TOL, change=None,
                   unit="landmarks", subject="embedding", affordable=None):
    """The "auto" rule, the one of every landmark fit: m doubles from ``start``,
    each fit ``fit(m) -> basis`` (orthonormal columns) compared with the last by
    ``change`` (default: sine of the largest principal angle), until a doubling
    moves the basis by less than ``tol`` or m reaches ``min(n, cap)`` (n None:
    no bound by n, as for random features). ``affordable(m_next)``, when given,
    is asked before every doubling; False stops the rule there without a
    warning (the caller finishes the fit another way, e.g. with exact passes).
    Returns (basis, m, trail, stopped); warns (``ConvergenceWarning``) when the
    budget ends first, with its last change, the estimated error of the
    returned basis."""
    change = change or (lambda A, B: float(np.sin(principal_angle(A, B))))
    bound = cap if n is None else min(n, cap)
    m = start if n is None else min(n, start)
    basis = fit(m)
    trail = [(m, np.nan)]
    while m < bound:
        m_next = min(bound, 2 * m)
        if affordable is not None and not affordable(m_next):
            return basis, m, trail, True
        nxt = fit(m_next)
        c = change(basis, nxt)
        trail.append((m_next, c))
        basis, m = nxt, m_next
        if c < tol:
            return basis, m, trail, False
    if n is None or m < n:
        warnings.warn(f"n_landmarks='auto' reached its budget of {bound} {unit} before the "
                      f"{subject} stopped moving: the last doubling moved it by "
                      f"{trail[-1][1]:.3g} (tolerance {tol}); that is the estimated error "
                      f"of the returned {subject}", ConvergenceWarning, stacklevel=3)
    return basis, m, trail, False
