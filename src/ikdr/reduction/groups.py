r"""Which features carry the dependence on each group: per-class importances of a
supervised fit, per-cluster importances of a clustering, and the feature
importances built from them so that a small group counts as much as a large one.

**A group against the others.** For labels with g >= 2 groups (classes, or the
clusters found), group c's contrast is

.. math:: h_c = \frac{y_c}{n_c} - \frac{1}{g - 1} \sum_{c' \neq c} \frac{y_{c'}}{n_{c'}},

:math:`y_c` the indicator of group c and :math:`n_c` its size. With
:math:`\Gamma_c = h_c h_c^T`, :math:`\mathrm{Tr}(\Gamma_c K) = \|\mu_c -
\tfrac{1}{g-1}\sum_{c' \neq c}\mu_{c'}\|^2` in the kernel's feature space
(:math:`\mu_c` the mean embedding of group c): how far the group lies from the
other groups, each of them weighted alike whatever its size. The contrasts sum
to a class-balanced supervised Gamma, :math:`\sum_c \Gamma_c = (g/(g-1))^2\,
P J P^T` (P the indicators scaled by :math:`1/n_c`, J the g x g centring
matrix): the dependence on the labels as if every group had as many rows. For
two groups :math:`h_1 = -h_0`: what tells one from the other is the same for
both. Against the size-weighted rest (:math:`H y_c`) a gene that marks the
large groups would mark every small group too, by its absence: on an
expression set whose three largest types (65% of the cells) share a program,
its genes would take the top of every small type's list.

**Two parts per group**, as in the supervised importances
(:mod:`ikdr.reduction.support`):

* the projection part :math:`\ell_{jc} = \sum_k 2 W_{jk}[\Phi_c(W) W]_{jk}`, the
  rate at which :math:`\mathrm{Tr}(\Gamma_c K_{XW})` falls as feature j is
  scaled down (one thin pass per group; directions k whose value
  :math:`\sum_j \ell_{jkc}` is negative carry nothing of the group and are
  left out). The supervised fit measures it on held-out rows, with each half's
  W; the clusterers on the rows they clustered;
* the marginal part :math:`m_{jc} = \mathrm{Tr}(\Gamma_c K_j)` less its mean
  under independence, for a one-dimensional Gaussian :math:`K_j` on feature j,
  counted above the level independent data exceed with probability 5% / (d g)
  (:func:`ikdr.solver.marginal.marginal_threshold`; all the groups from the
  same bins, tested together).

**Combined**: group c's row is the mean of the two parts' shares,

.. math:: I_{cj} = \tfrac12\Big(\frac{\ell_{jc}^+}{\sum_i \ell_{ic}^+} +
    \frac{m_{jc}^+}{\sum_i m_{ic}^+}\Big),

each row summing to 1 (a part that is zero for every feature leaves the other
alone). The two parts live on different scales (one kernel on q directions
against d one-dimensional kernels: on pbmc68k's 765 genes the marginal part's
sum was 100 times the projection part's), so a plain sum would be the
marginal part alone. The shares let each rank what it sees: on pbmc68k's
sorted immune cells the projection part alone ranks the progenitor markers
PRSS57 and SPINK2 and the B-cell CD79A among the first 20 genes (genes that
vary together), the marginal part alone past the 25th; on the simulated
expression set of :doc:`/studies/markers` the marginal part finds the
small types' markers, which the projection's few directions do not hold.

**Feature importances**: the largest share a feature takes in any group,
:math:`\max_c I_{cj}`, normalised to sum 1: a gene that marks one small type
ranks with the markers of the large ones. The mean over the groups ranks by
how many groups a feature separates instead, the genes of the large types'
programs first (pbmc68k: 10 of the 24 canonical markers in the top 50, against
13 with the largest share). A continuous target is one group, its own Gamma.
"""
from __future__ import annotations

import numpy as np

from .._utils.labels import one_hot
from .._utils.sampling import rows_at, sample_index
from ..gamma import Gamma
from ..passes import resolve
from ..solver.marginal import marginal_dependence, marginal_threshold

__all__ = ["group_contrasts", "projection_losses", "marginal_parts", "on_rows",
           "combined_importances", "group_importances", "cluster_importances", "IMPORTANCE_ROWS"]

#: rows the clusterers' importances read at most (seeded)
IMPORTANCE_ROWS = 4000


def group_contrasts(labels, groups=None):
    """(contrasts n x g, groups): column c is group c's contrast :math:`h_c` (module
    docstring), the groups sorted as :func:`ikdr.gamma.one_hot` sorts them, or in
    the order of ``groups`` when given; a group without a row (a class absent from
    one held-out half) has a zero column. At least 2 groups must have rows."""
    labels = np.asarray(labels).ravel()
    if groups is None:
        Y, groups = one_hot(labels)
    else:
        Y = (labels[:, None] == np.asarray(groups)[None, :]).astype(np.float64)
    sizes = Y.sum(axis=0)
    present = int(np.count_nonzero(sizes))
    if present < 2:
        raise ValueError(f"importances per group need at least 2 groups, got {present}")
    P = Y / np.where(sizes > 0, sizes, 1.0)
    others = (P.sum(axis=1, keepdims=True) - P) / (present - 1)
    return np.where(sizes > 0, P - others, 0.0), groups


