"""How the passes of a fit are computed: one protocol, three providers.

* :mod:`ikdr.passes.problem`: the W-step's problem, :class:`KernelProblem`
  (exact passes), which the other providers' problems subclass;
* :mod:`ikdr.passes.exact`: exact passes in memory;
* :mod:`ikdr.passes.landmarks` (with :mod:`~ikdr.passes.factors` and
  :mod:`~ikdr.passes.rows`): Nystrom landmarks and random features, X read
  in row blocks (a memmap is never loaded whole);
* :mod:`ikdr.passes.dask`: every pass as Dask tasks over row blocks;
* :mod:`ikdr.passes.choice`: :func:`resolve`, the one function that picks.
"""
from .choice import BLOCKS, CLUSTER, MEMORY, fit_data, project_data, resolve, resolve_clustering

__all__ = ["resolve", "resolve_clustering", "fit_data", "project_data", "MEMORY", "BLOCKS", "CLUSTER"]
