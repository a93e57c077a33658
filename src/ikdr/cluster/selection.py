r"""The clustering estimators' default fit: starts and W-steps ranked by a label-free criterion.

1. **Starts.** Spectral clustering of X two ways: on the symmetric 10-NN
   graph, as scikit-learn's ``SpectralClustering(affinity="nearest_neighbors")``
   (:func:`ikdr.spectral.graph_embedding`), and with the dense local-scaling
   affinity (:func:`ikdr.spectral.auto_kernel`, the U-step of the papers with
   the data-driven bandwidth); the same two on the screened features when
   :func:`ikdr.spectral.screen_features` takes a few.
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
unless given; with q equal to the number of features no W-step can change
the clusters (W is a rotation and both U-steps depend on distances only), so
none is run and W is the identity.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Optional

import numpy as np

from .._utils.subspace import subspace_change
from ..gamma import centered
from ..kernels import Kernel
from ..passes import resolve_clustering
from ..solver.driver import solve_ism
from ..spectral import (GRAPH_NEIGHBORS, affinity_embedding, graph_embedding, nearest_neighbours,
                        neighbour_graph, njw_labels, spectral_embedding)
from .alternation import ISM_MAX_ITER, default_n_components
from .criterion import JUDGE_NEIGHBORS, PartitionCriterion

__all__ = ["Candidate", "Selection", "starts", "refine", "GUIDED_TOLERANCE", "MAX_W_STEPS"]

#: W-steps of a run at most (each kept one lowered the criterion; on the benchmark's
#: data sets no run kept more than two)
MAX_W_STEPS = 4
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
    kernel's ``degrees``; ``components`` is W on the view's features (None
    for a start, which uses every feature of the view).
    """

    name: str
    kind: str
    labels: np.ndarray = field(repr=False)
    embedding: np.ndarray = field(repr=False)
    eigenvalues: np.ndarray = field(repr=False)
    degrees: np.ndarray = field(repr=False)
    columns: Optional[np.ndarray] = field(default=None, repr=False)
    components: Optional[np.ndarray] = field(default=None, repr=False)
    criterion: float = np.inf
    affinity: Optional[Kernel] = field(default=None, repr=False)


@dataclass
class Selection:
    """What the default fit chose: the kept candidate, W and the record of every candidate."""

    chosen: Candidate
    components: np.ndarray
    kernel: Kernel
    candidates: list = field(default_factory=list)
    history: list = field(default_factory=list)
    n_components: int = 0
    time: float = 0.0


def _partition_embedding(labels, n_clusters):
    """Orthonormal centred indicators of a partition (n x k): the U of its clusters
    (a column is dropped for each empty cluster)."""
    Y = np.zeros((labels.shape[0], int(n_clusters)))
    Y[np.arange(labels.shape[0]), labels] = 1.0
    Y = centered(Y)
    Y = Y[:, np.linalg.norm(Y, axis=0) > 1e-12]
    Q = np.linalg.qr(Y)[0]
    return np.hstack([Q, np.zeros((Q.shape[0], int(n_clusters) - Q.shape[1]))])


def _in_kernel(Z, kernel, U, n_threads=None):
    r"""Eigenvalues and degrees of a partition's U in the kernel's normalised affinity:
    :math:`\mathrm{diag}(U^T H D^{-1/2} K D^{-1/2} H U)`, :math:`D = \mathrm{diag}(K1)`
    (two fused passes; their sum is the clustering quality CQ)."""
    deg = kernel.degrees(Z, n_threads=n_threads)
    R = np.ascontiguousarray(centered(U) / np.sqrt(deg)[:, None])
    KR, _ = kernel.product(Z, R, n_threads=n_threads)
    return np.sort(np.sum(R * KR, axis=0))[::-1], deg


def graph_u_step(Z, kernel, n_clusters, *, random_state=None, neighbours=None, n_threads=None):
    """Labels, U, eigenvalues and degrees of the 10-NN graph's spectral clustering of Z
    (U: the partition's indicators; eigenvalues and degrees: in ``kernel``)."""
    if neighbours is None:
        neighbours = nearest_neighbours(Z, GRAPH_NEIGHBORS)
    labels, _ = graph_embedding(neighbour_graph(neighbours[1], GRAPH_NEIGHBORS), n_clusters,
                                random_state=random_state)
    U = _partition_embedding(labels, n_clusters)
    vals, deg = _in_kernel(Z, kernel, U, n_threads)
    return labels, U, vals, deg


def kernel_u_step(Z, affinity, n_clusters, *, random_state=None, U0=None, K=None,
                  n_threads=None):
    """Labels, U, eigenvalues and degrees of the dense affinity's spectral clustering of Z
    (``K``: the affinity matrix of Z when already formed; it is overwritten)."""
    if K is not None:
        U, vals, deg = affinity_embedding(K, n_clusters, U0=U0)
    else:
        U, vals, deg = spectral_embedding(Z, affinity, n_clusters, random_state=random_state,
                                          U0=U0, n_threads=n_threads)
    return njw_labels(U, n_clusters, random_state=random_state), U, vals, deg


