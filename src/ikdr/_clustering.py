r"""Clustering paradigms of ISM: W and a spectral embedding U learned together.

Every paradigm here is a Gamma builder plus the shared U-step
(:func:`ikdr.spectral.spectral_embedding`); the W-step is always the one
ISM solver (:func:`ikdr.ism`) with D held fixed inside the step
(DESIGN.md sections 1 and 3). The alternation:

1. U-step at W = I (the full data): :math:`U_0`, :math:`D_0` (ISM paper,
   section 2: "by initializing W to an identity matrix, Y is initialized to
   the solution of spectral clustering").
2. W-step: ISM on :math:`\Gamma(U, D)`, from :math:`\Phi_0` in the first
   outer iteration (spectral initialisation), warm-started from the previous
   W afterwards.
3. U-step on XW: U = top-k eigenvectors of :math:`H D^{-1/2} K_{XW} D^{-1/2} H`, new D
   (dense below ``ikdr.spectral.DENSE_MAX_N`` samples; above, matrix-free
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
from typing import Any, Callable, Optional
from dataclasses import dataclass, field

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin, TransformerMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from ._ism import _sigma_of, check_dtype
from ._progress import IterationReport
from ._solver import choose_n_components, ism
from ._validation import TargetRequiredMixin, check_n_components, check_scale
from ._validation import keep_state_on_error
from .gamma import Gamma, centered, clustering_gamma, kernel_factor, semi_supervised_gamma
from .kernels import Gaussian, Kernel, Polynomial, RelativeGaussian, make_kernel
from .spectral import auto_kernel, njw_labels, spectral_embedding
from ._bandwidth import feature_importances
from ._nystrom import ClusteringLandmarks, landmark_data, sample_rows
from . import distributed
from .kernels import _MEDIAN_SUBSAMPLE
from ._typing import ArrayLike, DTypeLike, KernelLike, RandomStateLike, SigmaLike

__all__ = ["AlternationResult", "ISMClustering", "SemiSupervisedISM", "alternate",
           "default_n_components"]

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


def quadratic_trace(Z, kernel, factor, *, n_threads=None, landmarks=None):
    r""":math:`\mathrm{Tr}(F^T K_Z F)` by one fused pass (F is n x r, never K); with
    ``landmarks`` (an :class:`ikdr._nystrom.ClusteringLandmarks`) by its landmark pass."""
    if landmarks is not None:
        return landmarks.quadratic_trace(Z, kernel, factor)
    return kernel.objective(Z, None, Gamma(factor), n_threads=n_threads)


def default_n_components(phi0_eigenvalues: ArrayLike, n_clusters: int, n_features: int, *,
                         alternative: bool = False, guided: bool = False) -> int:
    r"""The default q of the clustering paradigms.

    The largest eigengap of :math:`\Phi_0` (dissertation Eq. 3.11), but at
    least ``min(n_clusters, max(2, n_features // 2))`` and at most
    ``n_features``:

    * at least ``n_clusters`` dimensions: the eigengap alone picked q = 1 on
      two-dimensional data (circles, moons, blobs), and a line cannot hold two
      nested rings or k clusters in general position (NMI 0.0-0.45 against
      1.0 with q = 2);
    * but that floor never asks for more than half the features (and never
      less than 2): a subspace that spans every feature reduces nothing and
      the W-step then learns nothing. On the face data (20 features, 20
      identities) the floor of k gave q = d = 20, plain spectral clustering
      of X (NMI 0.83, below k-means' 0.84); q = 10 gives 0.92 (q = 8-12:
      0.91-0.92, q = 15: 0.85). On every other data set of the
      clustering-quality benchmark the floor is unchanged. Objectives with a second term
      on W (``guided=True``: SemiSupervisedISM's scores, KDAC's existing
      clustering) keep the floor ``min(n_features, n_clusters)``: there the
      extra term steers a reduced subspace away from the clusters (face with
      the benchmark's uninformative scores or random existing partition,
      q = 10 against 20: semi-supervised 0.64 against 0.83, KDAC 0.81
      against 0.83).

    Alternative clustering (``alternative=True``: KDAC when the existing
    clustering is visible in X, see :func:`ikdr._kdac.existing_dependence`)
    keeps the eigengap's q below d: a subspace that spans every direction
    cannot leave out the existing clustering's view.
    """
    q = choose_n_components(np.asarray(phi0_eigenvalues), minimum=1)
    if alternative:
        return int(min(q, max(1, n_features - 1)))
    floor = int(n_clusters) if guided else min(int(n_clusters), max(2, int(n_features) // 2))
    return int(min(n_features, max(q, floor)))


@dataclass
class AlternationResult:
    """Result of :func:`alternate` (the U/W alternation of the clustering paradigms).

    Attributes
    ----------
    components : ndarray (d, q)
        W of the best iterate (orthonormal columns).
    embedding : ndarray (n, k)
        U of the best iterate.
    eigenvalues : ndarray (k,)
        Eigenvalues belonging to U.
    degrees : ndarray (n,)
        Diagonal of D at the best iterate (ones when not normalised).
    best_iteration : int
        1-based outer iteration returned: the highest ``objective`` seen.
    n_iter : int
        Outer iterations run.
    converged : bool
        Whether the U and W changes both fell below ``tol``.
    history : list of dict
        Per outer iteration: ``objective``, ``cost``, ``quality``,
        ``u_change``, ``w_change``, ``ism_iterations``, ``ism_converged``,
        ``time`` and the paradigm's own terms.
    n_components : int
        q.
    kernel, affinity : Kernel
        The W-step kernel and the U-step kernel.
    time : float
        Seconds.
    """

    components: np.ndarray = field(repr=False)
    embedding: np.ndarray = field(repr=False)
    eigenvalues: np.ndarray = field(repr=False)
    degrees: np.ndarray = field(repr=False)
    best_iteration: int = 0
    n_iter: int = 0
    converged: bool = False
    history: list = field(default_factory=list, repr=False)
    n_components: int = 0
    kernel: Optional[Kernel] = field(default=None, repr=False)
    affinity: Optional[Kernel] = field(default=None, repr=False)
    time: float = 0.0
    n_landmarks: Optional[int] = None

    @property
    def objective(self):
        """Objective of the returned (best) iterate."""
        return self.history[self.best_iteration - 1]["objective"]


def alternate(X: ArrayLike, kernel: Kernel, n_clusters: int,
              build_gamma: Callable[..., Gamma] = clustering_gamma, *,
              affinity: Kernel | None = None, n_components: int | None = None,
              normalize: bool = True, max_iter: int = 20, tol: float = 1e-3,
              random_state: RandomStateLike = None, measure: Callable[..., Any] | None = None,
              n_threads: int | None = None, report: Any = None, warn: bool = True,
              landmarks: Any = None, alternative: bool = False,
              guided: bool = False) -> AlternationResult:
    r"""The U/W alternation shared by every clustering paradigm of ISM.

    1. U-step at W = I: :math:`U_0`, :math:`D_0` (spectral clustering of X).
    2. W-step: :func:`ikdr.ism` on ``build_gamma(U, degrees)`` (D held fixed),
       from :math:`\Phi_0` in the first outer iteration, warm-started after.
    3. U-step on XW: top-k eigenvectors of :math:`H D^{-1/2} K_{XW} D^{-1/2} H`.
    4. Stop when the relative subspace changes of U and W are both below
       ``tol``; otherwise after ``max_iter`` iterations with a
       :class:`~sklearn.exceptions.ConvergenceWarning`.

    The W-step holds D fixed while the objective's D moves with W, so the
    alternation need not ascend: the iterate with the highest objective is
    returned (``best_iteration``), converged or not, never the last one by
    accident.

    Parameters
    ----------
    X : ndarray (n, d) or row-chunked dask.array.Array
        Standardised data (float64 or float32). A dask array stays on its
        cluster: every pass runs as Dask tasks (:mod:`ikdr.distributed`).
    kernel : Kernel
        Fitted W-step kernel (e.g. :func:`ikdr.spectral.auto_kernel`).
    n_clusters : int
    build_gamma : callable, default=:func:`ikdr.gamma.clustering_gamma`
        ``build_gamma(U, degrees) -> Gamma``: the paradigm.
    affinity : Kernel or None
        U-step kernel; None uses ``kernel``.
    n_components : int or None
        q; None: :func:`default_n_components` at the first W-step.
    normalize : bool, default=True
        Degree normalisation of the U-step.
    max_iter : int, default=20
    tol : float, default=1e-3
    random_state : int, RandomState or None
    measure : callable, optional
        ``measure(Z, U, eigenvalues, degrees) -> dict`` with at least
        ``objective``; default: the clustering quality (sum of eigenvalues).
    n_threads : int or None
    report : IterationReport, optional
        Receives every outer iteration.
    warn : bool, default=True
        Emit the ConvergenceWarning.
    landmarks : ikdr._nystrom.ClusteringLandmarks or None
        Nystrom landmarks: every U-step is then a Nystrom spectral
        embedding and every W-step a landmark ISM, so the alternation is
        near-linear in n.
    alternative : bool, default=False
        The paradigm must leave out a view visible in X (KDAC with an existing
        clustering that depends on X): the default q stays below d
        (:func:`default_n_components`).
    guided : bool, default=False
        The objective has a second term on W (semi-supervised scores, an
        existing clustering): the default q keeps the floor
        ``min(d, n_clusters)`` (:func:`default_n_components`).

    Returns
    -------
    AlternationResult
    """
    t0 = time.perf_counter()
    affinity = kernel if affinity is None else affinity
    # issue 17: a row-chunked dask X runs on the cluster (ikdr.distributed.ClusteringPasses)
    landmarks = distributed.clustering_side(X, landmarks)
    X = distributed.as_data(X) if distributed.is_distributed(X) else X
    d = X.shape[1]
    embed = spectral_embedding if landmarks is None else landmarks.embed
    points = getattr(landmarks, "points", None)      # the distributed side keeps XW there
    U, vals, deg = embed(X, affinity, n_clusters, random_state=random_state,
                                      n_threads=n_threads, normalize=normalize)
    gamma = build_gamma(U, deg)
    approx = {} if landmarks is None else landmarks.ism_options(X.shape[0])
    if n_components is None:
        phi0 = kernel.phi0(X, gamma) if landmarks is None else landmarks.phi0(X, gamma, kernel)
        q = default_n_components(np.linalg.eigvalsh(phi0), n_clusters, d, alternative=alternative,
                                 guided=guided)
    else:
        q = int(n_components)
    W = None
    history = []
    converged = False
    best: Any = None
    inner = None
    if report is not None and report.verbose >= 2:
        inner = IterationReport("  W-step ISM", report.verbose, stream=report.stream).ism_step
    for it in range(1, max_iter + 1):
        # The inner W-steps skip the Hessian part of the certificate (not stored).
        result = ism(X, gamma, kernel, q, W0=W, max_iter=ISM_MAX_ITER, n_threads=n_threads,
                     random_state=random_state, warn=False, certify=False, callback=inner,
                     **approx)
        W_new = result.components
        q = W_new.shape[1]
        Z = np.ascontiguousarray(X @ W_new, dtype=X.dtype) if points is None else \
            points(X, W_new)
        U_new, vals, deg = embed(Z, affinity, n_clusters, random_state=random_state,
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
        if best is None or entry["objective"] > best[0]:
            best = (entry["objective"], it, W, U, vals, deg)
        if dU < tol and dW < tol:
            converged = True
            break
        gamma = build_gamma(U, deg)
    _, best_it, W, U, vals, deg = best
    if not converged and warn:
        warnings.warn(f"the U/W alternation did not converge in max_iter={max_iter} outer "
                      f"iterations (last changes: U {history[-1]['u_change']:.3g}, "
                      f"W {history[-1]['w_change']:.3g}, tol={tol}); returning the iterate "
                      f"with the highest objective (iteration {best_it})", ConvergenceWarning,
                      stacklevel=2)
    return AlternationResult(components=W, embedding=U, eigenvalues=vals, degrees=deg,
                             best_iteration=best_it, n_iter=len(history), converged=converged,
                             history=history, n_components=q, kernel=kernel, affinity=affinity,
                             time=time.perf_counter() - t0,
                             n_landmarks=None if landmarks is None else landmarks.n_landmarks)


class _AlternatingClustering(ClusterMixin, TransformerMixin, BaseEstimator):
    """Shared parameter constraints, checks, fitted attributes and transform."""

    _parameter_constraints: dict = {
        "n_clusters": [Interval(numbers.Integral, 2, None, closed="left")],
        "n_components": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "kernel": [str, Kernel],
        "sigma": [Interval(numbers.Real, 0, None, closed="neither"),
                  StrOptions({"auto", "median"})],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "tol": [Interval(numbers.Real, 0, None, closed="neither")],
        "affinity": [None, str, Kernel],
        "normalize": [StrOptions({"auto"}), "boolean"],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "dtype": "no_validation",  # checked by check_dtype (float64 or float32 only)
        # checked with the data by ikdr._nystrom.landmark_data (n_landmarks <= n)
        "approximation": "no_validation",
        "n_landmarks": "no_validation",
    }

    def _input(self, X, y=None, **kwargs):
        """Validated (X, y, landmarks): scikit-learn's path, or with ``approximation``
        the landmark path (row blocks: an ``np.memmap`` is never loaded whole) and
        its :class:`ikdr._nystrom.ClusteringLandmarks` (else None). A row-chunked
        ``dask.array.Array`` X stays on its cluster with
        :class:`ikdr.distributed.ClusteringPasses` (docs/distributed.md)."""
        approximation = getattr(self, "approximation", None)
        if distributed.is_distributed(X):
            # issue 17 hook: a row-chunked dask X stays on the cluster
            self._validate_params()
            side = distributed.clustering_side(X, approximation)
            X, y = distributed.validate_data(self, X, y, y_required=False)
            return X, y, side
        if distributed.is_dask_array(y):
            y = y.compute()        # numpy X: the target is gathered, checked with X below
        if approximation is None:
            # data first: scikit-learn's checks expect its own words for bad data; C order so
            # that X @ W (the U-step's points) rounds the same whatever the caller's layout
            if y is None:
                X = validate_data(self, X, dtype=np.float64, order="C", ensure_min_samples=2)
            else:
                X, y = validate_data(self, X, y, dtype=np.float64, order="C",
                                      ensure_min_samples=2, **kwargs)
            check_scale(X)
            self._validate_params()
            return X, y, None
        self._validate_params()
        if approximation != "nystrom":
            raise ValueError(f"approximation must be None or 'nystrom' for {type(self).__name__} "
                             f"(random features serve supervised ISM only), got {approximation!r}")
        X, y = landmark_data(self, X, y, self._landmark_kernel())
        self._dtype = check_dtype(getattr(self, "dtype", np.float64))
        dtype = np.float32 if X.dtype == np.float32 or self._dtype == np.float32 else None
        return X, y, ClusteringLandmarks(self.n_landmarks, dtype=dtype,
                                         random_state=self.random_state)

    def _landmark_kernel(self):
        """The W-step kernel of the landmark path: local scaling has per-point
        bandwidths of all n points, so ``sigma="auto"`` uses the median rule there."""
        auto = isinstance(self.sigma, str) and self.sigma == "auto"
        return make_kernel(self.kernel, sigma="median" if auto else self.sigma)

    def _check_common(self, X, landmarks=None):
        """Validate the data-dependent parameters (the others are checked by
        ``_parameter_constraints`` in :meth:`_input`); return (kernel, affinity,
        n_clusters, q, normalize)."""
        self._dtype = check_dtype(getattr(self, "dtype", np.float64))
        self._max_iter = int(self.max_iter)
        n, d = X.shape
        k = int(self.n_clusters)
        if n <= k:
            raise ValueError(f"n_samples={n} must be larger than n_clusters={k} "
                             "(fewer samples than clusters)")
        q = None if self.n_components is None else check_n_components(self.n_components, d)
        sigma_auto = isinstance(self.sigma, str) and self.sigma == "auto"
        # a fixed bandwidth rule where local scaling is not used (it needs all rows)
        sigma = "median" if sigma_auto else self.sigma
        auto = sigma_auto and landmarks is None
        # the landmark path fits bandwidths on a sample of rows (X may be a memmap)
        fit_on = X if landmarks is None else sample_rows(X, _MEDIAN_SUBSAMPLE, self.random_state)
        if auto and isinstance(self.kernel, str) and self.kernel.lower() == "gaussian":
            kernel = auto_kernel(X, k)
        elif landmarks is not None:
            kernel = self._landmark_kernel().fit(fit_on, random_state=self.random_state)
        else:
            kernel = make_kernel(self.kernel, sigma=sigma).fit(X, random_state=self.random_state)
        gaussian_affinity = isinstance(self.affinity, str) and self.affinity.lower() == "gaussian"
        if self.affinity is None and is_affinity(kernel):
            affinity = kernel
        elif (self.affinity is None or gaussian_affinity) and auto:
            # issue 15: a kernel that is no affinity (polynomial, linear, squared,
            # multiquadric) finds the subspace but cannot cluster XW by itself
            affinity = auto_kernel(X, k)
        elif self.affinity is None:
            affinity = Gaussian(sigma).fit(fit_on, random_state=self.random_state)
        else:
            affinity = make_kernel(self.affinity).fit(fit_on, random_state=self.random_state)
        if isinstance(self.normalize, str):
            normalize = is_affinity(affinity)
        else:
            normalize = bool(self.normalize)
        return kernel, affinity, k, q, normalize

    def _alternate(self, X, kernel, affinity, k, q, normalize, build_gamma=clustering_gamma,
                   measure=None, landmarks=None, alternative=False, guided=False):
        # the landmark passes cast X block by block (a memmap is not copied)
        work = X if landmarks is not None and not distributed.is_distributed(X) else \
            X.astype(self._dtype, copy=False)
        with IterationReport(type(self).__name__, self.verbose, total=self._max_iter) as report:
            out = alternate(work, kernel, k, build_gamma,
                            affinity=affinity, n_components=q, normalize=normalize,
                            max_iter=self._max_iter, tol=self.tol,
                            random_state=self.random_state, measure=measure, report=report,
                            warn=False, landmarks=landmarks, alternative=alternative,
                            guided=guided)
        if not out.converged:
            warnings.warn(f"{type(self).__name__}: the U/W alternation did not converge in "
                          f"max_iter={self._max_iter} outer iterations (last changes: U "
                          f"{out.history[-1]['u_change']:.3g}, W "
                          f"{out.history[-1]['w_change']:.3g}, tol={self.tol}); the iterate "
                          f"with the highest objective (iteration {out.best_iteration}) is "
                          "kept", ConvergenceWarning, stacklevel=3)
        self._store(out, normalize)
        return out

    def _store(self, out, normalize):
        self.components_ = out.components
        self.embedding_ = out.embedding
        self.eigenvalues_ = out.eigenvalues
        self.degrees_ = out.degrees
        self.n_iter_ = out.n_iter
        self.converged_ = out.converged
        self.history_ = out.history
        self.kernel_ = out.kernel
        self.affinity_ = out.affinity
        self.sigma_ = _sigma_of(out.kernel)
        self.normalize_ = normalize
        self.labels_ = njw_labels(out.embedding, self.n_clusters, random_state=self.random_state)
        self.best_iteration_ = out.best_iteration
        self.objective_ = out.objective
        self.quality_ = out.history[self.best_iteration_ - 1]["quality"]
        self.n_landmarks_ = out.n_landmarks
        # equal column weights: the alternation does not keep the W-step's Phi eigenvalues
        self.feature_importances_ = feature_importances(out.components)

    def transform(self, X):
        """Project X onto the learned subspace: ``X @ components_``."""
        check_is_fitted(self)
        if distributed.is_dask_array(X):          # issue 17: a lazy map over row blocks
            return distributed.project(X, self.components_)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return X @ self.components_


_COMMON_PARAMS = r"""
    n_clusters : int
        Number of clusters k (>= 2).
    n_components : int or None, default=None
        q, the dimension of the learned subspace. ``None`` picks q by the
        largest eigengap of :math:`\Phi_0` at the first W-step (dissertation
        Eq. 3.11: the gap between the q-th and (q+1)-th largest eigenvalues),
        but at least ``min(n_clusters, max(2, n_features // 2))`` (SemiSupervisedISM
        and KDAC, whose objectives have a second term on W: at least
        ``min(n_features, n_clusters)``) and at most ``n_features``
        (:func:`ikdr.default_n_components`).
    kernel : str or Kernel, default="gaussian"
        Any ISM kernel or conic combination (:mod:`ikdr.kernels`).
    sigma : float, "auto" or "median", default="auto"
        Bandwidth of ``kernel="gaussian"``. "auto" (chosen from the data
        alone, no labels): local scaling, the relative Gaussian
        :math:`\exp(-\|W^T(x_i - x_j)\|^2 / 2\sigma_i\sigma_j)` with
        :math:`\sigma_i` the distance of :math:`x_i` to its 7th nearest
        neighbour in X, used by both the W-step kernel and the U-step affinity
        (:func:`ikdr.spectral.auto_kernel`: rule, measurements and cost, one
        k-NN query). It raises ValueError when every sample is identical or
        n_samples < 3 x n_clusters. "median": a global Gaussian at the median
        pairwise distance of X (the papers' choice). A float: that global
        bandwidth. All are fixed for the whole run.
    max_iter : int, default=20
        Cap on the outer U/W iterations.
    tol : float, default=1e-3
        Stop when the relative subspace changes of U and W are both below tol.
    affinity : None, str or Kernel, default=None
        Kernel of the U-step (spectral clustering of XW). None: ``kernel``
        itself (the papers' single-kernel objective) when it is an affinity
        (Gaussian, relative Gaussian, even-degree polynomial with c >= 0);
        otherwise (polynomial of odd degree, linear, squared, multiquadric) the
        Gaussian of ``sigma`` ("auto": local scaling, :func:`ikdr.spectral.auto_kernel`):
        such a global kernel finds the subspace in the W-step but cannot
        cluster XW by itself (unsupervised wine, q = 3: polynomial 0.70 -> 0.86,
        linear 0.84 -> 0.90; docs/clustering_defaults.md). ISM keeps ``kernel``
        in the W-step and D comes from the affinity in both steps. A Gaussian
        given by name uses ``sigma`` ("auto": local scaling; else the median
        distance of X). Pass the kernel itself (e.g. ``affinity="linear"``)
        for the single-kernel objective with a non-affinity kernel.
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
    approximation : {None, "nystrom"}, default=None
        "nystrom": U-steps by Nystrom spectral embedding (Fowlkes et al.
        2004: left singular vectors of :math:`HD^{-1/2}CK_{mm}^{+1/2}`,
        :math:`O(nm^2)`) and W-steps by landmark passes (:mod:`ikdr._nystrom`),
        so the whole alternation is near-linear in n; X may be an
        ``np.memmap``. Serves the Gaussian, multiquadric and polynomial
        kernels; ``sigma="auto"`` uses the median rule on this path.
    n_landmarks : "auto" or int, default="auto"
        m. "auto": doubled from 64 at the first U-step until the embedding
        moves by less than 0.01 (``ConvergenceWarning`` at 2,048); the m
        used is ``n_landmarks_``.
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
    objective_ : float
        The paradigm's objective at ``best_iteration_``.
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
    feature_importances_ : ndarray (n_features,)
        Squared row norms of W divided by q (columns weighted equally; sums
        to 1): the weight of each input feature in the learned subspace.
    n_landmarks_ : int or None
        Landmarks used with ``approximation="nystrom"`` (None otherwise).
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
                 kernel: KernelLike = "gaussian", sigma: SigmaLike = "auto", max_iter: int = 20,
                 tol: float = 1e-3, affinity: str | None = None, normalize: str | bool = "auto",
                 random_state: RandomStateLike = None, verbose: int = 0,
                 dtype: DTypeLike = np.float64, approximation: str | None = None,
                 n_landmarks: int | str = "auto") -> None:
        self.approximation = approximation
        self.n_landmarks = n_landmarks
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
        X, _, landmarks = self._input(X)
        kernel, affinity, k, q, normalize = self._check_common(X, landmarks)
        self._alternate(X, kernel, affinity, k, q, normalize, landmarks=landmarks)
        return self


class SemiSupervisedISM(TargetRequiredMixin, _AlternatingClustering):
    _parameter_constraints: dict = {
        **_AlternatingClustering._parameter_constraints,
        "mu": [Interval(numbers.Real, 0, None, closed="left"), StrOptions({"auto"})],
        "score_kernel": [str, Kernel],
    }

    __doc__ = r"""Semi-supervised clustering guided by expert scores (ISM paper, equations 2-3).

    Maximises :math:`\mathrm{Tr}(U^T H D^{-1/2} K_{XW} D^{-1/2} H U) +
    \mu\,\mathrm{Tr}(K_{XW} H K_{\hat Y} H)` over W and U: spectral clustering
    of XW while XW stays dependent on the scores :math:`\hat Y` (n x r). The
    W-step is ISM with :math:`\Gamma = D^{-1/2} H U U^T H D^{-1/2} + \mu H K_{\hat Y} H`
    (factored, :math:`K_{\hat Y} = FF^T` by pivoted Cholesky).

    Scale of ``mu``: the clustering term is at most ``n_clusters`` while the
    score term is :math:`(n-1)^2\,\mathrm{HSIC}(XW, \hat Y)`, so with the
    literal Eq. (2) ``mu = 1`` lets the scores dominate (wine with the first
    principal component as scores: NMI 0.62 against 0.86-0.88 balanced). The
    default ``mu="auto"`` weighs both terms equally at the start (W = I):
    :math:`\mu = \mathrm{CQ}(U_0) / \mathrm{Tr}(K_X H K_{\hat Y} H)`, two
    kernel passes (docs/clustering_defaults.md); the weight used is
    ``mu_``. Both terms are in ``history_`` (``quality`` and ``score_term``).

    Parameters
    ----------""" + _COMMON_PARAMS + r"""
    mu : float or "auto", default="auto"
        Weight of the score term (>= 0). "auto": the two terms weigh the same
        at W = I (see above).
    score_kernel : str or Kernel, default="gaussian"
        Kernel on the scores; "gaussian" uses the median heuristic on them.

    Attributes
    ----------""" + _COMMON_ATTRS + r"""
    mu_ : float
        The weight of the score term used (``mu``, or the "auto" balance).

    References
    ----------
    Wu, Miller, Chang, Sznaier, Dy. Solving Interpretable Kernel Dimension
    Reduction. NeurIPS 2019, Eq. (2)-(3).
    """

    def __init__(self, n_clusters: int = 2, n_components: int | None = None,
                 mu: float | str = "auto",
                 kernel: KernelLike = "gaussian", sigma: SigmaLike = "auto",
                 score_kernel: KernelLike = "gaussian", max_iter: int = 20, tol: float = 1e-3,
                 affinity: str | None = None, normalize: str | bool = "auto",
                 random_state: RandomStateLike = None, verbose: int = 0,
                 dtype: DTypeLike = np.float64, approximation: str | None = None,
                 n_landmarks: int | str = "auto") -> None:
        self.approximation = approximation
        self.n_landmarks = n_landmarks
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
        X, scores, landmarks = self._input(X, scores, multi_output=True, y_numeric=True)
        kernel, affinity, k, q, normalize = self._check_common(X, landmarks)
        scores = np.asarray(scores, dtype=np.float64).reshape(X.shape[0], -1)
        if np.all(np.ptp(scores, axis=0) == 0):
            raise ValueError("scores are constant; they carry no guidance")
        F = kernel_factor(scores, make_kernel(self.score_kernel), random_state=self.random_state)
        Fc = centered(F)
        weight = {}

        def build(U, deg):
            if "mu" not in weight:          # the first U-step (W = I) sets mu="auto"
                weight["mu"] = self._score_weight(X, affinity, U, deg, Fc, landmarks)
            return semi_supervised_gamma(U, deg, F, weight["mu"])

        def measure(Z, U, vals, deg):
            score_term = quadratic_trace(Z, affinity, Fc, landmarks=landmarks)
            quality = float(np.sum(vals))
            return {"score_term": score_term, "objective": quality + weight["mu"] * score_term}

        self._alternate(X, kernel, affinity, k, q, normalize, build, measure, landmarks=landmarks,
                        guided=True)
        self.mu_ = weight["mu"]
        return self

    def _score_weight(self, X, affinity, U, deg, Fc, landmarks):
        r"""``mu``, or for "auto" :math:`\mathrm{CQ}(U_0)/\mathrm{Tr}(\bar F^T K_X \bar F)`:
        the clustering and score terms of the objective weigh the same at W = I."""
        if not (isinstance(self.mu, str) and self.mu == "auto"):
            return float(self.mu)
        points = getattr(landmarks, "points", None)
        Z = X if points is None else points(X, np.eye(X.shape[1]))
        clustering = quadratic_trace(Z, affinity, clustering_gamma(U, deg).factor,
                                     landmarks=landmarks)
        score = quadratic_trace(Z, affinity, Fc, landmarks=landmarks)
        return float(clustering / score) if score > 0 and clustering > 0 else 1.0
