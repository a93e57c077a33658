"""The one place that builds the providers: how the passes of a fit are computed.

:func:`resolve` looks at where the rows live (an in-memory array or memmap,
or a row-chunked Dask array) and at the ``approximation`` asked for (an
:class:`~ikdr.passes.landmarks.Approximation`: landmark settings), and
builds the W-step's provider; :func:`resolve_clustering` does the same for
the clustering alternation, whose provider adds the U-step to the W-step's.
Every estimator and algorithm function gets its providers here (a
clustering provider makes its W-steps' own); the solver, the alternation
and the spectral step receive them and never look at X's type themselves.

====================  =======================  ======================================
rows                  ``approximation``        provider (W-step / clustering)
====================  =======================  ======================================
ndarray               None                     ExactPasses / ExactClustering
scipy.sparse          None                     SparsePasses / SparseClustering
scipy.sparse          an ``Approximation``     LandmarkPasses / SparseClusteringLandmarks
ndarray or memmap     an ``Approximation``     LandmarkPasses / ClusteringLandmarks
Dask array            None                     DaskPasses / ClusteringPasses
Dask array            an ``Approximation``     LandmarkPasses (W-step only)
====================  =======================  ======================================
"""
from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.utils.validation import validate_data

from .._utils.validation import check_scale
from .dask import ClusteringPasses, DaskPasses
from .dask import project as project_dask
from .dask_data import is_dask_array, is_distributed
from .dask_data import validate_data as validate_dask_data
from .exact import ExactClustering, ExactPasses
from .landmark_clustering import ClusteringLandmarks
from .landmarks import Approximation, LandmarkPasses, check_landmark_options, landmark_data
from .sparse import (SparseClustering, SparseClusteringLandmarks, SparsePasses, sparse_data,
                     sparse_project)
from .sparse_rows import is_sparse

__all__ = ["resolve", "resolve_clustering", "fit_data", "project_data", "MEMORY", "BLOCKS", "CLUSTER"]

#: where the rows of a fit live, as :func:`fit_data` reports it
MEMORY, BLOCKS, CLUSTER = "memory", "blocks", "cluster"


def fit_data(estimator, X, y=None, *, approximation=None, kernel=None, y_required=True,
             multi_output=True, **check_options):
    """The estimators' one entry check: validated ``(X, y, location)``.

    ``location`` says where the rows live and so which provider
    :func:`resolve` will pick: :data:`MEMORY` (scikit-learn's
    ``validate_data``, float64, then the scale check), :data:`BLOCKS` (an
    ``approximation`` was asked for: X, an ndarray or ``np.memmap``, is
    checked one row block at a time and never copied;
    :func:`ikdr.passes.landmarks.landmark_data`) or :data:`CLUSTER` (a
    row-chunked dask X stays on its cluster;
    :func:`ikdr.distributed.validate_data`). Every path checks the same
    things (2-D, at least 2 rows, finite, squares that do not overflow, y of
    the same length) and sets ``n_features_in_``. A dask y with a numpy X is
    gathered. ``check_options`` go to scikit-learn's ``validate_data``
    (in memory only). A ``scipy.sparse`` X stays sparse, CSR
    (:func:`ikdr.passes.sparse.sparse_data`): :data:`MEMORY`, or
    :data:`BLOCKS` with an approximation.
    """
    if is_sparse(X):
        X, y = sparse_data(estimator, X, y, y_required=y_required, multi_output=multi_output,
                           approximation=approximation, kernel=kernel, **check_options)
        return X, y, (MEMORY if approximation is None else BLOCKS)
    if is_distributed(X):
        if approximation is not None:
            # the landmark passes map over the chunks; their arguments are checked here
            check_landmark_options(estimator, X.shape[0], kernel, approximation)
        X, y = validate_dask_data(estimator, X, y, y_required=y_required)
        return X, y, CLUSTER
    if is_dask_array(y):
        y = y.compute()        # numpy X: the target is gathered, checked with X below
    if approximation is not None:
        X, y = landmark_data(estimator, X, y, kernel, multi_output=multi_output,
                             approximation=approximation)
        return X, y, BLOCKS
    options = {"dtype": np.float64, "ensure_min_samples": 2, **check_options}
    y_numeric = options.pop("y_numeric", False)
    if y is None and not y_required:
        X = validate_data(estimator, X, **options)
    else:
        X, y = validate_data(estimator, X, y, multi_output=multi_output, y_numeric=y_numeric,
                             **options)
    return check_scale(X), y, MEMORY


def project_data(estimator, X, W):
    """``X @ W`` for a fitted estimator's ``transform``: a lazy map over the row
    blocks of a dask X, else X checked against the fit (features, finite)."""
    if is_dask_array(X):
        return project_dask(X, W)
    if is_sparse(X):
        return sparse_project(estimator, X, W)
    X = validate_data(estimator, X, reset=False, dtype=np.float64)
    return X @ W


def resolve(X: Any, approximation: Approximation | None = None, *,
            dtype: Any = None) -> ExactPasses | LandmarkPasses | DaskPasses | SparsePasses:
    """The W-step's provider for X: the landmark (or random-feature) passes of
    ``approximation``, whose passes are sums over row blocks (of an array or
    memmap, or of a Dask array's chunks on its cluster); the exact Dask passes
    for a row-chunked dask X; else the exact passes in memory. ``dtype``: the
    precision of the exact passes (None: X's own; an approximation has its own)."""
    if approximation is not None:
        if not isinstance(approximation, Approximation):
            raise TypeError(f"approximation must be an ikdr.passes.landmarks.Approximation or "
                            f"None, got {type(approximation).__name__}")
        return LandmarkPasses(approximation)
    if is_distributed(X):
        return DaskPasses(dtype)
    if is_sparse(X):
        return SparsePasses(dtype)
    return ExactPasses(dtype)


def resolve_clustering(X, landmarks=None, *, n_landmarks=None, dtype=None, random_state=None):
    """The clustering alternation's provider for X: with ``n_landmarks`` (not None:
    "auto" or a count), Nystrom landmarks (:class:`ClusteringLandmarks`, in float32
    when X or ``dtype`` is float32; its sparse twin for sparse X); ``landmarks`` (a
    provider already made: a run on a subset of X's columns keeps its kind); the Dask
    provider for a row-chunked dask X; the sparse provider for sparse X
    (``random_state`` seeds its start basis); else the exact one."""
    if n_landmarks is not None:
        if landmarks is not None:
            raise TypeError("resolve_clustering: give landmarks or n_landmarks, not both")
        single = X.dtype == np.float32 or (dtype is not None and
                                           np.dtype(dtype) == np.dtype(np.float32))
        landmarks = ClusteringLandmarks(n_landmarks, dtype=np.float32 if single else None,
                                        random_state=random_state)
    if isinstance(landmarks, ClusteringLandmarks) and is_sparse(X) and \
            not isinstance(landmarks, SparseClusteringLandmarks):
        return SparseClusteringLandmarks.like(landmarks)
    if isinstance(landmarks, (ClusteringLandmarks, ClusteringPasses, ExactClustering)):
        if is_distributed(X) and isinstance(landmarks, ClusteringLandmarks):
            raise ValueError("Nystrom landmarks of a dask X are not supported; pass "
                             "approximation=None (the exact passes are distributed)")
        return landmarks
    if landmarks is not None:
        raise TypeError(f"landmarks must be a ClusteringLandmarks or None, got "
                        f"{type(landmarks).__name__}")
    if is_distributed(X):
        return ClusteringPasses()
    if is_sparse(X):
        return SparseClustering(dtype, random_state)
    return ExactClustering(dtype)
