"""The ISM solver: one driver for every paradigm, its steps, trust region and certificate.

* :mod:`ikdr.solver.driver`: :func:`solve_ism` and :func:`solve` (validation,
  the start, the plain fixed point and the safeguard, the stopping rules);
* :mod:`ikdr.solver.steps`: one plain step (dense, hybrid or matrix-free Phi)
  and its cost model;
* :mod:`ikdr.solver.trust_region`: the Riemannian trust-region Newton phase;
* :mod:`ikdr.solver.certificate`: gradient, eigengap and Hessian certificate;
* :mod:`ikdr.solver.approximate`: the landmark fits with the "auto" rule and
  the exact polish;
* :mod:`ikdr.solver.importances`: feature importances from W.

The solver receives a pass provider (:func:`ikdr.passes.resolve`) and never
chooses one.
"""
