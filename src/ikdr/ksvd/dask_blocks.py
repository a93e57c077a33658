r"""KernelSVD(solver="nystrom") on a row-chunked Dask array: the blocks as tasks.

The rows X stay on the cluster (:class:`ikdr.distributed.DaskData`); the
landmark columns ``G[:, J]`` are products mapped over the row blocks, and the
out-of-sample maps of new rows or columns are maps over blocks too. Dask is
imported only when such a fit runs.
"""
from __future__ import annotations

import numpy as np

from ..kernels import Kernel
from ..passes.dask_data import check_row_chunked, is_dask_array, require_dask
from .blocks import Centered, DenseBlocks

__all__ = ["KSVDBlocks", "ksvd_transform", "ksvd_transform_columns"]


def delayed(obj, pure=True):
    """``dask.delayed`` (Dask is optional: imported when a distributed fit runs)."""
    require_dask()
    from dask import delayed as dask_delayed

    return dask_delayed(obj, pure=pure)


def _ksvd_rows_task(X_I, Z, J, params, v):
    """Rows I of ``G[:, J] v`` (SNE rows normalised over all of Z)."""
    return DenseBlocks(X_I, Z, *params).block(None, J) @ v


def _ksvd_new_rows_task(X_I, Z, params, V, offset):
    """Row embeddings ``G(X_I, Z) V - offset`` of new rows (offset: centering)."""
    return DenseBlocks(X_I, Z, *params).new_rows(X_I) @ V - offset


def _ksvd_new_columns_task(X_I, U_I, Z, params, Znew):
    """Block I's share ``G(X_I, Znew)^T U_I`` of new columns' embeddings (training normalisers)."""
    return DenseBlocks(X_I, Z, *params).new_columns(Znew).T @ U_I, 0.0


class LandmarkColumns:
    """``G[:, J]`` (N x m) of a distributed row set, never gathered: its landmark
    rows ``[I]`` come to the client, its products ``@ v`` map over row blocks."""

    def __init__(self, blocks, J):
        self.blocks, self.J = blocks, np.asarray(J)
        self.shape = (blocks.n, len(self.J))

    def __getitem__(self, I):
        return self.blocks.block(I, self.J)

    def __matmul__(self, v):
        b = self.blocks
        Zd, Jd, pd, vd = (delayed(b.Z, pure=True), delayed(self.J, pure=True),
                          delayed(b.params, pure=True), delayed(np.asarray(v), pure=True))
        parts = b.data.map_blocks(_ksvd_rows_task, Zd, Jd, pd, vd)
        return np.concatenate(parts)


class KSVDBlocks:
    """Blocks of G between distributed rows X (a :class:`DaskData`) and in-memory
    columns Z, for the asymmetric Nystrom method: ``block(None, J)`` is lazy
    (:class:`LandmarkColumns`), ``block(I, cols)`` gathers the landmark rows
    X[I] and evaluates on the client. Z and the landmarks are shipped to each
    worker once per fit; the row blocks of X never leave the workers."""

    def __init__(self, data, Z, kernel, gamma, degree, callable_kernel=None):
        if isinstance(callable_kernel, Kernel):
            # in memory its data-dependent parameters are fitted on all rows and columns
            if not callable_kernel._is_resolved():
                raise ValueError(f"the kernel {callable_kernel!r} fits its parameters to all "
                                 "of X and Z; on a dask X give them (e.g. Gaussian(sigma=1.0))")
            callable_kernel = callable_kernel.fit(Z).matrix
        self.data, self.Z = data, Z
        self.n, self.m = data.shape[0], Z.shape[0]
        self.params = (kernel, gamma, degree, callable_kernel)
        self._dense = DenseBlocks

    def block(self, rows=None, cols=None):
        if rows is None:
            if cols is None:
                raise ValueError("the whole n x m kernel matrix of distributed rows is never "
                                 "formed; use solver='nystrom'")
            return LandmarkColumns(self, cols)
        return self._dense(self.data.take(rows), self.Z, *self.params).block(None, cols)

    def new_rows(self, Xnew):
        """G between in-memory new rows and the training columns (``transform`` of a
        numpy array on a model fitted on dask rows)."""
        return self._dense(Xnew, self.Z, *self.params).new_rows(Xnew)

    operator = None


def ksvd_transform(model, X):
    r"""New rows' embeddings :math:`G(X, Z) V` as a lazy dask array (map over X's row blocks)."""
    check_row_chunked(X)
    base = model._base()
    if not isinstance(base, (DenseBlocks, KSVDBlocks)) or model._compat_map is not None:
        raise ValueError("transform of a dask array needs a KernelSVD fitted on dense point "
                         "sets without a compat map; pass a numpy array")
    if X.shape[1] != base.Z.shape[1]:
        raise ValueError(f"X has {X.shape[1]} features, but KernelSVD was fitted with "
                         f"{base.Z.shape[1]}")
    params = (base.kernel, base.gamma, base.degree, base.callable_kernel) \
        if not isinstance(base, KSVDBlocks) else base.params
    V = model.right_vectors_
    offset = model._blocks.col_mean @ V if isinstance(model._blocks, Centered) else \
        np.zeros(V.shape[1])
    return X.astype(np.float64).map_blocks(_ksvd_new_rows_task, base.Z, params, V, offset,
                                           chunks=(X.chunks[0], (V.shape[1],)), dtype=np.float64)


def ksvd_transform_columns(model, Znew):
    r"""New columns' embeddings :math:`\sum_I G(X_I, z)^T U_I` of a model fitted on
    distributed rows: a map over the training row blocks, reduced in a fixed order."""
    base = model._base()
    Znew = model._check_points(Znew.compute() if is_dask_array(Znew) else Znew, "Z",
                               accept_sparse=False)
    if Znew.shape[1] != base.Z.shape[1]:
        raise ValueError(f"Z has {Znew.shape[1]} features, but KernelSVD was fitted with "
                         f"{base.Z.shape[1]}")
    U_blocks = base.data.row_blocks_of(model.left_vectors_)
    out, _ = base.data.map_reduce(_ksvd_new_columns_task, U_blocks,
                                  shared=(delayed(base.Z, pure=True), base.params,
                                          delayed(np.ascontiguousarray(Znew), pure=True)))
    return out


