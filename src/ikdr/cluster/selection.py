r"""The clustering estimators' ``strategy="select"``: starts and W-steps ranked by a
label-free criterion.

1. **Starts**, each a partition of the rows of X (for sparse or wide X, of its
   projection on its leading singular vectors, :func:`selection_points`):
   k-means (``n_init=10``), spectral clustering on the symmetric 10-NN graph
   (as scikit-learn's ``SpectralClustering(affinity="nearest_neighbors")``,
   :func:`ikdr.cluster.neighbors.graph_embedding`), spectral clustering with
   the local-scaling affinity (:func:`ikdr.spectral.auto_kernel`; up to
   :data:`LOCAL_START_MAX_N` rows), and the graph and local starts on the
   features :func:`ikdr.cluster.screen.screen_features` takes, when it takes a
   few of X's own columns (the screen does not read a projection).
2. **Criterion.** Every start is judged on the same footing, every feature of
   the points (or, when every feature's local affinity holds no k clusters at
   all and the screen was taken, every screened feature), by :class:`ikdr.cluster.criterion.PartitionCriterion` (the
   multi-graph cut over the compactness); :func:`ikdr.cluster.criterion.choose`
   keeps the best.
3. **W-steps.** From the chosen start, ISM's alternation: a W-step (ISM on the
   paradigm's :math:`\Gamma(U, D)` with the local-scaling kernel, on at most
   :data:`W_STEP_ROWS` rows of an unguided fit), then the U-step of the start's
   kind on XW (k-means, the 10-NN graph, or the local affinity, on every row).
   An iterate is kept only while the criterion prefers it (a guided paradigm
   also accepts a criterion at most :data:`GUIDED_TOLERANCE` higher when its
   own objective rises); the first that it does not prefer, a change of the
   embedding below ``tol`` (a guided run: also a relative rise of its objective
   below ``tol``) or ``max_iter`` W-steps end the run.
4. **W.** The kept iterate's W, or, when no W-step was kept, the first
   W-step's: the q-dimensional subspace in which ISM's kernel best matches
   the chosen clusters (its ``feature_importances_``).

q is the paradigm's default (:func:`ikdr.cluster.alternation.default_n_components`)
on the start's clustering term unless given; with q equal to the number of
features no W-step can change the clusters (W is a rotation and every U-step
depends on distances only), so none is run and W is the identity.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Callable, Optional

import numpy as np
import scipy.sparse as sp
from sklearn.cluster import KMeans
from sklearn.utils import check_random_state

from .._config import fits_memory, one_thread
from .._utils.sparse import start_basis
from .._utils.subspace import subspace_change
from ..gamma import centered, clustering_gamma
from ..kernels import Kernel
from ..passes import resolve_clustering
from ..solver.driver import solve_ism
from ..spectral import (DENSE_MAX_N, START_TOL, affinity_embedding, auto_kernel,
                        dense_step_bytes, njw_labels, spectral_embedding)
from .alternation import AlternationOptions, default_n_components
from .criterion import Assessment, PartitionCriterion, choose
from .neighbors import GRAPH_NEIGHBORS, graph_embedding, nearest_neighbors, neighbor_graph
from .screen import no_structure, screen_candidates, screen_taken

__all__ = ["Candidate", "Selection", "Starts", "scored_starts", "graph_start", "kernel_start",
           "kmeans_start", "selection_points", "GUIDED_TOLERANCE", "LOCAL_START_MAX_N",
           "W_STEP_ROWS", "SELECTION_MAX_FEATURES", "SELECTION_COMPONENTS"]

#: ISM iterations of one W-step: its W need not be exact, the criterion judges the
#: clusters it leads to (the same clusters and criterion to 1e-3 after 3 on every set
#: of ``benchmarks/bench_clustering_quality.py``)
W_STEP_MAX_ITER = 3
#: a guided paradigm (expert scores, an existing clustering) keeps an iterate whose
#: criterion (a log) is at most this much higher when its own objective rises, its
#: cut over compactness at most 1.65 times the best's: its guidance may choose among
#: clusterings the data hold about equally well (two axes of four blobs differ by 0.45)
GUIDED_TOLERANCE = 0.5
#: rows above which the local-scaling start is left out: its spectral problem is n x n
#: (fused products, never formed), and above this size k-means and the 10-NN graph
#: are the starts the field runs (``benchmarks/bench_clustering_real.py --scaling``)
LOCAL_START_MAX_N = 10000
#: rows an unguided W-step's ISM solves on at most (a fixed sample above): W is a
#: d x q subspace that a few thousand rows determine; the U-step runs on every row
W_STEP_ROWS = 4000
#: features above which (and for any sparse X) the selection clusters X projected on
#: its :data:`SELECTION_COMPONENTS` leading right singular vectors, as the field's
#: PCA-then-cluster pipelines do: neighbor graphs and k-means on thousands of
#: sparse or noisy columns see the noise (TF-IDF, expression)
SELECTION_MAX_FEATURES = 100
SELECTION_COMPONENTS = 50


def selection_points(X, random_state=None):
    """(points, basis): the rows the selection clusters and the d x r orthonormal basis
    they are X's coordinates in (``points = X @ basis``; None when the points are X).

    X with at most :data:`SELECTION_MAX_FEATURES` features is its own points (made
    dense when sparse); wider X is projected on its :data:`SELECTION_COMPONENTS` leading right
    singular vectors (:func:`ikdr._utils.sparse.start_basis`, no centering: O(nnz r)
    per iteration for sparse X, never formed densely)."""
    if X.shape[1] <= SELECTION_MAX_FEATURES:      # (sparse X: its dense form is as small)
        dense = X.toarray() if sp.issparse(X) else X
        return np.ascontiguousarray(dense, dtype=np.float64), None
    basis = start_basis(X, min(SELECTION_COMPONENTS, min(X.shape) - 1),
                        random_state=random_state)
    points = X @ basis
    return np.ascontiguousarray(np.asarray(points), dtype=np.float64), basis


@dataclass
class Candidate:
    """One clustering the criterion ranks (a start or a W-step's iterate).

    ``kind`` is the U-step: "kmeans", "graph" (the 10-NN graph) or "kernel" (the
    local-scaling affinity). ``embedding`` is U (n x k, orthonormal), with its
    ``eigenvalues`` in the W-step kernel's normalised affinity and that kernel's
    ``degrees`` (None until :func:`with_spectra` for a k-means or graph start);
    ``columns`` are the features of its view (None: all); ``components`` is W on
    the view's features (None for a start, which uses every feature of the view).
    """

    name: str
    kind: str
    labels: np.ndarray = field(repr=False)
    embedding: np.ndarray = field(repr=False)
    eigenvalues: Optional[np.ndarray] = field(repr=False)
    degrees: Optional[np.ndarray] = field(repr=False)
    columns: Optional[np.ndarray] = field(default=None, repr=False)
    components: Optional[np.ndarray] = field(default=None, repr=False)
    assessment: Optional[Assessment] = None
    affinity: Optional[Kernel] = field(default=None, repr=False)

    @property
    def criterion(self) -> float:
        """The criterion of its labels (inf before it is judged)."""
        return np.inf if self.assessment is None else self.assessment.criterion


@dataclass
class Selection:
    """What ``strategy="select"`` chose: the kept candidate, W (with the eigenvalues of
    Phi belonging to its columns, None when no W-step ran) and the record of every
    candidate; ``converged``: the run ended by the criterion, ``tol`` or no W-step
    being able to move, not by ``max_iter``."""

    chosen: Candidate
    components: np.ndarray
    kernel: Kernel
    candidates: list = field(default_factory=list)
    history: list = field(default_factory=list)
    n_components: int = 0
    time: float = 0.0
    eigenvalues: Optional[np.ndarray] = field(default=None, repr=False)
    converged: bool = True


def _partition_embedding(labels, n_clusters):
    """Orthonormal basis of the centered indicators of a partition (n x k): the U of its
    clusters. k clusters span k - 1 centered directions (their indicators sum to the
    constant), so the k-th column, and one for each empty cluster, is zero."""
    Y = np.zeros((labels.shape[0], int(n_clusters)))
    Y[np.arange(labels.shape[0]), labels] = 1.0
    U, s, _ = np.linalg.svd(centered(Y), full_matrices=False)
    U[:, s <= 1e-10 * max(s.max(), 1e-300)] = 0.0
    return np.ascontiguousarray(U)


def _in_kernel(Z, kernel, U, n_threads=None):
    r"""Eigenvalues and degrees of a partition's U in the kernel's normalised affinity:
    :math:`\mathrm{diag}(U^T H D^{-1/2} K D^{-1/2} H U)`, :math:`D = \mathrm{diag}(K1)`
    (two fused passes; their sum is the clustering quality CQ)."""
    deg = kernel.degrees(Z, n_threads=n_threads)
    R = np.ascontiguousarray(centered(U) / np.sqrt(deg)[:, None])
    KR, _ = kernel.product(Z, R, n_threads=n_threads)
    return np.sort(np.sum(R * KR, axis=0))[::-1], deg


def kmeans_u_step(Z, n_clusters, *, random_state=None):
    """Labels and U of k-means on Z (``n_init=10``; U: the partition's indicators).

    On one thread: its OpenMP threads and the kernel passes' own contend for the
    cores, and k-means of a few thousand rows is light (``spectral.one_thread``)."""
    with one_thread():
        labels = KMeans(n_clusters=int(n_clusters), n_init=10,
                        random_state=random_state).fit(Z).labels_
    return labels, _partition_embedding(labels, n_clusters)


def graph_u_step(Z, n_clusters, *, random_state=None, neighbors=None):
    """Labels and U of the 10-NN graph's spectral clustering of Z (U: the partition's
    indicators)."""
    if neighbors is None:
        neighbors = nearest_neighbors(Z, GRAPH_NEIGHBORS)
    labels, _ = graph_embedding(neighbor_graph(neighbors[1], GRAPH_NEIGHBORS), n_clusters,
                                random_state=random_state)
    return labels, _partition_embedding(labels, n_clusters)


def kernel_u_step(Z, affinity, n_clusters, *, random_state=None, U0=None, K=None,
                  n_threads=None):
    """Labels, U, eigenvalues and degrees of the dense affinity's spectral clustering of Z
    (``K``: the affinity's matrix on Z when already formed; it is overwritten)."""
    if K is not None:
        U, vals, deg = affinity_embedding(K, n_clusters, U0=U0, random_state=random_state,
                                          lanczos=True, tol=START_TOL)
    else:
        U, vals, deg = spectral_embedding(Z, affinity, n_clusters, random_state=random_state,
                                          U0=U0, n_threads=n_threads)
    return njw_labels(U, n_clusters, random_state=random_state), U, vals, deg


def kmeans_start(Z, n_clusters, *, columns=None, random_state=None):
    """The start by k-means on Z (a view of X: ``columns``)."""
    labels, U = kmeans_u_step(Z, n_clusters, random_state=random_state)
    return Candidate("kmeans" if columns is None else "screened kmeans", "kmeans", labels, U,
                     None, None, columns)


def graph_start(Z, n_clusters, neighbors, *, columns=None, random_state=None):
    """The start by the 10-NN graph of Z (a view of X: ``columns``)."""
    labels, U = graph_u_step(Z, n_clusters, random_state=random_state, neighbors=neighbors)
    return Candidate("graph" if columns is None else "screened graph", "graph", labels, U,
                     None, None, columns)


def kernel_start(Z, n_clusters, kernel, *, columns=None, K=None, random_state=None,
                 n_threads=None):
    """The start by the local-scaling affinity of Z (``kernel``, fitted on Z; ``K``: its
    matrix when formed, overwritten)."""
    labels, U, vals, deg = kernel_u_step(Z, kernel, n_clusters, random_state=random_state,
                                         K=K, n_threads=n_threads)
    name = "kernel" if columns is None else "screened kernel"
    return Candidate(name, "kernel", labels, U, vals, deg, columns, affinity=kernel)


def with_spectra(candidate, Z, kernel, n_threads=None):
    """The candidate with its U's eigenvalues and degrees in ``kernel`` on its view Z
    (two fused passes; a kernel start has them already)."""
    if candidate.eigenvalues is None:
        vals, deg = _in_kernel(Z, kernel, candidate.embedding, n_threads)
        candidate = replace(candidate, eigenvalues=vals, degrees=deg)
    return candidate


def _local_matrix(Z, kernel, n_threads=None):
    """The local affinity's n x n matrix on Z when the dense U-step would form it."""
    n = Z.shape[0]
    if n <= DENSE_MAX_N and fits_memory(dense_step_bytes(n)):
        return kernel.matrix(Z, n_threads=n_threads).astype(np.float64, copy=False)
    return None


@dataclass
class Starts:
    """The judged starts of a selection (module steps 1 and 2): the candidates, the
    criterion that judged them, the local-scaling kernel of each view (None: every
    feature, "screened") and the screen's columns and scores."""

    candidates: list
    criterion: PartitionCriterion
    kernels: dict
    columns: Optional[np.ndarray]
    feature_scores: Optional[np.ndarray]


def scored_starts(X, n_clusters, kernel, *, screen=True, local_start=True, random_state=None,
                  n_threads=None):
    """The starts on the points X (see the module) and, when the feature screen is
    taken, on the screened features, every one judged on every feature of X.

    ``kernel``: the local-scaling kernel of X. The screen
    (:func:`ikdr.cluster.screen.screen_features`) is taken when its local start's
    spectral gap beats the all-feature local start's by the screen's margin.
    ``local_start=False`` leaves out the local-scaling start unless the screen
    needs it (KNet's rounding asks for it only where its own start is fragmented).
    """
    X = np.ascontiguousarray(X)
    n, k = X.shape[0], int(n_clusters)
    options = {"random_state": random_state}
    neighbors = nearest_neighbors(X, GRAPH_NEIGHBORS)
    candidates = [kmeans_start(X, k, **options), graph_start(X, k, neighbors, **options)]
    kernels = {None: kernel}
    columns, scores = (None, None)
    local = n <= LOCAL_START_MAX_N and (local_start or screen)
    K = _local_matrix(X, kernel, n_threads) if local else None   # the start's and a judge's
    if local:
        candidates.append(kernel_start(X, k, kernel, K=None if K is None else K.copy(),
                                       n_threads=n_threads, **options))
        if screen and X.shape[1] > 2:
            columns, scores = screen_candidates(X, random_state=random_state)
    if columns is not None:
        Z = np.ascontiguousarray(X[:, columns])
        screened_kernel = auto_kernel(Z, k)
        screened = kernel_start(Z, k, screened_kernel, columns=columns,
                                K=_local_matrix(Z, screened_kernel, n_threads),
                                n_threads=n_threads, **options)
        if screen_taken(candidates[-1].eigenvalues, screened.eigenvalues):
            near = nearest_neighbors(Z, GRAPH_NEIGHBORS)
            candidates += [graph_start(Z, k, near, columns=columns, **options), screened]
            kernels["screened"] = screened_kernel
        else:
            columns = None
    # every candidate on one footing: every feature, or, where every feature's local
    # affinity holds no k clusters at all (the noise features drown the few that
    # cluster), the screened features
    judged_on = X
    if columns is not None and no_structure(candidates[2].eigenvalues):
        judged_on = np.ascontiguousarray(X[:, columns])
    criterion = PartitionCriterion(judged_on, k, random_state=random_state, n_threads=n_threads,
                                   local_matrix=K if judged_on is X else None)
    for c, judged in zip(candidates, criterion.assess([c.labels for c in candidates])):
        c.assessment = judged
    return Starts(candidates, criterion, kernels, columns, scores)


def _accepts(new, best, guided, objective_rose):
    """Whether a W-step's iterate replaces the best so far (see the module): for a
    guided paradigm whose objective rose, an admissible one with a criterion at most
    :data:`GUIDED_TOLERANCE` worse; otherwise the criterion's preference
    (:func:`ikdr.cluster.criterion.choose`; ties keep the best so far)."""
    if guided and objective_rose and new.assessment.admissible and \
            new.criterion <= best.criterion + GUIDED_TOLERANCE:
        return True
    return choose([best.assessment, new.assessment]) == 1 and \
        new.assessment != best.assessment


class WStepRun:
    """The fixed parts of one run of W-steps: the start's view of X, its varying features
    (W is zero on constant ones, which no kernel sees), the rows the W-steps solve on,
    the provider, the paradigm and the settings (an
    :class:`ikdr.cluster.alternation.AlternationOptions`)."""

    def __init__(self, X, start, kernel, build_gamma, measure, dtype, options):
        Z = np.ascontiguousarray(X if start.columns is None else X[:, start.columns])
        self.n_features = Z.shape[1]
        self.varying = np.flatnonzero(np.ptp(Z, axis=0) > 0)
        self.Z = np.ascontiguousarray(Z[:, self.varying])
        n = self.Z.shape[0]
        # a guided paradigm's Gamma holds n x n guidance (scores, an existing
        # clustering): it solves on every row
        self.rows = None
        if n > W_STEP_ROWS and not options.guided:
            rng = check_random_state(options.random_state)
            self.rows = np.sort(rng.choice(n, W_STEP_ROWS, replace=False))
        solve_on = self.Z if self.rows is None else np.ascontiguousarray(self.Z[self.rows])
        self.side = resolve_clustering(solve_on, None, dtype=dtype)
        self.work = solve_on if dtype is None else self.side.working_data(solve_on, dtype)
        self.start, self.kernel = start, kernel
        # the local scales of the rows solved on (the kernel's own belong to all n)
        self.solve_kernel = kernel if self.rows is None else \
            auto_kernel(solve_on, start.embedding.shape[1])
        self.build_gamma, self.measure = build_gamma, measure
        self.options = options

    def gamma(self, candidate):
        """The paradigm's Gamma of a candidate on the rows the W-steps solve on."""
        if self.rows is None:
            return self.build_gamma(candidate.embedding, candidate.degrees)
        return self.build_gamma(candidate.embedding[self.rows], candidate.degrees[self.rows])

    def terms(self, points, c):
        """The history entry's objective terms of a candidate on its points."""
        out = {"quality": float(np.sum(c.eigenvalues))}
        out.update(self.measure(points, c.embedding, c.eigenvalues, c.degrees) if self.measure
                   else {"objective": out["quality"]})
        out["cost"] = -out["objective"]
        return out

    def on_view(self, W):
        """W (varying features x q) on all the view's features, zero on the constant ones."""
        full = np.zeros((self.n_features, W.shape[1]))
        full[self.varying] = W
        return full

    def u_step(self, ZW, best, name, step_W):
        """The U-step of the start's kind on XW: a new candidate (not yet judged)."""
        o, k = self.options, best.embedding.shape[1]
        if self.start.kind == "kernel":
            labels, U, vals, deg = kernel_u_step(ZW, self.start.affinity, k,
                                                 random_state=o.random_state,
                                                 U0=best.embedding, n_threads=o.n_threads)
        else:
            labels, U = (kmeans_u_step(ZW, k, random_state=o.random_state)
                         if self.start.kind == "kmeans" else
                         graph_u_step(ZW, k, random_state=o.random_state))
            vals, deg = _in_kernel(ZW, self.kernel, U, o.n_threads)
        return Candidate(name, self.start.kind, labels, U, vals, deg, self.start.columns,
                         self.on_view(step_W), affinity=self.start.affinity)

    def w_step(self, gamma, ism_options, W):
        """One W-step: ISM on the paradigm's Gamma with ``ism_options`` from W."""
        return solve_ism(self.side.w_step_provider(self.work.shape[0]), self.work, gamma,
                         self.solve_kernel, ism_options, W0=W)


def refine(X, start, kernel, criterion, build_gamma, options: AlternationOptions, *,
           measure: Callable[..., dict] | None = None, dtype=None) -> Selection:
    """W-steps from ``start`` while the criterion prefers their iterates (see the module).

    ``kernel``: the W-step kernel, fitted on the start's view of X; ``criterion``:
    the :class:`~ikdr.cluster.criterion.PartitionCriterion` that judged the starts;
    ``build_gamma(U, degrees)``: the paradigm; ``options``: the settings
    (:class:`ikdr.cluster.alternation.AlternationOptions`: q, at most
    ``max_iter`` W-steps, ``tol`` on the embedding's change, ``normalize`` (False:
    D = I in Gamma), ``guided`` when the paradigm has a second term on W, the
    report); ``measure(Z, U, eigenvalues, degrees)``: the paradigm's objective
    terms (default: the quality, the sum of the eigenvalues); ``dtype``: the
    W-steps' working precision.
    """
    t0 = time.perf_counter()
    Xv = np.ascontiguousarray(X if start.columns is None else X[:, start.columns])
    start = with_spectra(start, Xv, kernel, options.n_threads)
    if not options.normalize:       # D = I: the paradigm's Gamma without the degrees
        start = replace(start, degrees=np.ones_like(start.degrees))
    run = WStepRun(X, start, kernel, build_gamma, measure, dtype, options)
    k = start.embedding.shape[1]
    d = run.Z.shape[1]
    best = start
    gamma = run.gamma(start)
    best_terms = run.terms(run.Z, start)
    history = [{"iteration": 0, "candidate": start.name, "criterion": start.criterion,
                "accepted": True, "ism_iterations": 0, **best_terms,
                "time": time.perf_counter() - t0}]
    q = options.n_components
    if q is None:
        # the dimension the start's clusters need: the eigengap of Phi_0 of the
        # clustering term alone (a paradigm's second term, signed for KDAC, can put
        # it near d: text, q = 569 of 570)
        cluster_term = clustering_gamma(*((start.embedding, start.degrees) if run.rows is None
                                          else (start.embedding[run.rows],
                                                start.degrees[run.rows])))
        phi0 = run.side.phi0(run.work, cluster_term, run.solve_kernel)
        q = default_n_components(np.linalg.eigvalsh(phi0), k, d, guided=options.guided)
    q = int(min(q, d))
    # short W-steps by the papers' rule: the criterion judges the clusters they lead to
    ism_options = options.w_step(q, W_STEP_MAX_ITER, run.side.phi_solver)
    candidates, W, explain = [start], None, None
    weights: dict[Optional[str], np.ndarray] = {}   # Phi's eigenvalues of each W-step's W
    converged = q >= d
    for step in range(1, options.max_iter + 1 if q < d else 1):
        result = run.w_step(gamma, ism_options, W)
        ZW = np.ascontiguousarray(run.Z @ result.components)
        name = f"{start.name} + {step} W-step{'s' if step > 1 else ''}"
        new = run.u_step(ZW, best, name, result.components)
        if not options.normalize:
            new = replace(new, degrees=np.ones_like(new.degrees))
        new.assessment = criterion.assess([new.labels])[0]
        explain = result.components if explain is None else explain
        weights.setdefault(None, result.eigenvalues)
        weights[new.name] = result.eigenvalues
        terms = run.terms(ZW, new)
        accepted = _accepts(new, best, options.guided,
                            terms["objective"] > best_terms["objective"])
        u_change = subspace_change(best.embedding, new.embedding)
        history.append({"iteration": step, "candidate": new.name, "criterion": new.criterion,
                        "accepted": accepted, "ism_iterations": result.n_iter,
                        "ism_converged": result.converged, "u_change": u_change,
                        "w_change": np.inf if W is None else subspace_change(W, result.components),
                        **terms, "time": time.perf_counter() - t0})
        candidates.append(new)
        if options.report is not None:
            options.report(step, terms["objective"], u_change, quality=terms["quality"],
                           ism_iter=result.n_iter)
        if not accepted:
            converged = True
            break
        rise = terms["objective"] - best_terms["objective"]
        best, best_terms, W = new, terms, result.components
        gamma = run.gamma(new)
        # settled: the embedding barely moved, or (a guided run, which may keep
        # iterates the criterion does not prefer) its objective barely rose
        if u_change < options.tol or (options.guided and
                                      rise <= options.tol * abs(terms["objective"])):
            converged = True
            break
    phi: Optional[np.ndarray] = weights.get(best.name if best.components is not None else None)
    if best.components is not None:
        view = best.components
    else:                           # the first W-step's, or no W-step can move (q = d)
        view = run.on_view(np.eye(d) if explain is None else explain)
    return Selection(chosen=best, components=view, kernel=kernel, candidates=candidates,
                     history=history, n_components=view.shape[1],
                     time=time.perf_counter() - t0, eigenvalues=phi, converged=converged)
