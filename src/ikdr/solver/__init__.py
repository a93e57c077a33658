"""The ISM solver: one driver for every paradigm, its steps, trust region and certificate.

* :mod:`ikdr.solver.options`: :class:`ISMOptions`, the options of one fit,
  checked once;
* :mod:`ikdr.solver.problem`: what the solver works on (the protocols
  :class:`KernelProblem` and :class:`Provider`) and the passes it counts;
* :mod:`ikdr.solver.driver`: :func:`solve_ism` and :func:`solve` (the start,
  the plain fixed point and the safeguard, the stopping rules);
* :mod:`ikdr.solver.steps`: one plain step (dense, hybrid or matrix-free Phi)
  and its cost model;
* :mod:`ikdr.solver.mixing`: Pulay mixing of the plain steps;
* :mod:`ikdr.solver.trust_region`: the Riemannian trust-region Newton phase;
* :mod:`ikdr.solver.certificate`: gradient, eigengap and Hessian certificate.

The solver receives a pass provider (:func:`ikdr.passes.resolve`) and
imports nothing of :mod:`ikdr.passes`: the providers implement its
protocols. Fits over several providers (the landmark "auto" rule and the
exact polish) are :mod:`ikdr.reduction.approximate`, above it.
"""
