"""The options of one ISM fit, made and checked once.

:class:`ISMOptions` holds every setting of :func:`ikdr.ism` that is not data
(X, Gamma, the kernel, the warm start) nor the choice of pass provider
(``approximation``, ``dtype``: :func:`ikdr.passes.resolve`). :func:`ikdr.ism`
and the estimators build one; the solver (:func:`ikdr.solver.driver.solve_ism`,
:func:`ikdr.solver.driver.solve`) receives it and checks nothing again. A fit
that needs other settings derives them with :func:`dataclasses.replace`,
which checks the new values the same way.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from .._utils.eig import check_eigen_solver
from .._utils.typing import RandomStateLike
from .mixing import ACCELERATIONS
from .steps import PHI_SOLVERS

__all__ = ["ISMOptions", "CRITERIA"]

#: the stopping rules: the certified gradient rule and the papers' two
CRITERIA = ("gradient", "eigenvalues", "angle")


@dataclass(frozen=True)
class ISMOptions:
    """Settings of one ISM fit (see :func:`ikdr.ism` for each).

    Parameters
    ----------
    n_components : int or None, default=2
        q; None: the largest eigengap of :math:`\\Phi_0` among its leading
        ``min_components + 16`` eigenvalues (at least ``min_components``), or
        the warm start's number of columns.
    min_components : int, default=1
    tol : float, default=0.01
    criterion : {"gradient", "eigenvalues", "angle"}, default="gradient"
    max_iter : int, default=100
    gtol : float, default=1e-6
    certify : bool, default=True
    eigen_solver : {"auto", "lapack", "power", "cpm"}, default="auto"
    phi_solver : {"auto", "dense", "hybrid", "matrix_free"}, default="auto"
    acceleration : {"pulay", None}, default="pulay"
    warn : bool, default=True
    exact_finish : bool, default=True
        Not a parameter of :func:`ikdr.ism`: False (with ``certify=False``) ends
        the run at the last pass's point without a float64 pass of its own, its
        objective, gradient and ``converged`` as that pass gave them (in float32
        for a float32 problem) and no eigengap; for fits whose W alone is used
        (the held-out halves of :mod:`ikdr.reduction.support`).
    callback : callable or None, default=None
    n_threads : int or None, default=None
    random_state : int, RandomState, Generator or None, default=None
        Seeds the kernel's data-dependent parameters (``sigma="median"``).

    Raises
    ------
    ValueError
        When a value is out of range, with the message the solver has always given.
    """

    n_components: int | None = 2
    min_components: int = 1
    tol: float = 0.01
    criterion: str = "gradient"
    max_iter: int = 100
    gtol: float = 1e-6
    certify: bool = True
    eigen_solver: str = "auto"
    phi_solver: str = "auto"
    acceleration: str | None = "pulay"
    warn: bool = True
    exact_finish: bool = True
    callback: Callable[[dict[str, Any]], Any] | None = None
    n_threads: int | None = None
    random_state: RandomStateLike = None

    def __post_init__(self) -> None:
        if self.criterion not in CRITERIA:
            raise ValueError(f"criterion must be 'eigenvalues', 'angle' or 'gradient', "
                             f"got {self.criterion!r}")
        if not (self.tol > 0):
            raise ValueError(f"tol must be positive, got {self.tol}")
        if not (self.gtol > 0):
            raise ValueError(f"gtol must be positive, got {self.gtol}")
        if int(self.max_iter) < 1:
            raise ValueError(f"max_iter must be >= 1, got {self.max_iter}")
        if self.acceleration not in ACCELERATIONS:
            raise ValueError(f"acceleration must be one of {ACCELERATIONS}, "
                             f"got {self.acceleration!r}")
        check_eigen_solver(self.eigen_solver)
        if self.phi_solver not in PHI_SOLVERS:
            raise ValueError(f"phi_solver must be one of {', '.join(map(repr, PHI_SOLVERS))}, "
                             f"got {self.phi_solver!r}")
        # frozen: the normalised values are set through object.__setattr__
        object.__setattr__(self, "max_iter", int(self.max_iter))
        object.__setattr__(self, "min_components", int(self.min_components))
        if self.n_components is not None:
            object.__setattr__(self, "n_components", int(self.n_components))
