r"""Rows on a Dask cluster: the checks, the tasks and :class:`DaskData`.

A row-chunked ``dask.array.Array`` X is checked before any task is submitted
(structure, chunk sizes, the workers' memory limit), then persisted on the
workers as :class:`DaskData`, whose ``reduce_pairs`` / ``product`` /
``map_reduce`` run one pass as tasks over block pairs or row blocks and sum
the partials in a fixed order (identical bits on every run). Dask is an
optional dependency, imported when such data arrive.
"""
from __future__ import annotations

import numbers
import sys

import numpy as np

from .._utils.validation import check_scale
from ..gamma import Gamma
from .rows import MemoryRows, sum_parts
from .sparse_rows import SparseRows, is_sparse

__all__ = ["is_dask_array", "is_distributed", "require_dask", "DaskData", "as_data", "check_row_chunked",
           "task_bytes", "max_chunk_rows", "check_memory", "check_target", "validate_data",
           "lowrank_task", "degree_task", "MEMORY_FRACTION", "DaskRows", "row_source", "take_columns"]

#: fraction of a worker's memory limit that stored blocks plus running tasks may use
#: (Dask starts spilling at 60% by default)
MEMORY_FRACTION = 0.6


def is_dask_array(X):
    """Whether X is a ``dask.array.Array`` (False without importing dask when it is absent)."""
    mod = sys.modules.get("dask.array")
    return mod is not None and isinstance(X, mod.Array)


def is_distributed(X):
    """Whether X is a dask array or data already on the cluster (:class:`DaskData`)."""
    return isinstance(X, DaskData) or is_dask_array(X)


def require_dask():
    try:
        import dask  # noqa: F401
        import dask.array  # noqa: F401
    except ImportError as exc:  # pragma: no cover - exercised only without dask
        raise ImportError("distributed fits need dask: pip install 'dask[array]' distributed "
                          "(or, in an ikdr checkout, pip install '.[dask]')") from exc


def _client():
    """The active ``dask.distributed.Client`` or None."""
    if "distributed" not in sys.modules:
        return None
    from distributed import default_client

    try:
        return default_client()
    except ValueError:
        return None


# ---------------------------------------------------------------- validation
def check_row_chunked(X, name="X"):
    """Structural checks of a dask array, before any task is submitted.

    Returns the row chunk sizes. Raises ValueError naming the problem: not 2-D,
    unknown chunk sizes, chunked along columns, row chunks of unequal size.
    """
    if X.ndim != 2:
        raise ValueError(f"{name} must be a 2-D dask array (n_samples x n_features), got "
                         f"{X.ndim}-D with shape {X.shape}")
    rows, cols = X.chunks
    if any(not isinstance(c, numbers.Integral) or np.isnan(c) for c in rows + cols):
        raise ValueError(f"{name} has unknown chunk sizes (NaN, e.g. after boolean indexing); "
                         f"call {name}.compute_chunk_sizes() first")
    if len(cols) != 1:
        raise ValueError(f"{name} is chunked along its columns (column chunks {cols}); "
                         f"ikdr needs row blocks holding whole samples: "
                         f"{name}.rechunk({{0: {rows[0]}, 1: -1}})")
    if X.shape[0] < 2:
        raise ValueError(f"{name} needs at least 2 samples, got {X.shape[0]}")
    if len(rows) > 1 and (len(set(rows[:-1])) > 1 or rows[-1] > rows[0]):
        raise ValueError(f"{name} has row chunks of unequal size {rows}: a task's memory is "
                         f"bounded by the chunk size, so all chunks but a smaller last one must "
                         f"be equal; rechunk, e.g. {name}.rechunk({{0: {max(rows)}, 1: -1}})")
    return tuple(int(c) for c in rows)


def task_bytes(chunk_rows, n_features, rank=16, width=None):
    """Peak bytes of one pair task: two row blocks of X, their projections,
    right-hand sides and Gamma factor rows, and the task's d x k partial."""
    c, d = int(chunk_rows), int(n_features)
    k = d if width is None else int(width)
    return 8 * (2 * c * d + 4 * c * k + 2 * c * rank + c * k + d * k) + (8 << 20)


