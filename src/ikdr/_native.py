"""The one door to the compiled core: the only module that imports ``ikdr._core``.

Everything above it (the kernel layer in :mod:`ikdr.kernels`) hands NumPy
arrays and :class:`KernelTerm` records to the functions here. This module picks
the float32 or float64 entry point from the points' dtype, casts the other
arrays to it (once), checks shapes, and holds the BLAS at one thread while a
pass that calls it runs: the core splits its GEMMs over threads of its own,
and a threaded BLAS underneath would oversubscribe the cores.

The C++ core (``cpp/``) has no Python in it; ``cpp/src/bindings.cpp`` converts,
releases the GIL, calls and returns. Its threads are OpenMP's: importing this
module registers a fork handler that releases the runtime's idle threads
before every ``os.fork`` (a child forked while they are kept would hang in its
first parallel region) unless another thread's call is inside the core, and tells :mod:`ikdr._config` how to read the
runtime's thread setting (``OMP_NUM_THREADS``, ``threadpoolctl``).
"""
from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from typing import Any, NamedTuple, Optional, Sequence

import numpy as np

from . import _config
from ._config import get_num_threads, single_threaded_blas

#: How long (busy-wait iterations) an idle OpenMP worker of the core spins before
#: it sleeps, when neither ``OMP_WAIT_POLICY`` nor ``GOMP_SPINCOUNT`` is set.
#: libgomp's own default (300,000, about a millisecond) keeps a worker spinning
#: through the NumPy work between two passes; on a machine whose other core is
#: busy, the spinning worker and the calling thread then share a core and every
#: pass waits a scheduler slice at its barrier, so a small fit runs slower on 2
#: threads than on 1 (``benchmarks/bench_call_overhead.py``).
#: libgomp reads the setting once, when it loads, so it is set around the
#: import of the core only (and restored: other libraries and children keep
#: theirs).
IDLE_SPIN_COUNT = "1000"


@contextlib.contextmanager
def _core_wait_policy():
    user_set = "OMP_WAIT_POLICY" in os.environ or "GOMP_SPINCOUNT" in os.environ
    if not user_set:
        os.environ["GOMP_SPINCOUNT"] = IDLE_SPIN_COUNT
    try:
        yield
    finally:
        if not user_set:
            os.environ.pop("GOMP_SPINCOUNT", None)


with _core_wait_policy():
    from . import _core

__all__ = ["TermKind", "KernelTerm", "GammaArrays", "FusedResult", "fused_product",
           "phi_product", "gamma_table", "kernel_matrix", "sne_row_normalisers", "sne_matrix", "lowrank_plus_sparse",
           "top_eigenpairs", "cpm_eigenpairs", "build_info", "core_dtype",
           "openmp_pause", "openmp_max_threads", "active_passes", "LandmarkFactor", "LandmarkGamma",
           "landmark_first_sweep", "landmark_second_sweep", "sweep_workspace", "feature_bin_sums"]


def openmp_pause() -> int:
    """Release the OpenMP runtime's idle threads (``omp_pause_resource_all``):
    0 on success, -1 when the runtime refused or lacks it, 1 without OpenMP.
    The next parallel region starts new ones."""
    return int(_core.openmp_pause())


def openmp_max_threads() -> int:
    """``omp_get_max_threads()`` of the calling thread: ``OMP_NUM_THREADS`` at
    start-up, or what ``omp_set_num_threads`` (threadpoolctl) set since; 1
    when the core was built without OpenMP."""
    return int(_core.openmp_max_threads())


def active_passes() -> int:
    """How many core calls (of any Python thread) are running now."""
    return int(_core.active_passes())


# The fork handlers. A child forked while the runtime keeps idle threads would
# hang in its first parallel region, so the runtime releases them before the
# fork; but not while another Python thread is inside a pass (pausing the
# runtime under a running parallel region is not allowed), and then the child
# runs its calls on one thread instead. What the first handler found is what
# the second needs in the child: the two module globals below are the only
# state they share, and they must be globals (a fork handler takes no
# arguments and returns nothing).
def _before_fork() -> None:
    global _paused_for_fork
    try:
        _paused_for_fork = OPENMP_PAUSE and _core.openmp_pause_before_fork() == 0
    except Exception:  # pragma: no cover - never let a fork fail because of ikdr
        _paused_for_fork = False


