r"""Clustering paradigms of ISM: W and a spectral embedding U learned together.

Every paradigm here is a Gamma builder plus the shared U-step
(:func:`ikdr._spectral.spectral_embedding`); the W-step is always the one
ISM solver (:func:`ikdr.ism`) with D held fixed inside the step
(DESIGN.md sections 1 and 3). The alternation:

1. U-step at W = I (the full data): :math:`U_0`, :math:`D_0` (ISM paper,
   section 2: "by initializing W to an identity matrix, Y is initialized to
   the solution of spectral clustering").
2. W-step: ISM on :math:`\Gamma(U, D)`, from :math:`\Phi_0` in the first
   outer iteration (spectral initialisation), warm-started from the previous
   W afterwards.
3. U-step on XW: U = top-k eigenvectors of :math:`H D^{-1/2} K_{XW} D^{-1/2} H`, new D
   (dense below ``ikdr._spectral.DENSE_MAX_N`` samples; above, matrix-free
   over the fused C++ kernel product, warm-started from the previous U).
4. Stop when the relative changes of the subspaces of U and W,
   :math:`\|AA^T - BB^T\|_F / \|AA^T\|_F`, are both below ``tol``, or after
   ``max_iter`` outer iterations. Labels: k-means on the row-normalised U.

The W-step holds D fixed while the objective's D moves with W, so the
alternation is not guaranteed to ascend; the iterate with the highest
objective is returned (``best_iteration_``; usually the last one).
"""
from __future__ import annotations

import numbers
import time
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin, TransformerMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted, validate_data

from ._ism import _sigma_of, check_dtype, check_kernel_params
from ._progress import IterationReport, check_verbose
from ._solver import choose_n_components, ism
from ._spectral import clustering_gamma, njw_labels, spectral_embedding
from ._validation import TargetRequiredMixin, check_n_components, check_positive
from ._validation import check_scale, keep_state_on_error
from .gamma import Gamma, centered, kernel_factor, semi_supervised_gamma
from .kernels import Gaussian, Kernel, Polynomial, RelativeGaussian, make_kernel
from ._typing import DTypeLike, KernelLike, RandomStateLike, SigmaLike

__all__ = ["ISMClustering", "SemiSupervisedISM"]

#: cap on the ISM iterations of one W-step (the authors' code uses 10-20);
#: warm-started steps usually converge in 1-3, the outer loop does the rest
ISM_MAX_ITER = 20


def subspace_change(A, B):
    r"""Relative change :math:`\|AA^T - BB^T\|_F / \|AA^T\|_F` of two orthonormal bases.

    Invariant to signs and rotations of the columns; computed from the k x k
    product (:math:`\|AA^T - BB^T\|_F^2 = 2k - 2\|A^TB\|_F^2`), never n x n.
    """
    k = A.shape[1]
    overlap = np.linalg.norm(A.T @ B) ** 2
    return float(np.sqrt(max(0.0, 2.0 * k - 2.0 * overlap) / k))


def is_affinity(kernel):
    """True when every member of the kernel is non-negative by construction
    (Gaussian, relative Gaussian, even-degree polynomial with c >= 0), so
    the degrees ``K 1`` are positive and the spectral normalisation applies."""
    for w, k in kernel.members():
        if w <= 0:
            continue
        if isinstance(k, (Gaussian, RelativeGaussian)):
            continue
        if isinstance(k, Polynomial) and int(k.degree) % 2 == 0:
            continue
        return False
    return True


def resolve_normalize(normalize, kernel):
    if isinstance(normalize, str):
        if normalize != "auto":
            raise ValueError(f'normalize must be "auto", True or False, got {normalize!r}')
        return is_affinity(kernel)
    if not isinstance(normalize, (bool, np.bool_)):
        raise TypeError(f'normalize must be "auto", True or False, got {normalize!r}')
    return bool(normalize)


def check_n_clusters(n_clusters, n_samples):
    if isinstance(n_clusters, bool) or not isinstance(n_clusters, numbers.Integral):
        raise TypeError(f"n_clusters must be an int, got {type(n_clusters).__name__}")
    if n_clusters < 2:
        raise ValueError(f"n_clusters must be >= 2, got {n_clusters}")
    if n_samples <= n_clusters:
        raise ValueError(f"n_samples={n_samples} must be larger than n_clusters={n_clusters} "
                         "(fewer samples than clusters)")
    return int(n_clusters)