def starts(X, n_clusters, kernel, criterion, *, columns=None, neighbours=None,
           random_state=None, n_threads=None):
    """The graph and kernel starts on X (``columns`` None) or on ``X[:, columns]``,
    scored by the criterion. ``kernel``: the local-scaling kernel of that view;
    ``neighbours``: :func:`ikdr.spectral.nearest_neighbours` of the view."""
    Z = np.ascontiguousarray(X if columns is None else X[:, columns])
    prefix = "" if columns is None else "screened "
    out = []
    labels, U, vals, deg = graph_u_step(Z, kernel, n_clusters, random_state=random_state,
                                        neighbours=neighbours, n_threads=n_threads)
    out.append(Candidate(prefix + "graph", "graph", labels, U, vals, deg, columns))
    labels, U, vals, deg = kernel_u_step(Z, kernel, n_clusters, random_state=random_state,
                                         n_threads=n_threads)
    out.append(Candidate(prefix + "kernel", "kernel", labels, U, vals, deg, columns,
                         affinity=kernel))
    for c in out:
        c.criterion = criterion(c.labels)
    return out


def _accepts(new, best, guided, objective_rose):
    """Whether a W-step's iterate replaces the best so far (see the module)."""
    if new.criterion < best.criterion:
        return True
    return guided and objective_rose and new.criterion <= best.criterion + GUIDED_TOLERANCE


def refine(X, start, kernel, criterion, build_gamma, *, n_components=None,
           measure: Callable[..., dict] | None = None, guided=False, alternative=False,
           random_state=None, dtype=None, eigen_solver="auto", report: Any = None,
           n_threads=None, max_steps=MAX_W_STEPS) -> Selection:
    """W-steps from ``start`` while the criterion accepts their iterates (see the module).

    ``kernel``: the W-step kernel, fitted on the start's view of X;
    ``build_gamma(U, degrees)``: the paradigm; ``measure(Z, U, eigenvalues,
    degrees)``: the paradigm's objective terms (default: the quality, the sum
    of the eigenvalues); ``guided``: the paradigm has a second term on W.
    """
    t0 = time.perf_counter()
    k = start.embedding.shape[1]
    Z = np.ascontiguousarray(X if start.columns is None else X[:, start.columns])
    n, d = Z.shape
    side = resolve_clustering(Z, None, dtype=dtype)
    work = side.working_data(Z, dtype) if dtype is not None else Z

    def entry_for(points, c):
        terms = {"quality": float(np.sum(c.eigenvalues))}
        terms.update(measure(points, c.embedding, c.eigenvalues, c.degrees) if measure
                     else {"objective": terms["quality"]})
        terms["cost"] = -terms["objective"]
        return terms

    best = start
    gamma = build_gamma(start.embedding, start.degrees)
    best_terms = entry_for(Z, start)
    history = [{"iteration": 0, "candidate": start.name, "criterion": start.criterion,
                "accepted": True, **best_terms, "time": time.perf_counter() - t0}]
    q = n_components
    if q is None:
        q = default_n_components(np.linalg.eigvalsh(side.phi0(work, gamma, kernel)), k, d,
                                 alternative=alternative, guided=guided)
    q = int(min(q, d))
    candidates, W, explain = [start], None, None
    for step in range(1, max_steps + 1 if q < d else 1):
        result = solve_ism(side.ism_passes(n), work, gamma, kernel, q, W0=W,
                           max_iter=ISM_MAX_ITER, n_threads=n_threads, random_state=random_state,
                           warn=False, certify=False, phi_solver=side.phi_solver,
                           eigen_solver=eigen_solver)
        W_new = result.components
        explain = W_new if explain is None else explain
        ZW = np.ascontiguousarray(Z @ W_new)
        if start.kind == "graph":
            labels, U, vals, deg = graph_u_step(ZW, kernel, k, random_state=random_state,
                                                n_threads=n_threads)
        else:
            labels, U, vals, deg = kernel_u_step(ZW, start.affinity, k,
                                                 random_state=random_state, U0=best.embedding,
                                                 n_threads=n_threads)
        new = Candidate(f"{start.name} + {step} W-step{'s' if step > 1 else ''}", start.kind,
                        labels, U, vals, deg, start.columns, W_new, criterion(labels),
                        start.affinity)
        terms = entry_for(ZW, new)
        accepted = _accepts(new, best, guided, terms["objective"] > best_terms["objective"])
        history.append({"iteration": step, "candidate": new.name, "criterion": new.criterion,
                        "accepted": accepted, "ism_iterations": result.n_iter,
                        "ism_converged": result.converged,
                        "u_change": subspace_change(best.embedding, U),
                        "w_change": np.inf if W is None else subspace_change(W, W_new),
                        **terms, "time": time.perf_counter() - t0})
        candidates.append(new)
        if report is not None:
            report(step, terms["objective"], history[-1]["u_change"], quality=terms["quality"],
                   ism_iter=result.n_iter)
        if not accepted:
            break
        best, best_terms, W = new, terms, W_new
        gamma = build_gamma(U, deg)
    components = best.components if best.components is not None else explain
    if components is None:          # q = d: no W-step can change the clusters
        components = np.eye(d)
    return Selection(chosen=best, components=components, kernel=kernel, candidates=candidates,
                     history=history, n_components=components.shape[1],
                     time=time.perf_counter() - t0)


def neighbours_for_judges(X):
    """One k-NN query of X deep enough for the starts' graph and the criterion's judges."""
    return nearest_neighbours(X, max(JUDGE_NEIGHBORS + (GRAPH_NEIGHBORS,)))


def with_criterion(candidate, criterion):
    """A copy of the candidate scored by another criterion."""
    return replace(candidate, criterion=criterion(candidate.labels))