def _gammas(target):
    """The Gammas of ``target``: one rank-one Gamma per contrast column (an
    ndarray), or the one Gamma given."""
    if isinstance(target, Gamma):
        return [target]
    if target.shape[1] == 2:        # h_1 = -h_0: one pass serves both
        return [Gamma(target[:, :1])]
    return [Gamma(target[:, [c]]) for c in range(target.shape[1])]


def projection_losses(X, W, kernel, target):
    r"""The projection part :math:`\ell_{jc}` (module docstring) of every group on the
    rows X (in memory, dense or sparse) at W (d x q, the fitted ``kernel``):
    ``target`` the contrasts (n x g) or one Gamma; returns (groups x d)."""
    passes = resolve(X)
    data = passes.check_data(X)
    rows = []
    for gamma in _gammas(target):
        PW, _ = passes.problem(data, gamma, kernel, None).phi_product(W, W)
        shares = 2.0 * W * PW
        rows.append(shares[:, shares.sum(axis=0) > 0].sum(axis=1))
    return _both_of_two(np.array(rows), target)


def marginal_parts(X, *targets):
    """The marginal part :math:`m_{jc}` of every group on the rows X, 0 where it is
    within the noise of independence: one (groups x d) array per target (as in
    :func:`projection_losses`), each target's statistics tested together
    (:func:`~ikdr.solver.marginal.marginal_threshold`). The targets share one pass
    over X's bins and medians; a target of some of the rows (a held-out half) is
    zero on the others (:func:`on_rows`) and measured with the kernels, bins and
    noise level of all the rows."""
    gammas = [_gammas(target) for target in targets]
    members = [gamma for group in gammas for gamma in group]
    parts = np.concatenate([np.full(g.factor.shape[1], i) for i, g in enumerate(members)])
    stacked = Gamma(np.hstack([g.factor for g in members]),
                    np.concatenate([np.ones(g.rank) if g.scale is None else g.scale
                                    for g in members]))
    dependence, null_sd, null_mean = marginal_dependence(X, stacked, with_noise=True,
                                                         parts=parts)
    out, start = [], 0
    for target, group in zip(targets, gammas):
        part = slice(start, start + len(group))
        start += len(group)
        counted = dependence[:, part] > marginal_threshold(null_sd[:, part], null_mean[:, part])
        out.append(_both_of_two(np.where(counted, dependence[:, part], 0.0).T, target))
    return out


def on_rows(target, rows, n):
    """``target`` (of the rows ``rows`` of n) as a target of all n rows, zero on the
    others."""
    factor = target.factor if isinstance(target, Gamma) else target
    full = np.zeros((n, factor.shape[1]))
    full[rows] = factor
    return Gamma(full, target.scale) if isinstance(target, Gamma) else full


def _both_of_two(rows, target):
    """Two groups were measured once (:func:`_gammas`): the row again for the other."""
    if not isinstance(target, Gamma) and target.shape[1] == 2:
        return np.vstack([rows, rows])
    return rows


def _shares(part):
    """Each row's positive part over its sum (rows without one: 0)."""
    part = np.maximum(part, 0.0)
    total = part.sum(axis=1, keepdims=True)
    return np.divide(part, total, out=np.zeros_like(part), where=total > 0)


def combined_importances(losses, marginal):
    """(rows, feature importances) from the two parts (groups x d each): the rows
    :math:`I_{cj}` and :math:`\\max_c I_{cj}` normalised (module docstring); all
    zeros where neither part has anything."""
    projection, own = _shares(losses), _shares(marginal)
    has = np.stack([projection.sum(axis=1), own.sum(axis=1)])
    weights = np.divide(1.0, has.sum(axis=0), out=np.zeros(has.shape[1]), where=has.sum(axis=0) > 0)
    rows = (projection + own) * weights[:, None]
    top = rows.max(axis=0)
    norm = top.sum()
    return rows, (top / norm if norm > 0 else top)


def group_importances(X, W, kernel, labels, groups=None):
    """``cluster_importances_`` and the importances built from them, for a fit that
    has no held-out rows (the clusterers): both parts on the rows X with the groups
    ``labels`` (in the order of ``groups`` when given); W None (no projection: a
    network's embedding) leaves the marginal part alone. Returns (rows, feature
    importances, groups)."""
    contrasts, groups = group_contrasts(labels, groups)
    marginal, = marginal_parts(X, contrasts)
    losses = np.zeros_like(marginal) if W is None else projection_losses(X, W, kernel, contrasts)
    rows, features = combined_importances(losses, marginal)
    return rows, features, groups


def cluster_importances(X, W, kernel, labels, n_clusters, random_state=None):
    """``cluster_importances_`` of every clusterer (n_clusters x n_features, rows in
    the order of the cluster labels 0 .. n_clusters - 1, each summing to 1): the
    per-group importances of :mod:`ikdr.reduction.groups` on the clusters found,
    measured on at most :data:`IMPORTANCE_ROWS` seeded rows, the projection part at
    W with the fitted W-step ``kernel`` (W None: the marginal part alone). A
    cluster without rows, or a partition with fewer than 2 clusters, has a zero
    row."""
    index = sample_index(X.shape[0], IMPORTANCE_ROWS, random_state)
    rows = rows_at(X, index)
    labels = np.asarray(labels) if index is None else np.asarray(labels)[index]
    clusters = np.arange(n_clusters)
    if np.unique(labels).shape[0] < 2:
        return np.zeros((n_clusters, X.shape[1]))
    return group_importances(rows, W, kernel, labels, clusters)[0]