def check_max_iter(max_iter):
    if isinstance(max_iter, bool) or not isinstance(max_iter, numbers.Integral) or max_iter < 1:
        raise ValueError(f"max_iter must be a positive int, got {max_iter!r}")
    return int(max_iter)


def quadratic_trace(Z, kernel, factor, *, n_threads=None):
    r""":math:`\mathrm{Tr}(F^T K_Z F)` by one fused pass (F is n x r, never K)."""
    return kernel.objective(Z, None, Gamma(factor), n_threads=n_threads)


def alternate(X, kernel, affinity, n_clusters, n_components, build_gamma, *, normalize, max_iter,
              tol, random_state, measure=None, n_threads=None, report=None):
    """The shared U/W alternation (module docstring). Returns a dict.

    ``kernel`` is the ISM kernel of the W-step, ``affinity`` the kernel of the
    U-step (the same object unless the user asked for another).

    ``build_gamma(U, degrees)`` gives the paradigm's Gamma; ``measure(Z, U,
    eigenvalues, degrees)`` returns extra per-iteration numbers (a dict with
    at least ``objective``). ``report`` (an :class:`ikdr._progress.IterationReport`)
    receives every outer iteration; at verbose >= 2 the W-steps' ISM
    iterations are printed too.
    """
    t0 = time.perf_counter()
    d = X.shape[1]
    U, vals, deg = spectral_embedding(X, affinity, n_clusters, random_state=random_state,
                                      n_threads=n_threads, normalize=normalize)
    gamma = build_gamma(U, deg)
    if n_components is None:
        phi0 = kernel.phi0(X, gamma)
        q = choose_n_components(np.linalg.eigvalsh(phi0), minimum=1)
        q = min(q, d)
    else:
        q = n_components
    W = None
    history = []
    converged = False
    best = None
    inner = None
    if report is not None and report.verbose >= 2:
        inner = IterationReport("  W-step ISM", report.verbose, stream=report.stream).ism_step
    for it in range(1, max_iter + 1):
        # The inner W-steps skip the Hessian part of the certificate (not stored).
        result = ism(X, gamma, kernel, q, W0=W, max_iter=ISM_MAX_ITER, n_threads=n_threads,
                     random_state=random_state, warn=False, certify=False, callback=inner)
        W_new = result.components
        Z = np.ascontiguousarray(X @ W_new, dtype=X.dtype)
        U_new, vals, deg = spectral_embedding(Z, affinity, n_clusters, random_state=random_state,
                                              n_threads=n_threads, normalize=normalize, U0=U)
        dU = subspace_change(U, U_new)
        dW = np.inf if W is None else subspace_change(W, W_new)
        U, W = U_new, W_new
        entry = {"iteration": it, "ism_iterations": result.n_iter,
                 "ism_converged": result.converged, "u_change": dU, "w_change": dW,
                 "quality": float(np.sum(vals))}
        if measure is not None:
            entry.update(measure(Z, U, vals, deg))
        else:
            entry["objective"] = entry["quality"]
        entry["cost"] = -entry["objective"]
        entry["time"] = time.perf_counter() - t0
        history.append(entry)
        if report is not None:
            report(it, entry["objective"], max(dU, dW), quality=entry["quality"],
                   ism_iter=result.n_iter)
        # The W-step holds D fixed, so the true objective (D moves with W) need
        # not rise monotonically: keep the best iterate seen.
        if best is None or entry["objective"] > best[0]:
            best = (entry["objective"], it, W, U, vals, deg)
        if dU < tol and dW < tol:
            converged = True
            break
        gamma = build_gamma(U, deg)
    if not converged:
        warnings.warn(f"the U/W alternation did not converge in max_iter={max_iter} outer "
                      f"iterations (last changes: U {history[-1]['u_change']:.3g}, "
                      f"W {history[-1]['w_change']:.3g}, tol={tol})", ConvergenceWarning,
                      stacklevel=3)
    _, best_it, W, U, vals, deg = best
    return {"W": W, "U": U, "eigenvalues": vals, "degrees": deg, "n_iter": len(history),
            "best_iteration": best_it, "converged": converged, "history": history,
            "n_components": q, "kernel": kernel, "affinity": affinity,
            "time": time.perf_counter() - t0}


