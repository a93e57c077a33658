"""How the passes of a fit are computed: the providers of the solver's problem.

Each provider implements the solver's protocols
(:class:`ikdr.solver.problem.Provider` and the problem it makes,
:class:`ikdr.solver.problem.KernelProblem`) without importing the solver:

* :mod:`ikdr.passes.problem`: what the providers' problems share;
* :mod:`ikdr.passes.exact`: exact passes in memory;
* :mod:`ikdr.passes.sparse`: exact passes on ``scipy.sparse`` rows, by
  products only;
* :mod:`ikdr.passes.landmarks` (with :mod:`~ikdr.passes.factors` and
  :mod:`~ikdr.passes.rows`): Nystrom landmarks and random features, X read
  in row blocks (a memmap is never loaded whole);
* :mod:`ikdr.passes.dask`: every pass as Dask tasks over row blocks;
* :mod:`ikdr.passes.choice`: :func:`resolve` and :func:`resolve_clustering`,
  the one place that builds them (a clustering provider, which adds the
  U-step, builds its W-step's provider itself).

The algorithms above the solver use this package's names only: the
providers through :func:`resolve` and :func:`resolve_clustering`, the
landmark settings (:class:`~ikdr.passes.landmarks.Approximation`), the
"auto" landmark rule with its costs, and :func:`~ikdr.passes.rows.validated_rows`
(an estimator's entry check of X, not repeated by the fits it makes on X).
"""
from .choice import BLOCKS, CLUSTER, MEMORY, fit_data, project_data, resolve, resolve_clustering
from .factors import check_kernel_approximable
from .landmarks import (AUTO_MAX, AUTO_START, AUTO_TOL, RFF_DEFAULT, Approximation, auto_landmarks,
                        landmark_step_costs)
from .rows import validated_rows

__all__ = ["resolve", "resolve_clustering", "fit_data", "project_data", "MEMORY", "BLOCKS",
           "CLUSTER", "Approximation", "auto_landmarks", "check_kernel_approximable",
           "landmark_step_costs", "AUTO_START", "AUTO_MAX", "AUTO_TOL", "RFF_DEFAULT",
           "validated_rows"]