def _in_forked_child() -> None:
    global _forked_without_pause
    _core._forget_active_passes()      # their threads stayed in the parent
    if not _paused_for_fork:
        _forked_without_pause = True


#: built with OpenMP: the runtime's setting is the default thread count, and
#: its threads are released before every fork (registered once, at import)
OPENMP = bool(_core.build_info().get("openmp", False))
#: the runtime can release its threads (omp_pause_resource_all: GCC >= 9's
#: libgomp, LLVM's libomp); probed once at import, before any parallel region
OPENMP_PAUSE = OPENMP and openmp_pause() == 0
#: whether the last fork's handler released the runtime's threads
_paused_for_fork = False
#: set in a child forked while the runtime kept its threads (it cannot release
#: them, or a pass of another thread was running): the child's core calls run
#: on one thread (same results) rather than wait on a thread pool that did not
#: survive the fork
_forked_without_pause = False
if OPENMP:
    _config.register_runtime_threads(openmp_max_threads)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(before=_before_fork, after_in_child=_in_forked_child)
_config.check_thread_environment()

#: The kernel kinds of the core, defined once in C++ (``cpp/include/ikdr/ism_products.hpp``).
TermKind = _core.TermKind


@dataclass(frozen=True, eq=False)
class KernelTerm:
    """One member of a conic combination of ISM kernels, in similarity form.

    ========================  ==========================================
    kind                      k(a, b)
    ========================  ==========================================
    ``TermKind.linear``       ``<a, b>``
    ``TermKind.polynomial``   ``(<a, b> + c)^degree``
    ``TermKind.gaussian``     ``exp(-||a - b||^2 / (2 s_a s_b))``, s = sigma or per-point scales
    ``TermKind.squared``      ``-||a - b||^2``
    ``TermKind.multiquadric`` ``-sqrt(||a - b||^2 + c^2)``
    ========================  ==========================================

    ``row_scales`` / ``col_scales`` (Gaussian only) are per-point bandwidths
    of the row and column points (the relative Gaussian); both or neither.
    """

    kind: "TermKind"
    weight: float = 1.0
    sigma: float = 1.0
    c: float = 0.0
    degree: int = 1
    row_scales: Optional[np.ndarray] = None
    col_scales: Optional[np.ndarray] = None

    def cast(self, dtype) -> "KernelTerm":
        """The same term with its per-point scales in ``dtype`` (contiguous)."""
        if self.row_scales is None and self.col_scales is None:
            return self

        def scales(v):  # one side missing stays missing: the core says both are needed
            return None if v is None else np.ascontiguousarray(v, dtype=dtype).ravel()

        return KernelTerm(self.kind, self.weight, self.sigma, self.c, self.degree,
                          scales(self.row_scales), scales(self.col_scales))


class GammaArrays(NamedTuple):
    """Gamma as the core takes it: ``factor diag(scale) factor^T`` or ``dense``, or neither
    (all ones); ``table``: a factored Gamma's :func:`gamma_table` for passes of its
    points with themselves, or None (each pass then prepares its own)."""

    factor: Optional[np.ndarray] = None
    scale: Optional[np.ndarray] = None
    dense: Optional[np.ndarray] = None
    table: Any = None


def gamma_table(factor, scale=None, dtype=np.float64):
    """What every pass of a factored Gamma's points with themselves reads of it, made once.

    The row factor scaled by ``scale``, the factor transposed and padded to the
    tiles, and, when the rows take few distinct values (class labels), each
    row's class and the table of the distinct rows times the factor
    (``GammaTable`` in ``cpp/include/ikdr/ism_products.hpp``). Passing it to
    :func:`fused_product` or :func:`phi_product` (``GammaArrays.table``) saves
    that O(n r) serial preparation before every pass, a share that matters
    where the passes are short (n about 1,000: ``benchmarks/bench_call_overhead.py``).
    Valid only with the same factor, scale and dtype.
    """
    dtype = core_dtype(dtype)
    return getattr(_core, "gamma_table_" + _suffix(dtype))(_as(factor, dtype), _as(scale, dtype))