class _AlternatingClustering(ClusterMixin, TransformerMixin, BaseEstimator):
    """Shared parameter checks, fitted attributes and transform."""

    def _check_common(self, X):
        self._dtype = check_dtype(getattr(self, "dtype", np.float64))
        check_positive(self.tol, "tol")
        check_verbose(self.verbose)
        self._max_iter = check_max_iter(self.max_iter)
        kernel = check_kernel_params(self.kernel, self.sigma)
        n_clusters = check_n_clusters(self.n_clusters, X.shape[0])
        q = None if self.n_components is None else check_n_components(self.n_components, X.shape[1])
        kernel = kernel.fit(X, random_state=self.random_state)
        if self.affinity is None:
            affinity = kernel
        else:
            if not isinstance(self.affinity, (str, Kernel)):
                raise TypeError("affinity must be None, a kernel name or an ikdr.kernels.Kernel, "
                                f"got {type(self.affinity).__name__}")
            affinity = make_kernel(self.affinity).fit(X, random_state=self.random_state)
        normalize = resolve_normalize(self.normalize, affinity)
        return kernel, affinity, n_clusters, q, normalize

    def _report(self):
        """The per-iteration report of ``verbose`` (a context manager)."""
        return IterationReport(type(self).__name__, self.verbose, total=self._max_iter)

    def _store(self, out):
        self.components_ = out["W"]
        self.embedding_ = out["U"]
        self.eigenvalues_ = out["eigenvalues"]
        self.degrees_ = out["degrees"]
        self.n_iter_ = out["n_iter"]
        self.converged_ = out["converged"]
        self.history_ = out["history"]
        self.kernel_ = out["kernel"]
        self.affinity_ = out["affinity"]
        self.sigma_ = _sigma_of(out["kernel"])
        self.normalize_ = out["normalize"]
        self.labels_ = njw_labels(out["U"], self.n_clusters, random_state=self.random_state)
        self.best_iteration_ = out["best_iteration"]
        self.quality_ = out["history"][self.best_iteration_ - 1]["quality"]

    def transform(self, X):
        """Project X onto the learned subspace: ``X @ components_``."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return X @ self.components_


_COMMON_PARAMS = r"""
    n_clusters : int
        Number of clusters k (>= 2).
    n_components : int or None, default=None
        q, the dimension of the learned subspace. ``None`` picks q by the
        largest eigengap of :math:`\Phi_0` at the first W-step (dissertation
        Eq. 3.11: the gap between the q-th and (q+1)-th largest eigenvalues).
    kernel : str or Kernel, default="gaussian"
        Any ISM kernel or conic combination (:mod:`ikdr.kernels`).
    sigma : float or "median", default="median"
        Gaussian bandwidth when ``kernel="gaussian"``; "median" is the median
        pairwise distance of the training X, fixed for the whole run.
    max_iter : int, default=20
        Cap on the outer U/W iterations.
    tol : float, default=1e-3
        Stop when the relative subspace changes of U and W are both below tol.
    affinity : None, str or Kernel, default=None
        Kernel of the U-step (spectral clustering of XW). None: ``kernel``
        itself, the papers' single-kernel objective. A global kernel such as
        the polynomial finds the subspace well but cannot cluster non-convex
        shapes (moons) by itself; ``affinity=Gaussian(0.1)`` then clusters XW
        with a local kernel while ISM keeps ``kernel`` in the W-step (D then
        comes from the affinity in both steps). A Gaussian given by name uses
        the median distance of X.
    normalize : "auto" or bool, default="auto"
        Degree normalisation :math:`D = \mathrm{diag}(K_{XW}1)` of the papers.
        "auto" uses it when the U-step kernel is non-negative by construction
        (Gaussian, relative Gaussian, even-degree polynomial) and otherwise
        D = I: the U-step then maximises the plain HSIC
        :math:`\mathrm{Tr}(U^THK_{XW}HU)`, which needs no positive degrees
        (linear, squared, multiquadric and odd polynomial kernels take
        negative values, so ``K 1`` can vanish or change sign).
    random_state : int, RandomState instance or None
        Seeds the median heuristic's subsample, the Lanczos start vector and k-means.
    verbose : int, default=0
        1 prints one line per outer U/W iteration (objective, the larger
        subspace change of U and W, quality, ISM iterations, time); 2 also
        the W-steps' ISM iterations. With tqdm installed, a progress bar on a
        terminal.
    dtype : {numpy.float64, numpy.float32}, default=numpy.float64
        Precision of the C++ kernel products during ``fit``. ``np.float32``
        runs the fused products (and their BLAS calls) in single precision,
        about twice as fast at large n, with HSIC agreeing to about 1e-4
        relative; the certificate and the fitted attributes stay float64.
