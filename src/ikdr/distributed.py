r"""ikdr beyond one machine: the passes of ISM and Nystrom KSVD as Dask tasks.

Pass a row-chunked ``dask.array.Array`` to ``ISM.fit``, :func:`ikdr.ism`, the
clustering estimators (``ISMClustering``, ``SemiSupervisedISM``, ``KDAC``),
:func:`ikdr.alternate`, or ``KernelSVD(solver="nystrom").fit`` / ``transform``:
:func:`ikdr.passes.resolve` then picks the Dask provider, and every expensive
pass runs as Dask tasks over block pairs of rows while W, the small
eigenproblems and the trust region stay on the client (docs/distributed.md).

This module is the public face of :mod:`ikdr.passes.dask_data` (the data on
the cluster and its tasks), :mod:`ikdr.passes.dask` (the problem, the provider
and the clustering provider) and of
:mod:`ikdr.ksvd.dask_blocks` (KernelSVD's blocks); Dask is an optional
dependency (``pip install "dask[array]" distributed``, or the ``dask`` extra), imported only when such a fit runs.

Requirements on X: 2-D, chunked along rows only (one column block), known
chunk sizes, all row chunks of the same size except a smaller last one, and
a chunk small enough for the workers' memory limit (checked before any task
is submitted; the error names the chunk size to use).
"""
from .ksvd.dask_blocks import KSVDBlocks, ksvd_transform, ksvd_transform_columns
from .passes.dask import (ClusteringPasses, DaskPasses, DaskProblem, Projected, fit_kernel, phi0,
                          project)
from .passes.dask_data import (DaskData, as_data, check_memory, check_row_chunked, check_target,
                               is_dask_array, is_distributed, max_chunk_rows, task_bytes,
                               validate_data)

#: the W-step provider's name in ikdr 0.1
Passes = DaskPasses

__all__ = ["is_dask_array", "is_distributed", "DaskData", "DaskProblem", "DaskPasses", "Passes",
           "ClusteringPasses", "Projected", "as_data", "fit_kernel", "phi0", "task_bytes",
           "max_chunk_rows", "check_memory", "check_row_chunked", "check_target",
           "validate_data", "project", "KSVDBlocks", "ksvd_transform", "ksvd_transform_columns"]