class FusedResult(NamedTuple):
    """What one fused pass returns.

    product : ndarray (n, k) or None
        Value mode: ``(Gamma o K) R``. Gradient mode: ``G R`` with
        ``G = Gamma o A + 2 L(Gamma o B)`` (see :func:`fused_product`).
    value_sums : ndarray (n,)
        Row sums of ``Gamma o K``: the degrees (Gamma = ones) or the
        objective's rows, ``Tr(Gamma K) = value_sums.sum()``.
    """

    product: Optional[np.ndarray]
    value_sums: np.ndarray


def core_dtype(dtype) -> np.dtype:
    """float32 stays float32; every other dtype is computed in float64."""
    return np.dtype(np.float32) if np.dtype(dtype) == np.float32 else np.dtype(np.float64)


def _suffix(dtype) -> str:
    return "f32" if core_dtype(dtype) == np.float32 else "f64"


def _threads(n_threads) -> int:
    if _forked_without_pause:  # pragma: no cover - see OPENMP_PAUSE
        return 1
    return int(n_threads) if n_threads else get_num_threads()


#: Operands up to this width are multiplied in the core's own tiles; wider ones
#: (points, Gamma factors, right-hand sides) go through SciPy's BLAS.
_BLAS_WIDTH = _core.BLAS_MIN_WIDTH


def _blas_guard(*widths):
    """Hold the BLAS at one thread when the pass will call it (any operand wider
    than the core's tiles take), else nothing: a thin pass never calls the BLAS,
    and the limit costs tens of microseconds per call."""
    if any(w > _BLAS_WIDTH for w in widths):
        return single_threaded_blas()
    return contextlib.nullcontext()


def _as(a, dtype):
    return None if a is None else np.ascontiguousarray(a, dtype=dtype)


def _cast_terms(terms: Sequence[KernelTerm], dtype):
    return [t.cast(dtype) for t in terms]


def fused_product(points, terms: Sequence[KernelTerm], *, gamma: GammaArrays = GammaArrays(),
                  gradient: bool = False, rhs=None, columns=None, gamma_columns=None,
                  rhs_rows=None, n_threads=None) -> FusedResult:
    r"""One tiled pass over the n x n weights :math:`\Psi = \Gamma \circ h(z_i, z_j)`.

    Value mode (``gradient=False``), h = K: ``product = (Gamma o K) rhs``.
    Gradient mode, h = f'(beta) of each member: with A the derivative
    weights of the inner-product members (linear, polynomial) and B those of
    the distance members (Gaussian, squared, multiquadric),
    ``product = (Gamma o A) rhs + 2 L(Gamma o B) rhs``, :math:`L(M) = \mathrm{diag}(M1) - M`,
    so that :math:`\Phi(W) = X^T G(XW) X` (docs/maths.md, section 2). Both modes
    also return the row sums of ``Gamma o K``. Nothing n x n is stored.

    Between two point sets (``columns``, m x k: a block pair of a distributed
    pass), K is n x m, ``rhs`` has m rows, Gamma's factor rows of the column
    points are ``gamma_columns`` (same rank and scale), and in gradient mode
    the Laplacian's diagonal multiplies ``rhs_rows`` (n rows), the row
    points' own right-hand side: summed over all column blocks, the block
    products add up to the single-set product.
    """
    dtype = core_dtype(points.dtype)
    points = np.ascontiguousarray(points, dtype=dtype)
    fn = getattr(_core, "fused_product_" + _suffix(dtype))
    rank = 0 if gamma.factor is None else np.shape(gamma.factor)[1]
    rhs_cols = 0 if rhs is None else np.shape(rhs)[1]
    with _blas_guard(points.shape[1], rank, rhs_cols):
        y, value_sums = fn(points, _cast_terms(terms, dtype), bool(gradient),
                           gamma_factor=_as(gamma.factor, dtype), gamma_scale=_as(gamma.scale, dtype),
                           gamma_dense=_as(gamma.dense, dtype), rhs=_as(rhs, dtype),
                           z_cols=_as(columns, dtype), gamma_factor_cols=_as(gamma_columns, dtype),
                           rhs_rows=_as(rhs_rows, dtype), n_threads=_threads(n_threads),
                           gamma_table=gamma.table)
    return FusedResult(y, value_sums)


