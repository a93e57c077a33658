r"""Clustering paradigms of ISM: W and a spectral embedding U learned together.

Every paradigm here is a Gamma builder plus the shared U-step
(:func:`ikdr.spectral.spectral_embedding`); the W-step is always the one
ISM solver (:func:`ikdr.ism`) with D held fixed inside the step
(docs/guide/paradigms.md). The alternation:

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

import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .._utils.eig import check_eigen_solver, gap_spectrum
from .._utils.progress import IterationReport
from .._utils.subspace import subspace_change
from .._utils.typing import ArrayLike, RandomStateLike
from ..gamma import Gamma, clustering_gamma
from ..kernels import Kernel
from ..passes import resolve_clustering
from ..solver.driver import choose_n_components, solve_ism
from ..solver.options import ISMOptions

__all__ = ["AlternationOptions", "AlternationResult", "alternate", "default_n_components",
           "ISM_MAX_ITER"]

#: cap on the ISM iterations of one W-step (the authors' code uses 10-20);
#: warm-started steps usually converge in 1-3, the outer loop does the rest
ISM_MAX_ITER = 20


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
    clustering is visible in X, see :func:`ikdr.cluster.kdac.existing_dependence`)
    keeps the eigengap's q below d: a subspace that spans every direction
    cannot leave out the existing clustering's view.
    """
    q = choose_n_components(np.asarray(phi0_eigenvalues), minimum=1)
    if alternative:
        return int(min(q, max(1, n_features - 1)))
    floor = int(n_clusters) if guided else min(int(n_clusters), max(2, int(n_features) // 2))
    return int(min(n_features, max(q, floor)))


@dataclass(frozen=True)
class AlternationOptions:
    """Settings of one U/W alternation (see :func:`alternate` for each), made and checked once.

    :func:`alternate` and the clustering estimators build one; the loop
    (:func:`alternate_on`, the selection's :func:`ikdr.cluster.selection.refine`)
    receives it and checks nothing again. A run that needs other settings (its own
    q, its progress report, a guided paradigm) derives them with
    :func:`dataclasses.replace`, which checks the new values the same way.

    Parameters
    ----------
    n_clusters : int
    n_components : int or None, default=None
        q; None: :func:`default_n_components` at the first W-step.
    normalize : bool, default=True
    max_iter : int, default=20
        Outer iterations (W-steps) at most.
    tol : float, default=1e-3
    random_state : int, RandomState or None, default=None
    n_threads : int or None, default=None
    warn : bool, default=True
    alternative : bool, default=False
    guided : bool, default=False
    eigen_solver : {"auto", "lapack", "power", "cpm"}, default="auto"
    report : IterationReport or None, default=None
        Receives every outer iteration; at ``verbose >= 2`` the W-steps' ISM
        iterations too.

    Raises
    ------
    ValueError
        When a value is out of range.
    """

    n_clusters: int
    n_components: int | None = None
    normalize: bool = True
    max_iter: int = 20
    tol: float = 1e-3
    random_state: RandomStateLike = None
    n_threads: int | None = None
    warn: bool = True
    alternative: bool = False
    guided: bool = False
    eigen_solver: str = "auto"
    report: IterationReport | None = None

    def __post_init__(self) -> None:
        if int(self.n_clusters) < 1:
            raise ValueError(f"n_clusters must be >= 1, got {self.n_clusters}")
        if int(self.max_iter) < 1:
            raise ValueError(f"max_iter must be >= 1, got {self.max_iter}")
        if not (self.tol > 0):
            raise ValueError(f"tol must be positive, got {self.tol}")
        check_eigen_solver(self.eigen_solver)
        # frozen: the normalised values are set through object.__setattr__
        object.__setattr__(self, "n_clusters", int(self.n_clusters))
        object.__setattr__(self, "max_iter", int(self.max_iter))
        object.__setattr__(self, "normalize", bool(self.normalize))
        if self.n_components is not None:
            object.__setattr__(self, "n_components", int(self.n_components))

    def w_step(self, n_components: int, max_iter: int, phi_solver: str) -> ISMOptions:
        """The options of the W-steps' ISM: q columns, at most ``max_iter`` iterations
        by the papers' eigenvalue rule, no certificate (its Hessian part is not
        stored) and no warnings (the outer loop judges)."""
        callback = None
        if self.report is not None and self.report.verbose >= 2:
            callback = IterationReport("  W-step ISM", self.report.verbose,
                                       stream=self.report.stream).ism_step
        return ISMOptions(n_components=n_components, criterion="eigenvalues",
                          max_iter=max_iter, certify=False, warn=False,
                          eigen_solver=self.eigen_solver, phi_solver=phi_solver,
                          callback=callback, n_threads=self.n_threads,
                          random_state=self.random_state)


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
              affinity: Kernel | None = None, measure: Callable[..., Any] | None = None,
              landmarks: Any = None, start: np.ndarray | None = None,
              options: AlternationOptions | None = None,
              **settings: Any) -> AlternationResult:
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

    The settings are an :class:`AlternationOptions`, given as ``options`` or as
    keywords (``n_components=2, max_iter=5``, ...), one or the other: each is
    listed below.

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
    options : AlternationOptions or None
        All the settings below at once (its ``n_clusters`` must be ``n_clusters``).
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
    landmarks : ikdr.passes.landmark_clustering.ClusteringLandmarks or None
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
    start : ndarray (d, r) or None
        The first U-step clusters X @ start instead of X (W = I); the first
        W-step still starts from :math:`\Phi_0` of that U (KDAC's feature
        start, :func:`ikdr.cluster.kdac.feature_start`).
    eigen_solver : {"auto", "lapack", "power", "cpm"}, default="auto"
        The W-steps' eigensolver for a dense :math:`\Phi` (:func:`ikdr.ism`).

    Returns
    -------
    AlternationResult

    Raises
    ------
    ValueError
        A setting out of range, checked once before any work
        (:class:`AlternationOptions`).
    """
    if options is None:
        # an unknown keyword is a TypeError naming it, a bad value a ValueError
        options = AlternationOptions(n_clusters, **settings)
    elif settings:
        raise TypeError(f"alternate: pass the settings as options or as keywords, not both "
                        f"(got options and {sorted(settings)})")
    elif options.n_clusters != n_clusters:
        raise ValueError(f"alternate: n_clusters={n_clusters} but options.n_clusters="
                         f"{options.n_clusters}")
    side = resolve_clustering(X, landmarks)
    return alternate_on(side, X, kernel, options, build_gamma, affinity=affinity,
                        measure=measure, start=start, stacklevel=3)


def alternate_on(side, X, kernel, options, build_gamma=clustering_gamma, *, affinity=None,
                 measure=None, start=None, stacklevel=2):
    r""":func:`alternate` on a resolved clustering side (``side``: the exact,
    landmark or Dask side of :func:`ikdr.passes.resolve_clustering`) with the
    settings ``options`` (an :class:`AlternationOptions`). The loop sees the
    data only through the side: its U-step (``embed``), the points XW
    (``points``), the W-step's provider (``w_step_provider``) and
    :math:`\Phi_0` (``phi0``). See :func:`alternate` for the parameters."""
    t0 = time.perf_counter()
    o = options
    n_clusters, random_state, n_threads = o.n_clusters, o.random_state, o.n_threads
    affinity = kernel if affinity is None else affinity
    X = side.prepare(X)
    d = X.shape[1]
    first = X if start is None else side.points(X, np.asarray(start, dtype=np.float64))
    U, vals, deg = side.embed(first, affinity, n_clusters, random_state=random_state,
                              n_threads=n_threads, normalize=o.normalize)
    gamma = build_gamma(U, deg)
    provider = side.w_step_provider(X.shape[0])
    if o.n_components is None:
        phi0 = side.phi0(X, gamma, kernel)
        # Phi_0 of sparse X with many features is an operator: its leading eigenvalues
        q = default_n_components(gap_spectrum(phi0, o.n_clusters), o.n_clusters, d,
                                 alternative=o.alternative, guided=o.guided)
    else:
        q = o.n_components
    W = None
    history = []
    converged = False
    best: Any = None
    w_step = o.w_step(q, ISM_MAX_ITER, side.phi_solver)
    for it in range(1, o.max_iter + 1):
        result = solve_ism(provider, X, gamma, kernel, w_step, W0=W)
        W_new = result.components
        q = W_new.shape[1]
        Z = side.points(X, W_new)
        U_new, vals, deg = side.embed(Z, affinity, n_clusters, random_state=random_state,
                                      n_threads=n_threads, normalize=o.normalize, U0=U)
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
        if o.report is not None:
            o.report(it, entry["objective"], max(dU, dW), quality=entry["quality"],
                     ism_iter=result.n_iter)
        if best is None or entry["objective"] > best[0]:
            best = (entry["objective"], it, W, U, vals, deg)
        if dU < o.tol and dW < o.tol:
            converged = True
            break
        gamma = build_gamma(U, deg)
    _, best_it, W, U, vals, deg = best
    if not converged and o.warn:
        warnings.warn(f"the U/W alternation did not converge in max_iter={o.max_iter} outer "
                      f"iterations (last changes: U {history[-1]['u_change']:.3g}, "
                      f"W {history[-1]['w_change']:.3g}, tol={o.tol}); returning the iterate "
                      f"with the highest objective (iteration {best_it})", ConvergenceWarning,
                      stacklevel=stacklevel)
    return AlternationResult(components=W, embedding=U, eigenvalues=vals, degrees=deg,
                             best_iteration=best_it, n_iter=len(history), converged=converged,
                             history=history, n_components=q, kernel=kernel, affinity=affinity,
                             time=time.perf_counter() - t0,
                             n_landmarks=side.n_landmarks)