def max_chunk_rows(n_samples, n_features, memory_limit, n_workers, threads, rank=16):
    """The largest chunk (rows) whose tasks and stored blocks fit ``MEMORY_FRACTION``
    of a worker's memory limit (0 when even the stored data does not fit)."""
    stored = 8 * n_samples * (n_features + rank) / max(1, n_workers)
    free = MEMORY_FRACTION * memory_limit - stored - threads * (8 << 20)
    per_row = threads * 8 * (2 * n_features + 5 * n_features + 2 * rank)
    return max(0, int(free // per_row))


def check_memory(chunk_rows, n_samples, n_features, name="X", rank=16):
    """Refuse, before any task runs, a chunk size whose tasks would exceed the
    workers' memory limit; the error names the chunk size to use."""
    client = _client()
    if client is None:
        return
    workers = client.scheduler_info(n_workers=-1)["workers"] if _accepts_n_workers(client) \
        else client.scheduler_info()["workers"]
    limits = [w.get("memory_limit") or 0 for w in workers.values()]
    if not limits or min(limits) <= 0:
        return  # no limit set
    limit = min(limits)
    threads = max(w.get("nthreads", 1) for w in workers.values())
    stored = 8 * n_samples * (n_features + rank) / len(workers)
    need = threads * task_bytes(chunk_rows, n_features, rank) + stored
    if need > MEMORY_FRACTION * limit:
        best = max_chunk_rows(n_samples, n_features, limit, len(workers), threads, rank)
        if best < 1:
            raise ValueError(
                f"{name} ({n_samples} x {n_features}) does not fit the cluster: each of the "
                f"{len(workers)} workers would store {stored / 2**20:.0f} MiB against a memory "
                f"limit of {limit / 2**20:.0f} MiB; add workers or memory")
        raise ValueError(
            f"chunks of {chunk_rows} rows are too large for the workers' memory limit "
            f"({limit / 2**20:.0f} MiB, {threads} thread(s) each): a pair task would need about "
            f"{need / 2**20:.0f} MiB; use chunks of at most {best} rows: "
            f"{name}.rechunk({{0: {best}, 1: -1}})")


def _accepts_n_workers(client):
    import inspect

    return "n_workers" in inspect.signature(client.scheduler_info).parameters


def check_target(y, n_samples, name="y"):
    """A numpy target of ``n_samples`` rows from a dask or numpy y (length checked first)."""
    if y is None:
        return None
    n_y = y.shape[0] if hasattr(y, "shape") else len(y)
    if isinstance(n_y, float) and np.isnan(n_y):
        raise ValueError(f"{name} has an unknown length (NaN chunks); call "
                         f"{name}.compute_chunk_sizes() first")
    if n_y != n_samples:
        raise ValueError(f"X and {name} have different lengths: X has {n_samples} samples, "
                         f"{name} has {n_y}")
    return np.asarray(y.compute() if is_dask_array(y) else y)


def validate_data(estimator, X, y=None, *, y_required=True, name_y="y"):
    """The estimators' entry check for dask input (the counterpart of scikit-learn's
    ``validate_data``): structure, lengths and memory before any task, then the
    data on the cluster. Returns ``(DaskData, numpy y or None)`` and sets
    ``n_features_in_``. A numpy X with a dask y gathers y and validates as usual.
    """
    if not is_distributed(X):
        from sklearn.utils.validation import validate_data as sk_validate

        y = None if y is None else np.asarray(y.compute() if is_dask_array(y) else y)
        if y is None:
            X = sk_validate(estimator, X, ensure_min_samples=2, dtype=np.float64)
        else:
            X, y = sk_validate(estimator, X, y, ensure_min_samples=2, dtype=np.float64,
                               multi_output=True, y_numeric=False)
        return check_scale(X), y
    require_dask()
    if is_dask_array(X):
        check_row_chunked(X)
    n = int(X.shape[0])
    if y is None and y_required:
        raise ValueError(f"{type(estimator).__name__} requires {name_y} to be passed, but the "
                         f"target {name_y} is None")
    y = check_target(y, n, name_y)          # the length first, then y gathered
    data = as_data(X)
    estimator.n_features_in_ = data.shape[1]
    return data, y


# ---------------------------------------------------------------- tasks (run on the workers)
def _pair_task(kernel, W, V, mode, block_I, block_J, scale):
    """One block pair (rows I, columns J) of a pass, reduced inside the task.

    ``block_I``, ``block_J``: ``(X, Gamma factor rows or None, right-hand side
    rows or None)`` of each block. ``mode``: "objective" (value mode, no
    right-hand side), "phi" (gradient mode, right-hand side X V or X itself
    when V is None: returns ``X_I^T (G R)_I``, d x k) or "product" (value mode
    with the client's right-hand side blocks R: returns the n_I x k rows of
    (Gamma o K) R). Returns ``(array or None, row sums)``; the row sums are
    summed to a scalar except in "product" mode (degrees).
    """
    (X_I, g_I, R_I), (X_J, g_J, R_J) = block_I, block_J
    Z_I = X_I if W is None else np.ascontiguousarray(X_I @ W)
    Z_J = X_J if W is None else np.ascontiguousarray(X_J @ W)
    gamma_I = None if g_I is None else Gamma(g_I, scale)
    gamma_J = None if g_J is None else Gamma(g_J, scale)
    if mode == "phi":
        R_J = X_J if V is None else np.ascontiguousarray(X_J @ V)
        R_I = X_I if V is None else np.ascontiguousarray(X_I @ V)
        GR, sums = kernel.pair_product(Z_I, Z_J, R_J, gamma_I, gamma_J, gradient=True,
                                       R_rows=R_I, n_threads=1)
        return np.asarray(X_I.T @ GR, dtype=np.float64), float(np.sum(sums))
    if mode == "objective":
        _, sums = kernel.pair_product(Z_I, Z_J, None, gamma_I, gamma_J, n_threads=1)
        return None, float(np.sum(sums))
    if mode == "product":
        KR, sums = kernel.pair_product(Z_I, Z_J, R_J, gamma_I, gamma_J, n_threads=1)
        return (None if KR is None else np.asarray(KR, dtype=np.float64)), sums
    raise ValueError(f"unknown pass mode {mode!r}")


def _sum_in_order(*parts):
    """Sum ``(array, value)`` partials left to right (a fixed order: identical bits)."""
    arr, val = parts[0]
    arr = None if arr is None else arr.copy()
    val = val.copy() if isinstance(val, np.ndarray) else val
    for a, v in parts[1:]:
        if arr is not None:
            arr += a
        val = val + v
    return arr, val


def lowrank_task(X_I, g_I):
    """Per-block pieces of Phi_0: ``G_I^T X_I`` (r x d) and ``G_I^T 1`` (r)."""
    return g_I.T @ X_I, g_I.sum(axis=0)


def degree_task(X_I, g_I, scale, g1):
    """``X_I^T diag(Gamma 1)_I X_I`` with ``(Gamma 1)_I = G_I diag(s) (G^T 1)``."""
    deg = g_I @ (scale * g1)
    return X_I.T @ (deg[:, None] * X_I), 0.0


def _stats_task(X_I):
    return float(np.max(np.abs(X_I))) if X_I.size else 0.0, bool(np.all(np.isfinite(X_I)))


# ---------------------------------------------------------------- the data on the cluster
class DaskData:
    """A row-chunked data set held on the cluster: the blocks of X (persisted),
    and the map / reduce over blocks and block pairs that every pass uses.

    Build it with :func:`as_data` (validates, casts, persists). ``shape``,
    ``dtype`` and ``ndim`` are those of X; nothing is gathered to the client.
    """

    def __init__(self, array, row_chunks):
        self.array = array
        self.row_chunks = tuple(row_chunks)
        self.shape = tuple(int(s) for s in array.shape)
        self.dtype = np.dtype(array.dtype)
        self.ndim = 2
        self.blocks = list(array.to_delayed().ravel())
        self._gamma_cache = {}

    # -- construction helpers
    def astype(self, dtype, copy=False):
        """The same data in float64 or float32 (cast on the workers, persisted)."""
        if np.dtype(dtype) == self.dtype:
            return self
        return DaskData(self.array.astype(dtype).persist(), self.row_chunks)

    def columns(self, index):
        """The columns ``index`` of the data, kept on the cluster (persisted)."""
        # C-contiguous blocks, as the data's own: a block's layout decides the BLAS
        # path of the tasks' small products, and with it their last bits
        index = np.asarray(index)
        picked = self.array.map_blocks(_pick_columns, index, dtype=self.dtype,
                                       chunks=(self.row_chunks, (index.size,)))
        return DaskData(picked.persist(), self.row_chunks)

    def __len__(self):
        return self.shape[0]

    def row_blocks_of(self, A):
        """A client array with n rows as delayed blocks with X's row chunks (persisted;
        the blocks keep their lineage, so a lost worker's copy is recomputed)."""
        import dask.array as da

        A = np.ascontiguousarray(A, dtype=self.dtype)
        chunks = (self.row_chunks,) + tuple((s,) for s in A.shape[1:])
        held = da.from_array(A, chunks=chunks).persist()
        blocks = list(held.to_delayed().ravel())
        # the delayed blocks do not keep the persisted futures alive: the list does
        return _HeldBlocks(blocks, held)

    def gamma_blocks(self, gamma):
        """(factor blocks, scale) of a factored Gamma, shipped once per Gamma."""
        if gamma is None:
            return [None] * len(self.blocks), None
        key = id(gamma)
        hit = self._gamma_cache.get(key)
        if hit is not None and hit[0] is gamma:
            return hit[1], hit[2]
        if not gamma.is_factored:
            raise ValueError("distributed passes need a factored Gamma (G diag(s) G^T); "
                             "a dense n x n Gamma cannot be split into row blocks")
        factor, scale, _ = gamma.arrays(self.dtype)
        blocks = self.row_blocks_of(factor)
        scale = np.ones(factor.shape[1]) if scale is None else np.asarray(scale, np.float64)
        self._gamma_cache = {key: (gamma, blocks, scale)}  # keep one: Gammas change per outer step
        return blocks, scale

    # -- the two shapes of a pass
    def _compute(self, *graphs):
        import dask

        return dask.compute(*graphs)

    def reduce_pairs(self, kernel, W, V, mode, gamma=None):
        """Sum over all block pairs of :func:`_pair_task`, per row block in the
        order of J, then over row blocks by a fixed binary tree.
        Returns ``(d x k array or None, scalar)``."""
        from dask import delayed

        rows = self._pair_rows(kernel, W, V, mode, gamma, None)
        return self._compute(_tree(rows, delayed(_sum_in_order, pure=True)))[0]

    def product(self, kernel, W, R, gamma=None):
        r""":math:`(\Gamma \circ K_{XW}) R` (n x k, on the client) and the row sums
        (n,) by value-mode pair tasks; W None: the kernel of X itself; R None:
        row sums only (degrees)."""
        R_blocks = [None] * len(self.blocks) if R is None else self.row_blocks_of(R)
        rows = self._pair_rows(kernel, W, None, "product", gamma, R_blocks)
        parts = self._compute(*rows)
        KR = None if R is None else np.concatenate([p[0] for p in parts])
        return KR, np.concatenate([p[1] for p in parts])

    def _pair_rows(self, kernel, W, V, mode, gamma, R_blocks):
        from dask import delayed

        g_blocks, scale = self.gamma_blocks(gamma)
        task = delayed(_pair_task, pure=True)
        add = delayed(_sum_in_order, pure=True)
        # kernel, W, V enter the graph once (one key each), not once per task
        kd, Wd, Vd = (delayed(kernel, pure=True),
                      None if W is None else delayed(np.asarray(W, self.dtype), pure=True),
                      None if V is None else delayed(np.asarray(V, self.dtype), pure=True))
        R_blocks = R_blocks or [None] * len(self.blocks)
        rows = []
        for i, X_I in enumerate(self.blocks):
            block_I = (X_I, g_blocks[i], R_blocks[i])
            parts = [task(kd, Wd, Vd, mode, block_I, (X_J, g_blocks[j], R_blocks[j]), scale)
                     for j, X_J in enumerate(self.blocks)]
            rows.append(add(*parts))
        return rows

    def map_reduce(self, fn, *per_block, shared=()):
        """``sum_I fn(X_I, per_block[0][I], ..., *shared)`` with the fixed tree order."""
        from dask import delayed

        task = delayed(fn, pure=True)
        parts = [task(X_I, *(b[i] for b in per_block), *shared) for i, X_I in enumerate(self.blocks)]
        return self._compute(_tree(parts, delayed(_sum_in_order, pure=True)))[0]

    def map_blocks(self, fn, *shared):
        """``[fn(X_I, *shared) for I]`` computed on the workers, gathered in order."""
        from dask import delayed

        task = delayed(fn, pure=True)
        return list(self._compute(*[task(X_I, *shared) for X_I in self.blocks]))

    def __getitem__(self, index):
        """Rows ``index`` (an integer array) gathered to the client; see :meth:`take`."""
        return self.take(index)

    def take(self, index):
        """The rows ``index`` (a small sample) gathered to the client, in that order."""
        return np.asarray(self.array[np.asarray(index)].compute())

    def compute(self):
        """All of X on the client (small data only)."""
        return np.asarray(self.array.compute())

    def __array__(self, dtype=None, copy=None):
        """All of X on the client (only the small samples of the kernel fits ask)."""
        out = self.compute()
        return out if dtype is None else out.astype(dtype)

    def __repr__(self):
        return f"DaskData(shape={self.shape}, dtype={self.dtype}, row_chunks={self.row_chunks[0]})"


class _HeldBlocks(list):
    """Delayed blocks of a persisted array, holding the array (and so its futures)."""

    def __init__(self, blocks, held):
        super().__init__(blocks)
        self.held = held


def _tree(parts, add):
    """Binary tree reduction of delayed partials in their order (fixed bits)."""
    parts = list(parts)
    while len(parts) > 1:
        nxt = [add(parts[k], parts[k + 1]) for k in range(0, len(parts) - 1, 2)]
        if len(parts) % 2:
            nxt.append(parts[-1])
        parts = nxt
    return parts[0]


def as_data(X, name="X", *, rank=16):
    """A :class:`DaskData` from a row-chunked dask array (None for anything else).

    Checks structure (and the workers' memory limit) before any task is
    submitted, then casts float32 / float64 on the workers, persists the
    blocks and checks finiteness and scale in one map over blocks.
    """
    if isinstance(X, DaskData):
        return X
    if not is_dask_array(X):
        return None
    require_dask()
    rows = check_row_chunked(X, name)
    n, d = (int(s) for s in X.shape)
    check_memory(rows[0], n, d, name, rank=rank)
    if X.dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
        if X.dtype.kind not in "biuf":
            raise ValueError(f"{name} must be numeric, got dtype {X.dtype}")
        X = X.astype(np.float64)
    data = DaskData(X.persist(), rows)
    stats = data.map_blocks(_stats_task)
    if not all(ok for _, ok in stats):
        raise ValueError(f"Input {name} contains NaN or infinity.")
    check_scale(np.array([max(m for m, _ in stats)], dtype=data.dtype), name)
    return data


class DaskRows:
    """The rows of a :class:`DaskData`, visited one row chunk at a time on the
    workers: the twin of :class:`ikdr.passes.rows.MemoryRows` (same methods),
    so a pass written as a sum over row blocks runs on a cluster unchanged.
    The chunk partials are summed by a binary tree in chunk order (identical
    bits on every run) and only they come back to the client."""

    #: the compiled sweeps read the workers' dense chunks
    native_sweeps = True

    def __init__(self, data):
        self.data = data
        self.shape = data.shape
        self.dtype = data.dtype
        self.block_rows = None

    def slices(self, width=0):
        """The row chunks of the Dask array, as slices (the chunking is the data's)."""
        bounds = np.cumsum((0,) + tuple(self.data.row_chunks))
        return [slice(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]

    def map_reduce(self, fn, block_args, shared=(), start=None, width=0, whole=False):
        """``start + sum_I fn(X_I, block_args(slice_I), *shared)`` over the chunks, on the
        workers (``whole`` is :class:`ikdr.passes.rows.MemoryRows`'s: a chunk is
        always one call here)."""
        require_dask()
        from dask import delayed     # optional: imported only when rows are on a cluster

        task = delayed(fn, pure=True)
        shared = tuple(delayed(s, pure=True) for s in shared)
        parts = [task(X_I, block_args(sl), *shared)
                 for X_I, sl in zip(self.data.blocks, self.slices())]
        total = self.data._compute(_tree(parts, delayed(sum_parts, pure=True)))[0]
        return sum_parts(start, total)

    def take(self, index):
        """The rows ``index`` gathered to the client (float64)."""
        return np.asarray(self.data.take(index), dtype=np.float64)

    def project(self, W, dtype):
        """XW (n x q) in ``dtype``, gathered to the client (q columns only)."""
        parts = self.data.map_blocks(_project_block, np.asarray(W, dtype=dtype), dtype)
        return np.vstack(parts)


def _project_block(X_I, W, dtype):
    return np.asarray(X_I, dtype=dtype) @ W


def row_source(X, block_rows=None):
    """The row source of X for passes written as sums over row blocks:
    :class:`DaskRows` for data on a cluster, else :class:`ikdr.passes.rows.MemoryRows`."""
    if isinstance(X, DaskData):
        return DaskRows(X)
    if is_sparse(X):
        return SparseRows(X, block_rows)
    return MemoryRows(X, block_rows)


def _pick_columns(block, index):
    """A new C-contiguous block of the columns ``index`` (one task per row block)."""
    return np.ascontiguousarray(block[:, index])


def take_columns(X, index):
    """The columns ``index`` of X wherever its rows live: on the cluster for
    :class:`DaskData`, else an in-memory array read by row blocks (a memmap is
    never loaded whole, only the kept columns are)."""
    index = np.asarray(index)
    if isinstance(X, DaskData):
        return X.columns(index)
    if is_sparse(X):            # CSR columns, O(nnz); X never densified
        return X if np.array_equal(index, np.arange(X.shape[1])) else X[:, index]
    if index.size == X.shape[1] and np.array_equal(index, np.arange(X.shape[1])):
        return X
    out = np.empty((X.shape[0], index.size), dtype=X.dtype)
    for sl in MemoryRows(X).slices():
        out[sl] = np.asarray(X[sl])[:, index]
    return out