def phi_product(X, W, V, terms: Sequence[KernelTerm], *, gamma: GammaArrays = GammaArrays(),
                n_threads=None) -> FusedResult:
    r""":math:`X^\top G(XW)\,(XV)` (d x k) and the row sums of :math:`\Gamma \circ K_{XW}`, one call.

    ISM's :math:`\Phi(W) V` (``V=None``: the dense :math:`\Phi(W)`, d x d,
    not yet symmetrised) with G the gradient weights of :func:`fused_product`
    on the points Z = XW: the products XW and XV, the fused pass and
    :math:`X^\top (GR)` in the core, on its threads and in chunks fixed by the
    shapes (the result does not depend on the thread count), without a return
    to Python between them. In X's dtype (float32 stays float32).
    """
    dtype = core_dtype(X.dtype)
    fn = getattr(_core, "phi_product_" + _suffix(dtype))
    with single_threaded_blas():
        out, value_sums = fn(_as(X, dtype), _as(W, dtype), _as(V, dtype), _cast_terms(terms, dtype),
                             gamma_factor=_as(gamma.factor, dtype),
                             gamma_scale=_as(gamma.scale, dtype),
                             gamma_dense=_as(gamma.dense, dtype), n_threads=_threads(n_threads),
                             gamma_table=gamma.table)
    return FusedResult(out, value_sums)


def matmul(A, B, *, transpose_a=False, n_threads=None) -> np.ndarray:
    r""":math:`A B` (or :math:`A^\top B`) on ikdr's threads, in A's dtype.

    Rows of the result in chunks fixed by the shapes, one single-threaded BLAS
    call each, so the result does not depend on the thread count. The small
    GEMMs around a pass (XW, :math:`X^\top (GR)`) go through here rather than
    a threaded BLAS: its idle workers spin-wait after each call and take a core
    from the next pass (``benchmarks/bench_call_overhead.py`` times the passes on
    1 and 2 threads).
    """
    dtype = core_dtype(A.dtype)
    fn = getattr(_core, "matmul_" + _suffix(dtype))
    with single_threaded_blas():
        return fn(_as(A, dtype), _as(B, dtype), bool(transpose_a), _threads(n_threads))


def kernel_matrix(A, B, terms: Sequence[KernelTerm], *, n_threads=None) -> np.ndarray:
    """The dense kernel matrix ``K_ij = sum_t k_t(a_i, b_j)`` (n_a x n_b), in A's dtype."""
    dtype = core_dtype(A.dtype)
    A = np.ascontiguousarray(A, dtype=dtype)
    B = A if B is None or B is A else np.ascontiguousarray(B, dtype=dtype)
    fn = getattr(_core, "kernel_matrix_" + _suffix(dtype))
    with _blas_guard(A.shape[1]):
        return fn(A, B, _cast_terms(terms, dtype), _threads(n_threads))


def sne_row_normalisers(A, B, sigma: float, *, n_threads=None):
    r"""Per row of A, the log-sum-exp shift :math:`\min_j d^2_{ij}` and the sum
    :math:`\sum_j \exp(-(d^2_{ij} - \mathrm{shift}_i)/2\sigma^2)` over the rows of B,
    in one tiled pass that never stores the n x m matrix."""
    dtype = core_dtype(A.dtype)
    fn = getattr(_core, "gaussian_row_normalisers_" + _suffix(dtype))
    with single_threaded_blas():
        return fn(_as(A, dtype), _as(B, dtype), float(sigma), _threads(n_threads))


def sne_matrix(A, B, sigma: float, shift=None, scale=None, *, n_threads=None) -> np.ndarray:
    r""":math:`\exp(-(d^2_{ij} - \mathrm{shift}_i)/2\sigma^2) / \mathrm{scale}_i` (n_a x n_b).

    Without ``shift`` and ``scale`` they are computed over B's rows in the same
    pass: the SNE block normalised over its own columns, in one pass instead of two.
    """
    dtype = core_dtype(A.dtype)
    fn = getattr(_core, "shifted_gaussian_matrix_" + _suffix(dtype))
    with single_threaded_blas():
        return fn(_as(A, dtype), _as(B, dtype), float(sigma), shift=_as(shift, dtype),
                  scale=_as(scale, dtype), n_threads=_threads(n_threads))


