"""The feature screen of the clustering estimators: which of many features carry the clusters.

:func:`feature_gaps` scores each feature by how clearly it alone splits into a
few groups (the spectral gap of its 1-D U-step); :func:`screen_features` takes
the features that do when spectral clustering of them alone separates the k
clusters more clearly than all features (ISMClustering, SemiSupervisedISM and
KDAC's selection, KNetClustering's network; KDAC's feature start).
"""
from __future__ import annotations

import numpy as np

from .._utils.sampling import sample_index
from ..kernels import Gaussian
from ..kernels.bandwidth import feature_median_distances
from ..spectral import auto_kernel, spectral_embedding, spectral_gap

__all__ = ["no_structure", "FEATURE_GAP_SCALE", "FEATURE_GAP_MAX_SAMPLES", "FEATURE_GAP_BINS", "SCREEN_MIN_GAP",
           "SCREEN_GAP_MARGIN", "SCREEN_NO_STRUCTURE", "SCREEN_STRUCTURE", "SCREEN_MAX_SAMPLES",
           "feature_gaps", "screen_features", "screen_candidates",
           "screen_taken"]


#: bandwidth of a single feature's U-step in :func:`feature_gaps`: this multiple of
#: its median pairwise distance (0.25 lost two of eight grids of blobs in KDAC's
#: feature start, 0.5 none; docs/alternative_clustering.md)
FEATURE_GAP_SCALE = 0.5
#: rows of :func:`feature_gaps` (a seeded subsample above this)
FEATURE_GAP_MAX_SAMPLES = 500


def _binned_gap(z, bandwidth, n_groups, bins):
    r"""The ``n_groups`` spectral gap of a 1-D sample's Gaussian U-step, each value moved
    to the mean of its bin (width range / bins): the eigenvalues of the bins' matrix
    :math:`H_c C^{1/2} D_b^{-1/2} K_b D_b^{-1/2} C^{1/2} H_c` (C: the bin counts,
    :math:`D_b = \mathrm{diag}(K_b c)`, :math:`H_c = I - \sqrt c\sqrt c^T / n`),
    at most ``bins`` rows instead of the sample's."""
    lo, hi = float(z.min()), float(z.max())
    if not hi > lo:
        return 0.0
    index = np.minimum(((z - lo) / (hi - lo) * bins).astype(np.intp), bins - 1)
    counts = np.bincount(index, minlength=bins).astype(np.float64)
    filled = counts > 0
    counts = counts[filled]
    centers = np.bincount(index, weights=z, minlength=bins)[filled] / counts
    K = np.exp(-np.subtract.outer(centers, centers) ** 2 / (2.0 * bandwidth ** 2))
    r = np.sqrt(counts / (K @ counts))
    M = r[:, None] * K * r[None, :]
    v = np.sqrt(counts / counts.sum())      # the constant vector, in the bins' weights
    Mv = M @ v
    M += (v @ Mv) * np.outer(v, v) - np.outer(v, Mv) - np.outer(Mv, v)
    vals = np.linalg.eigvalsh(M)[::-1]
    k = min(int(n_groups), vals.shape[0])
    return spectral_gap(vals[:k])


#: bins of the 1-D U-steps of :func:`feature_gaps` (their gaps agree with those of
#: the unbinned 500-row samples to 3e-4 on the benchmark's data sets)
FEATURE_GAP_BINS = 128


def feature_gaps(X, n_groups, *, max_samples=FEATURE_GAP_MAX_SAMPLES, random_state=None):
    r"""How clearly each single feature splits into ``n_groups`` clusters.

    For every column j: the :func:`spectral_gap` of the ``n_groups``-cluster
    U-step of :math:`X_{:,j}` alone, with a Gaussian at
    :data:`FEATURE_GAP_SCALE` x its median pairwise distance (the plain median,
    :func:`ikdr.kernels.bandwidth.feature_median_distances`: a feature whose
    pairs are mostly tied scores 0), each value moved to the mean of its bin
    among :data:`FEATURE_GAP_BINS` equal bins (:func:`_binned_gap`: the same
    eigenvalues as the binned sample's, from a matrix of at most 128 rows). A
    feature holding that many separated groups scores near 1, a unimodal one (noise) low: 1-D standard-normal
    noise scored at most 0.21 on 300-600 rows, the informative features of a
    grid of blobs 0.65-0.91 (``n_groups`` = k, KDAC) and of make_blobs /
    make_classification with 3 informative features among 30-50 0.27-0.50
    (``n_groups`` = 2, ISMClustering; docs/alternative_clustering.md). On a
    seeded subsample of at most ``max_samples`` rows.
    """
    X = np.asarray(X, dtype=np.float64)
    n, d = X.shape
    rows = sample_index(n, max_samples, random_state)
    rows = np.arange(n) if rows is None else np.sort(rows)
    scores = np.zeros(d)
    scales = FEATURE_GAP_SCALE * feature_median_distances(X[rows], untied=False)
    for j in range(d):
        if scales[j] > 0:
            scores[j] = _binned_gap(X[rows, j], scales[j], n_groups, FEATURE_GAP_BINS)
    return scores


