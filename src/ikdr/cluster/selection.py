r"""The clustering estimators' default fit: starts and W-steps ranked by a label-free criterion.

1. **Starts.** Spectral clustering of X two ways: on the symmetric 10-NN
   graph, as scikit-learn's ``SpectralClustering(affinity="nearest_neighbors")``
   (:func:`ikdr.cluster.neighbours.graph_embedding`), and with the dense local-scaling
   affinity (:func:`ikdr.spectral.auto_kernel`, the U-step of the papers with
   the data-driven bandwidth); the same two on the screened features when
   :func:`ikdr.cluster.screen.screen_features` takes a few.
2. **Criterion.** Each start is scored by the multi-graph normalised cut
   (:class:`ikdr.cluster.criterion.PartitionCriterion`); the lowest wins.
3. **W-steps.** From the winning start, ISM's alternation: a W-step (ISM on
   the paradigm's :math:`\Gamma(U, D)` with the local-scaling kernel), then the
   U-step of the start's kind on XW (the 10-NN graph of XW, or the local
   affinity on XW). An iterate is kept only while it lowers the criterion
   (a guided paradigm also accepts a cut at most :data:`GUIDED_TOLERANCE`
   higher when its own objective rises); the first that does not ends the
   run.
4. **W.** The kept iterate's W, or, when no W-step was kept, the first
   W-step's: the q-dimensional subspace in which ISM's kernel best matches
   the chosen clusters (its ``feature_importances_``).

q is the paradigm's default (:func:`ikdr.cluster.alternation.default_n_components`)
on the start's clustering term unless given; with q equal to the number of
features no W-step can change the clusters (W is a rotation and both U-steps
depend on distances only), so none is run and W is the identity.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from .._config import fits_memory
from .._utils.subspace import subspace_change
from ..gamma import centered, clustering_gamma
from ..kernels import Kernel
from ..passes import resolve_clustering
from ..solver.driver import solve_ism
from ..spectral import (DENSE_MAX_N, START_TOL, affinity_embedding, auto_kernel,
                        dense_step_bytes, njw_labels, spectral_embedding, spectral_gap)
from .alternation import AlternationOptions, default_n_components
from .criterion import JUDGE_NEIGHBORS, PartitionCriterion, View
from .neighbours import GRAPH_NEIGHBORS, graph_embedding, nearest_neighbours, neighbour_graph
from .screen import screen_candidates, screen_taken

__all__ = ["Candidate", "Selection", "Starts", "scored_starts", "graph_start",
           "kernel_start", "GUIDED_TOLERANCE", "MAX_W_STEPS"]

#: W-steps of a run at most (each kept one lowered the criterion; on the benchmark's
#: data sets no run kept more than two)
MAX_W_STEPS = 4
#: ISM iterations of one W-step: its W need not be exact, the criterion judges the
#: clusters it leads to (digits: 11 iterations at most 20, the same clusters and
#: criterion to 1e-3 after 3 on every data set of the benchmark)
W_STEP_MAX_ITER = 3
#: a guided paradigm (expert scores, an existing clustering) keeps an iterate whose
#: criterion is at most this much higher when its own objective rises: its guidance
#: may choose among clusterings the data hold about equally well
GUIDED_TOLERANCE = 0.02


@dataclass
class Candidate:
    """One clustering the criterion ranks (a start or a W-step's iterate).

    ``kind`` is the U-step: "graph" (the 10-NN graph) or "kernel" (the dense
    local-scaling affinity). ``embedding`` is U (n x k, orthonormal), with its
    ``eigenvalues`` in the W-step kernel's normalised affinity and that
    kernel's ``degrees`` (None for a graph start scored without them,
    ``spectra=False`` of :func:`scored_starts`); ``components`` is W on the
    view's features (None for a start, which uses every feature of the view).
    """

    name: str
    kind: str
    labels: np.ndarray = field(repr=False)
    embedding: np.ndarray = field(repr=False)
    eigenvalues: Optional[np.ndarray] = field(repr=False)
    degrees: Optional[np.ndarray] = field(repr=False)
    columns: Optional[np.ndarray] = field(default=None, repr=False)
    components: Optional[np.ndarray] = field(default=None, repr=False)
    criterion: float = np.inf
    affinity: Optional[Kernel] = field(default=None, repr=False)


@dataclass
class Selection:
    """What the default fit chose: the kept candidate, W (with the eigenvalues of Phi
    belonging to its columns, None when no W-step ran) and the record of every
    candidate."""

    chosen: Candidate
    components: np.ndarray
    kernel: Kernel
    candidates: list = field(default_factory=list)
    history: list = field(default_factory=list)
    n_components: int = 0
    time: float = 0.0
    eigenvalues: Optional[np.ndarray] = field(default=None, repr=False)


def _partition_embedding(labels, n_clusters):
    """Orthonormal basis of the centred indicators of a partition (n x k): the U of its
    clusters. k clusters span k - 1 centred directions (their indicators sum to the
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


def graph_u_step(Z, kernel, n_clusters, *, random_state=None, neighbours=None, n_threads=None,
                 spectra=True):
    """Labels, U, eigenvalues and degrees of the 10-NN graph's spectral clustering of Z
    (U: the partition's indicators; eigenvalues and degrees: in ``kernel``, None
    without ``spectra``)."""
    if neighbours is None:
        neighbours = nearest_neighbours(Z, GRAPH_NEIGHBORS)
    labels, _ = graph_embedding(neighbour_graph(neighbours[1], GRAPH_NEIGHBORS), n_clusters,
                                random_state=random_state)
    U = _partition_embedding(labels, n_clusters)
    vals, deg = _in_kernel(Z, kernel, U, n_threads) if spectra else (None, None)
    return labels, U, vals, deg


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


def graph_start(Z, n_clusters, kernel, neighbours, *, columns=None, random_state=None,
                n_threads=None, spectra=True):
    """The start by the 10-NN graph of Z (a view of X: ``columns``; ``spectra``: see
    :func:`graph_u_step`)."""
    labels, U, vals, deg = graph_u_step(Z, kernel, n_clusters, random_state=random_state,
                                        neighbours=neighbours, n_threads=n_threads,
                                        spectra=spectra)
    name = "graph" if columns is None else "screened graph"
    return Candidate(name, "graph", labels, U, vals, deg, columns)


def kernel_start(Z, n_clusters, kernel, *, columns=None, K=None, random_state=None,
                 n_threads=None):
    """The start by the local-scaling affinity of Z (``kernel``, fitted on Z; ``K``: its
    matrix when formed, overwritten)."""
    labels, U, vals, deg = kernel_u_step(Z, kernel, n_clusters, random_state=random_state,
                                         K=K, n_threads=n_threads)
    name = "kernel" if columns is None else "screened kernel"
    return Candidate(name, "kernel", labels, U, vals, deg, columns, affinity=kernel)


def _local_matrix(Z, kernel, n_threads=None):
    """The local affinity's n x n matrix on Z when the dense U-step would form it."""
    n = Z.shape[0]
    if n <= DENSE_MAX_N and fits_memory(dense_step_bytes(n)):
        return kernel.matrix(Z, n_threads=n_threads).astype(np.float64, copy=False)
    return None


def _copy(K):
    return None if K is None else K.copy()


@dataclass
class Starts:
    """The scored starts of a default fit (module steps 1 and 2)."""

    candidates: list
    criterion: PartitionCriterion
    kernels: dict            # the local-scaling kernel of each view: None (all) or "screened"
    columns: Optional[np.ndarray]
    feature_scores: Optional[np.ndarray]


def scored_starts(X, n_clusters, kernel, *, screen=True, local_start=True, spectra=True,
                  random_state=None, n_threads=None):
    """The starts on X and, when the feature screen is taken, on the screened
    features, with the criterion judging both views, every start scored.

    The screen (:func:`ikdr.cluster.screen.screen_features`) decides on the kernel
    starts themselves: its candidates are taken when their start's spectral gap
    beats the all-feature start's by the screen's margin (the same rule on
    every row, where the screen alone samples 1,000).

    ``local_start=False`` leaves out the local-scaling start (KNet's rounding
    asks for it only where its own start is fragmented); the screen needs it
    and keeps it. The local affinity's matrix is formed either way: the
    criterion judges with it. ``spectra=False``: the graph start's eigenvalues
    and degrees in ``kernel`` (two fused passes, for W-steps from it) are not
    computed; a caller that only ranks the starts' labels needs neither.
    """
    X = np.ascontiguousarray(X)
    k = int(n_clusters)
    options = {"random_state": random_state, "n_threads": n_threads}
    neighbours = nearest_neighbours(X, max(JUDGE_NEIGHBORS + (GRAPH_NEIGHBORS,)))
    K = _local_matrix(X, kernel, n_threads)     # formed once for the start and a judge
    candidates = [graph_start(X, k, kernel, neighbours, spectra=spectra, **options)]
    if local_start or screen:
        candidates.append(kernel_start(X, k, kernel, K=_copy(K), **options))
    views = [View(None, neighbours, kernel, K)]
    kernels = {None: kernel}
    columns, scores = (None, None)
    if screen and X.shape[1] > 2:
        columns, scores = screen_candidates(X, random_state=random_state)
    if columns is not None:
        Z = np.ascontiguousarray(X[:, columns])
        local = auto_kernel(Z, k)
        K_screened = _local_matrix(Z, local, n_threads)
        screened = kernel_start(Z, k, local, columns=columns, K=_copy(K_screened), **options)
        if screen_taken(candidates[1].eigenvalues, screened.eigenvalues):
            near = nearest_neighbours(Z, max(JUDGE_NEIGHBORS + (GRAPH_NEIGHBORS,)))
            candidates += [graph_start(Z, k, local, near, columns=columns, **options), screened]
            views.append(View(columns, near, local, K_screened))
            kernels["screened"] = local
        else:
            columns = None
    criterion = PartitionCriterion(X, k, views=views, n_threads=n_threads)
    for c in candidates:
        c.criterion = criterion(c.labels)
    return Starts(candidates, criterion, kernels, columns, scores)


def _accepts(new, best, guided, objective_rose):
    """Whether a W-step's iterate replaces the best so far (see the module)."""
    if new.criterion < best.criterion:
        return True
    return guided and objective_rose and new.criterion <= best.criterion + GUIDED_TOLERANCE


class _Run:
    """The fixed parts of one run of W-steps: the view of X, its varying features (W
    is zero on constant ones, which no kernel sees), the provider, the paradigm and
    the settings (an :class:`ikdr.cluster.alternation.AlternationOptions`)."""

    def __init__(self, X, start, kernel, build_gamma, measure, dtype, options):
        Z = np.ascontiguousarray(X if start.columns is None else X[:, start.columns])
        self.n_features = Z.shape[1]
        self.varying = np.flatnonzero(np.ptp(Z, axis=0) > 0)
        self.Z = np.ascontiguousarray(Z[:, self.varying])
        self.side = resolve_clustering(self.Z, None, dtype=dtype)
        self.work = self.Z if dtype is None else self.side.working_data(self.Z, dtype)
        self.start, self.kernel = start, kernel
        self.build_gamma, self.measure = build_gamma, measure
        self.options = options

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

    def w_step(self, gamma, ism_options, W, best, step, criterion):
        """One W-step (ISM on the paradigm's Gamma with ``ism_options``) and the U-step
        of the start's kind on XW; returns the new candidate and the ISM result."""
        o = self.options
        result = solve_ism(self.side.w_step_provider(self.Z.shape[0]), self.work, gamma,
                           self.kernel, ism_options, W0=W)
        ZW = np.ascontiguousarray(self.Z @ result.components)
        k = best.embedding.shape[1]
        if self.start.kind == "graph":
            labels, U, vals, deg = graph_u_step(ZW, self.kernel, k, random_state=o.random_state,
                                                n_threads=o.n_threads)
        else:
            labels, U, vals, deg = kernel_u_step(ZW, self.start.affinity, k,
                                                 random_state=o.random_state,
                                                 U0=best.embedding, n_threads=o.n_threads)
        name = f"{self.start.name} + {step} W-step{'s' if step > 1 else ''}"
        new = Candidate(name, self.start.kind, labels, U, vals, deg, self.start.columns,
                        self.on_view(result.components), criterion(labels), self.start.affinity)
        return new, result, ZW


def refine(X, start, kernel, criterion, build_gamma, options: AlternationOptions, *,
           measure: Callable[..., dict] | None = None, dtype=None) -> Selection:
    """W-steps from ``start`` while the criterion accepts their iterates (see the module).

    ``kernel``: the W-step kernel, fitted on the start's view of X;
    ``build_gamma(U, degrees)``: the paradigm; ``options``: the settings
    (:class:`ikdr.cluster.alternation.AlternationOptions`: q, at most
    ``max_iter`` W-steps, ``guided`` when the paradigm has a second term on W,
    the report); ``measure(Z, U, eigenvalues, degrees)``: the paradigm's
    objective terms (default: the quality, the sum of the eigenvalues);
    ``dtype``: the W-steps' working precision.
    """
    t0 = time.perf_counter()
    run = _Run(X, start, kernel, build_gamma, measure, dtype, options)
    k = start.embedding.shape[1]
    d = run.Z.shape[1]
    best = start
    gamma = build_gamma(start.embedding, start.degrees)
    best_terms = run.terms(run.Z, start)
    history = [{"iteration": 0, "candidate": start.name, "criterion": start.criterion,
                "accepted": True, "ism_iterations": 0, **best_terms,
                "time": time.perf_counter() - t0}]
    q = options.n_components
    if q is None:
        # the dimension the start's clusters need: the eigengap of Phi_0 of the
        # clustering term alone (a paradigm's second term, signed for KDAC, can put
        # it near d: text, q = 569 of 570)
        phi0 = run.side.phi0(run.work, clustering_gamma(start.embedding, start.degrees), kernel)
        q = default_n_components(np.linalg.eigvalsh(phi0), k, d, guided=options.guided)
    q = int(min(q, d))
    # short W-steps by the papers' rule: the criterion judges the clusters they lead to
    ism_options = options.w_step(q, W_STEP_MAX_ITER, run.side.phi_solver)
    candidates, W, explain = [start], None, None
    weights: dict[Optional[str], np.ndarray] = {}   # Phi's eigenvalues of each W-step's W
    for step in range(1, options.max_iter + 1 if q < d else 1):
        new, result, ZW = run.w_step(gamma, ism_options, W, best, step, criterion)
        explain = result.components if explain is None else explain
        weights.setdefault(None, result.eigenvalues)
        weights[new.name] = result.eigenvalues
        terms = run.terms(ZW, new)
        accepted = _accepts(new, best, options.guided,
                            terms["objective"] > best_terms["objective"])
        history.append({"iteration": step, "candidate": new.name, "criterion": new.criterion,
                        "accepted": accepted, "ism_iterations": result.n_iter,
                        "ism_converged": result.converged,
                        "u_change": subspace_change(best.embedding, new.embedding),
                        "w_change": np.inf if W is None else subspace_change(W, result.components),
                        **terms, "time": time.perf_counter() - t0})
        candidates.append(new)
        if options.report is not None:
            options.report(step, terms["objective"], history[-1]["u_change"],
                           quality=terms["quality"], ism_iter=result.n_iter)
        if not accepted:
            break
        best, best_terms, W = new, terms, result.components
        gamma = build_gamma(new.embedding, new.degrees)
    phi: Optional[np.ndarray] = weights.get(best.name if best.components is not None else None)
    if best.components is not None:
        view = best.components
    else:                           # the first W-step's, or no W-step can move (q = d)
        view = run.on_view(np.eye(d) if explain is None else explain)
    return Selection(chosen=best, components=view, kernel=kernel, candidates=candidates,
                     history=history, n_components=view.shape[1],
                     time=time.perf_counter() - t0, eigenvalues=phi)