def lowrank_plus_sparse(dl, u, v, indptr, indices, data, *, n_threads=None) -> np.ndarray:
    """Dense ``diag(dl) (u v^T + S)`` with S in CSR form (n x m), in one parallel pass."""
    dtype = core_dtype(np.result_type(u, v, data))
    fn = getattr(_core, "lowrank_plus_sparse_" + _suffix(dtype))
    return fn(_as(dl, dtype), _as(u, dtype), _as(v, dtype), _as(indptr, np.int64),
              _as(indices, np.int64), _as(data, dtype), _threads(n_threads))


def feature_bin_sums(X, lo, width, bins: int, weights, *, n_threads=None):
    """Per feature j and bin b of equal width: the rows whose value of feature j
    falls in bin b (``floor((X[i, j] - lo[j]) / width[j])``, at most ``bins - 1``),
    counted and their rows of ``weights`` (n x r) summed, in one parallel pass over
    X (float64). Returns (counts d x bins, sums d x bins x r)."""
    return _core.feature_bin_sums_f64(_as(X, np.float64), _as(lo, np.float64),
                                      _as(width, np.float64), int(bins),
                                      _as(weights, np.float64), _threads(n_threads))


class LandmarkFactor(NamedTuple):
    r"""One Nystrom factor of a landmark pass: its rows are
    :math:`C = \sum_t k_t(Z, Z_L)` (``terms`` against the m x q ``landmarks``),
    or :math:`-1/C` with ``negative_reciprocal`` (the inverse multiquadric
    from the multiquadric)."""

    terms: Sequence[KernelTerm]
    landmarks: np.ndarray
    negative_reciprocal: bool = False


class LandmarkGamma(NamedTuple):
    """Gamma's rows for a landmark pass: class ``codes`` (int, n) with the class
    ``proportions`` p (the supervised :math:`HYY^TH`), or a general ``factor``
    G (n x r; its signed scale is folded in by the caller)."""

    codes: Optional[np.ndarray] = None
    proportions: Optional[np.ndarray] = None
    factor: Optional[np.ndarray] = None


def sweep_workspace():
    """Scratch memory that the landmark sweeps keep from one call to the next
    (``SweepWorkspace`` in ``cpp/include/ikdr/landmark_pass.hpp``): passed as
    ``workspace`` to :func:`landmark_first_sweep` and :func:`landmark_second_sweep`,
    it spares each sweep tens of megabytes of fresh pages at large d and m. Calls
    that find it in use run on their own memory, so sharing it is safe; it pickles
    as a new, empty workspace."""
    return _core.SweepWorkspace()


def _landmark_args(X, W, V, factors, gamma, dtype):
    dtype = core_dtype(dtype)
    # a memmap or array of the compute dtype, or float32 rows of a float64 pass, is read
    # in place, one row block at a time
    same = X.dtype == dtype or (X.dtype == np.float32 and dtype == np.float64)
    X = np.ascontiguousarray(X) if same else np.ascontiguousarray(X, dtype=dtype)
    return (dtype, X, _as(W, dtype), _as(V, dtype), [_cast_terms(f.terms, dtype) for f in factors],
            [_as(f.landmarks, dtype) for f in factors], [bool(f.negative_reciprocal) for f in factors],
            dict(codes=_as(gamma.codes, np.int64), proportions=_as(gamma.proportions, np.float64),
                 gamma_factor=_as(gamma.factor, dtype)))


def landmark_first_sweep(X, W, factors: Sequence[LandmarkFactor], gamma: LandmarkGamma, *,
                         products, V=None, dense=False, block_rows=4096, n_threads=None,
                         dtype=None, workspace=None):
    r"""The first sweep of a landmark pass over the rows of X (``cpp/include/ikdr/landmark_pass.hpp``).

    Per factor ``(P, A, Q)``, float64 sums over the rows, in row blocks of
    ``block_rows`` (X read in place: a memmap one block at a time):
    :math:`P = C^T E` (E = [Y, 1, a] for classes, G otherwise); with ``dense``
    and ``products[f]``, A: :math:`X_c^T C_c` per class (classes x d x m) or
    :math:`X^T\mathrm{diag}(g_j)C` (d x r x m); with V and ``products[f]``, Q:
    :math:`C_c^T (XV)_c` (classes x m x k) or :math:`C^T\mathrm{diag}(g_j)XV`
    (m x r x k); None where not asked. Bitwise the same for any ``n_threads``.
    Computed in ``dtype`` (default X's; float32 rows of a float64 sweep are
    converted block by block, never copied whole). ``workspace``: a
    :func:`sweep_workspace` whose memory the sweep reuses.
    """
    dtype, X, W, V, terms, marks, recip, g = _landmark_args(X, W, V, factors, gamma,
                                                            X.dtype if dtype is None else dtype)
    fn = getattr(_core, "landmark_first_sweep_" + _suffix(dtype))
    with single_threaded_blas():
        return fn(X, W, V, terms, marks, recip, [bool(p) for p in products], dense=bool(dense),
                  block_rows=int(block_rows), n_threads=_threads(n_threads), workspace=workspace,
                  **g)