#: a feature joins the screen when its 2-group gap (:func:`feature_gaps`) reaches
#: this: 1-D standard-normal noise of 300-600 rows scored at most 0.21, the
#: informative features of 4 blobs in 3 of 50 features 0.27-0.43 and of
#: make_classification 3 of 30 0.32-0.50 (docs/alternative_clustering.md)
SCREEN_MIN_GAP = 0.25
#: the screen is taken when the k-cluster spectral gap of the screened features at
#: W = I beats that of all features by this much (4 blobs in 3 of 50: 0.110 against
#: 0.001; face, 20 clusters: 0.007 against 0.003, where the screen lost 0.28 NMI)
SCREEN_GAP_MARGIN = 0.05
#: ... or when the U-step of all features holds no k clusters at all (its (k-1)-th
#: eigenvalue below this: the normalised affinity mixes the rows in one step; 0.013-0.07
#: on every feature task of studies/clustering_features.py, 0.14-0.83 on the
#: real data sets) while the candidates' does (:data:`SCREEN_STRUCTURE` above it):
#: make_classification 4 of 30-100, seed 2, 0.013-0.043 against 0.986, where the gap
#: rule refused the two informative candidates (gaps 0.000-0.002 against 0.015) and no
#: clustering of all features found the classes (NMI 0.005)
SCREEN_NO_STRUCTURE = 0.1
SCREEN_STRUCTURE = 0.5
#: rows of the screen's two U-steps (a seeded subsample above this)
SCREEN_MAX_SAMPLES = 1000


def screen_features(X, n_clusters, *, random_state=None):
    r"""The features the clustering estimators' W may use when a few carry the clusters.

    1. Candidates: the features whose 2- or 3-group :func:`feature_gaps` is at
       least :data:`SCREEN_MIN_GAP` (a feature with two or three modes; noise
       scores lower: at most 0.21 for either on 300-1,000 rows; the axes of a
       3 x 3 grid of cells score 0.24 with two groups, 0.40 with three).
    2. Taken when the ``n_clusters``-cluster :func:`spectral_gap` of the
       local-scaling U-step (:func:`auto_kernel`) on the candidates alone beats
       the one on all features by :data:`SCREEN_GAP_MARGIN`: spectral
       clustering of all features is dominated by the noise there, and so is
       the start of every alternation (ISMClustering on 4 blobs in 3 of 50
       features 0.26 -> 0.90; docs/alternative_clustering.md); or when the
       U-step of all features holds no clusters at all and the candidates'
       does (:func:`screen_taken`).

    Cost: 2d eigenproblems of at most 128 rows, two U-steps of at most
    :data:`SCREEN_MAX_SAMPLES` rows.

    Returns
    -------
    columns : ndarray of int or None
        The screened features, or None (use all).
    scores : ndarray (d,)
        Every feature's larger gap.
    gaps : tuple of float or None
        The spectral gaps of all features and of the candidates (None when
        no proper subset was a candidate).
    """
    X = np.asarray(X, dtype=np.float64)
    n, d = X.shape
    columns, scores = screen_candidates(X, random_state=random_state)
    if columns is None:
        return None, scores, None
    rows = sample_index(n, SCREEN_MAX_SAMPLES, random_state)
    Xs = X if rows is None else X[np.sort(rows)]
    spectra = []
    for Z in (Xs, Xs[:, columns]):
        Z = np.ascontiguousarray(Z)
        _, vals, _ = spectral_embedding(Z, auto_kernel(Z, n_clusters), n_clusters,
                                        random_state=random_state)
        spectra.append(vals)
    gaps = tuple(spectral_gap(vals) for vals in spectra)
    return (columns if screen_taken(*spectra) else None), scores, gaps


def screen_candidates(X, *, random_state=None):
    """Step 1 of :func:`screen_features`: the features whose 2- or 3-group gap reaches
    :data:`SCREEN_MIN_GAP` (None unless a proper, non-empty subset) and every
    feature's larger gap (:func:`feature_gaps`)."""
    scores = np.maximum(feature_gaps(X, 2, random_state=random_state),
                        feature_gaps(X, 3, random_state=random_state))
    columns = np.flatnonzero(scores >= SCREEN_MIN_GAP)
    if columns.size == 0 or columns.size == scores.shape[0]:
        return None, scores
    return columns, scores


def no_structure(values):
    """Whether a local-scaling U-step's k descending eigenvalues show no k clusters: the
    (k-1)-th, the weakest direction that separates k clusters, below
    :data:`SCREEN_NO_STRUCTURE`."""
    values = np.asarray(values)
    return bool(values[values.shape[0] - 2] < SCREEN_NO_STRUCTURE)


def screen_taken(values_all, values_screened):
    """Step 2 of :func:`screen_features`: whether the local-scaling U-step of the
    candidates separates the clusters more clearly than that of every feature,
    from the k descending eigenvalues of each: its :func:`spectral_gap` larger by
    :data:`SCREEN_GAP_MARGIN`, or the (k-1)-th eigenvalue, the weakest of the
    directions that separate k clusters, below :data:`SCREEN_NO_STRUCTURE` for
    every feature (no clusters there at all) and above :data:`SCREEN_STRUCTURE`
    for the candidates."""
    values_all, values_screened = np.asarray(values_all), np.asarray(values_screened)
    if spectral_gap(values_screened) >= spectral_gap(values_all) + SCREEN_GAP_MARGIN:
        return True
    weakest = values_all.shape[0] - 2
    return bool(values_all[weakest] < SCREEN_NO_STRUCTURE
                and values_screened[weakest] >= SCREEN_STRUCTURE)