"""

_COMMON_ATTRS = r"""
    labels_ : ndarray (n_samples,)
        k-means labels of the row-normalised embedding (Ng-Jordan-Weiss).
    components_ : ndarray (n_features, n_components)
        W, orthonormal columns.
    embedding_ : ndarray (n_samples, n_clusters)
        U, the final spectral embedding of XW.
    eigenvalues_ : ndarray (n_clusters,)
        Eigenvalues belonging to U; their sum is ``quality_``.
    degrees_ : ndarray (n_samples,)
        Diagonal of the final D (ones when not normalised).
    quality_ : float
        Clustering quality CQ = :math:`\mathrm{Tr}(U^T H D^{-1/2} K_{XW} D^{-1/2} H U)`
        (dissertation Table 3.1; at most n_clusters when normalised).
    n_iter_ : int
        Outer U/W iterations.
    best_iteration_ : int
        The (1-based) outer iteration whose W, U are returned: the one with
        the highest objective (D is held fixed in the W-step, so the true
        objective need not rise monotonically).
    converged_ : bool
    history_ : list of dict
        Per outer iteration: ``objective`` (the paradigm's objective, maximised),
        ``cost`` (its negative, the thesis' convention), ``quality``,
        ``u_change``, ``w_change``, ``ism_iterations``, ``time`` and the
        paradigm's own terms.
    kernel_ : Kernel
        The W-step kernel with fitted parameters.
    affinity_ : Kernel
        The U-step kernel (``kernel_`` unless ``affinity`` was given).
    sigma_ : float or None
    normalize_ : bool
        Whether D was the degree matrix (True) or the identity.
    n_features_in_ : int
"""


class ISMClustering(_AlternatingClustering):
    __doc__ = r"""Unsupervised interpretable kernel dimension reduction for clustering.

    Maximises :math:`\mathrm{Tr}(U^T H D^{-1/2} K_{XW} D^{-1/2} H U)` over W
    (:math:`W^TW = I`) and U (:math:`U^TU = I`) (Niu, Dy, Jordan 2011; ISM
    paper section 2): the U-step is spectral clustering of XW, the W-step is
    ISM with :math:`\Gamma = D^{-1/2} H U U^T H D^{-1/2}` and D held fixed.

    Parameters
    ----------""" + _COMMON_PARAMS + r"""
    Attributes
    ----------""" + _COMMON_ATTRS + r"""
    See Also
    --------
    SemiSupervisedISM, KDAC

    References
    ----------
    Niu, Dy, Jordan. Dimensionality reduction for spectral clustering. AISTATS 2011.
    Wu, Miller, Chang, Sznaier, Dy. Solving Interpretable Kernel Dimension
    Reduction. NeurIPS 2019, section 2 and Table 4.

    Examples
    --------
    >>> from sklearn.datasets import load_wine
    >>> from sklearn.preprocessing import StandardScaler
    >>> import ikdr
    >>> X, y = load_wine(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)
    >>> model = ikdr.ISMClustering(n_clusters=3, n_components=3, random_state=0).fit(X)
    >>> round(ikdr.metrics.nmi(y, model.labels_), 2) >= 0.84
    True
    """

    def __init__(self, n_clusters: int = 2, n_components: int | None = None,
                 kernel: KernelLike = "gaussian", sigma: SigmaLike = "median", max_iter: int = 20,
                 tol: float = 1e-3, affinity: str | None = None, normalize: str | bool = "auto",
                 random_state: RandomStateLike = None, verbose: int = 0,
                 dtype: DTypeLike = np.float64) -> None:
        self.n_clusters = n_clusters
        self.n_components = n_components
        self.kernel = kernel
        self.sigma = sigma
        self.max_iter = max_iter
        self.tol = tol
        self.affinity = affinity
        self.normalize = normalize
        self.random_state = random_state
        self.verbose = verbose
        self.dtype = dtype

    @keep_state_on_error
    def fit(self, X, y=None):
        """Learn W, U and the labels from X (n x d); y is ignored."""
        X = validate_data(self, X, dtype=np.float64, ensure_min_samples=2)
        check_scale(X)
        kernel, affinity, k, q, normalize = self._check_common(X)

        with self._report() as report:
            out = alternate(X.astype(self._dtype, copy=False), kernel, affinity, k, q, clustering_gamma, normalize=normalize,
                            max_iter=self._max_iter, tol=self.tol,
                            random_state=self.random_state, report=report)
        out["normalize"] = normalize
        self._store(out)
        return self


class SemiSupervisedISM(TargetRequiredMixin, _AlternatingClustering):
    __doc__ = r"""Semi-supervised clustering guided by expert scores (ISM paper, Eq. 2-3).

    Maximises :math:`\mathrm{Tr}(U^T H D^{-1/2} K_{XW} D^{-1/2} H U) +
    \mu\,\mathrm{Tr}(K_{XW} H K_{\hat Y} H)` over W and U: spectral clustering
    of XW while XW stays dependent on the scores :math:`\hat Y` (n x r). The
    W-step is ISM with :math:`\Gamma = D^{-1/2} H U U^T H D^{-1/2} + \mu H K_{\hat Y} H`
    (factored, :math:`K_{\hat Y} = FF^T` by pivoted Cholesky).

    Scale of ``mu``: the clustering term is at most ``n_clusters`` while the
    score term is :math:`(n-1)^2\,\mathrm{HSIC}(XW, \hat Y)`, so with the
    literal Eq. (2) ``mu = 1`` lets the scores dominate; both terms are in
    ``history_`` (``quality`` and ``score_term``) to help balancing.

    Parameters
    ----------""" + _COMMON_PARAMS + r"""
    mu : float, default=1.0
        Weight of the score term (>= 0).
    score_kernel : str or Kernel, default="gaussian"
        Kernel on the scores; "gaussian" uses the median heuristic on them.

    Attributes
    ----------""" + _COMMON_ATTRS + r"""
    References
    ----------
    Wu, Miller, Chang, Sznaier, Dy. Solving Interpretable Kernel Dimension
    Reduction. NeurIPS 2019, Eq. (2)-(3).
    """

    def __init__(self, n_clusters: int = 2, n_components: int | None = None, mu: float = 1.0,
                 kernel: KernelLike = "gaussian", sigma: SigmaLike = "median",
                 score_kernel: KernelLike = "gaussian", max_iter: int = 20, tol: float = 1e-3,
                 affinity: str | None = None, normalize: str | bool = "auto",
                 random_state: RandomStateLike = None, verbose: int = 0,
                 dtype: DTypeLike = np.float64) -> None:
        self.n_clusters = n_clusters
        self.n_components = n_components
        self.mu = mu
        self.kernel = kernel
        self.sigma = sigma
        self.score_kernel = score_kernel
        self.max_iter = max_iter
        self.tol = tol
        self.affinity = affinity
        self.normalize = normalize
        self.random_state = random_state
        self.verbose = verbose
        self.dtype = dtype

    @keep_state_on_error
    def fit(self, X, scores):
        """Learn W, U and the labels from X (n x d) and expert scores (n x r or n)."""
        if scores is None:
            raise ValueError("SemiSupervisedISM requires y to be passed, but the target y is "
                             "None: give the expert scores, fit(X, scores)")
        X, scores = validate_data(self, X, scores, dtype=np.float64, ensure_min_samples=2,
                                  multi_output=True, y_numeric=True)
        check_scale(X)
        mu = check_positive(self.mu, "mu", strict=False)
        if not isinstance(self.score_kernel, (str, Kernel)):
            raise TypeError("score_kernel must be a name or an ikdr.kernels.Kernel")
        kernel, affinity, k, q, normalize = self._check_common(X)
        scores = np.asarray(scores, dtype=np.float64).reshape(X.shape[0], -1)
        if np.all(np.ptp(scores, axis=0) == 0):
            raise ValueError("scores are constant; they carry no guidance")
        F = kernel_factor(scores, make_kernel(self.score_kernel), random_state=self.random_state)
        Fc = centered(F)

        def build(U, deg):
            return semi_supervised_gamma(U, deg, F, mu)

        def measure(Z, U, vals, deg):
            score_term = quadratic_trace(Z, affinity, Fc)
            quality = float(np.sum(vals))
            return {"score_term": score_term, "objective": quality + mu * score_term}

        with self._report() as report:
            out = alternate(X.astype(self._dtype, copy=False), kernel, affinity, k, q, build, normalize=normalize,
                            max_iter=self._max_iter, tol=self.tol,
                            random_state=self.random_state, measure=measure, report=report)
        out["normalize"] = normalize
        self._store(out)
        return self