def landmark_second_sweep(X, W, factors: Sequence[LandmarkFactor], gamma: LandmarkGamma, rhs, *,
                          V=None, dense=False, block_rows=4096, n_threads=None, dtype=None,
                          workspace=None):
    r"""The second sweep of a landmark pass: ``(phi, pv)``, float64 sums over the rows.

    With :math:`o_i = \sum_f C_{f,i} H_f[c_i]` (classes; ``rhs[f]`` classes x m x
    (1 + k)) or :math:`o_i = \sum_j g_{ij}\sum_f C_{f,i} H_f[:, j]` (``rhs[f]`` m x
    r x (1 + k)), ``rhs[f]`` None for factors outside Phi: deg = o[:, 0],
    ``phi`` = :math:`X^T\mathrm{diag}(\deg)X` (``dense``, else None) and
    ``pv`` = :math:`X^T(o_{:,1:} + \deg \circ XV)` (with V, else None).
    ``workspace``: as in :func:`landmark_first_sweep`.
    """
    dtype, X, W, V, terms, marks, recip, g = _landmark_args(X, W, V, factors, gamma,
                                                            X.dtype if dtype is None else dtype)
    fn = getattr(_core, "landmark_second_sweep_" + _suffix(dtype))
    with single_threaded_blas():
        return fn(X, W, V, terms, marks, recip, [None if h is None else _as(h, dtype) for h in rhs],
                  dense=bool(dense), block_rows=int(block_rows), n_threads=_threads(n_threads),
                  workspace=workspace, **g)


def top_eigenpairs(A, q: int, V0=None, *, max_iter: int = 300, tol: float = 1e-10,
                   oversample: int = 8):
    """The q largest eigenpairs of symmetric A by the core's Chebyshev-filtered
    block power iteration: ``(values, vectors, iterations, converged, residual)``."""
    return _core.top_eigenpairs_f64(_as(A, np.float64), int(q), _as(V0, np.float64),
                                    max_iter=int(max_iter), tol=float(tol),
                                    oversample=int(oversample))


def cpm_eigenpairs(A, q: int, V0=None, *, active: int = 0, max_sweeps: float = 300.0,
                   tol: float = 1e-10):
    """The q largest eigenpairs of symmetric A by the core's coordinate-wise
    power method (Lei, Zhong and Dhillon 2016; ``cpp/include/ikdr/cpm.hpp``).

    ``active`` coordinates (rows of the iterate) change per step, the ones
    furthest from their power step (0: ceil(d / 10)); at most ``max_sweeps``
    x d coordinate updates; stops when every Ritz residual is at most ``tol``
    x ||A||_F. Returns ``(values, vectors, info)``, info with ``iterations``,
    ``sweeps``, ``converged``, ``residual`` and ``gap`` (the Ritz estimate of
    lambda_q - lambda_{q+1}, 0 when q = d).
    """
    vals, vecs, info = _core.cpm_eigenpairs_f64(_as(A, np.float64), int(q), _as(V0, np.float64),
                                                active=int(active), max_sweeps=float(max_sweeps),
                                                tol=float(tol))
    return vals, vecs, dict(info)


def build_info() -> dict:
    """Version, compiler, threading (``openmp``: built with OpenMP, and the
    runtime's ``openmp_library``) and SIMD level of the compiled core."""
    return dict(_core.build_info())


# the configuration reports the core's build without importing this door
_config.register_native_info(build_info)
