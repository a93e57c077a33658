"""The public ISM function: check the options once, pick the pass provider, run the driver."""
from __future__ import annotations

from typing import Any, Callable

from .._utils.typing import ArrayLike, DTypeLike, RandomStateLike
from ..gamma import Gamma, as_gamma
from ..kernels import KernelLike
from ..passes import resolve
from ..solver.driver import ISMResult, solve_ism
from ..solver.options import ISMOptions

__all__ = ["ism"]


def ism(X: ArrayLike, gamma: Gamma | ArrayLike, kernel: KernelLike = "gaussian",
        n_components: int | None = 2, *, W0: ArrayLike | None = None, tol: float = 0.01,
        criterion: str = "gradient", max_iter: int = 100, eigen_solver: str = "auto",
        n_threads: int | None = None, random_state: RandomStateLike = None, warn: bool = True,
        gtol: float = 1e-6, certify: bool = True,
        callback: Callable[[dict[str, Any]], Any] | None = None, phi_solver: str = "auto",
        dtype: DTypeLike | None = None, min_components: int = 1,
        approximation: Any = None, acceleration: str | None = "pulay") -> ISMResult:
    r"""Iterative Spectral Method: maximise :math:`\mathrm{Tr}(\Gamma K_{XW})` subject to :math:`W^TW = I`.

    The plain fixed point :math:`W \leftarrow V_{\max}(\Phi(W))` (ISM paper,
    Algorithm 1, Eq. 1), started from the W-free :math:`\Phi_0` (Theorem 3)
    unless ``W0`` is given, while it raises the objective; a Riemannian trust
    region (Absil, Baker, Gallivan 2007) where it would not. A kernel whose
    Phi does not depend on W (linear, squared) is solved by one
    eigendecomposition. By default the fit runs until the relative
    Riemannian gradient norm is at most ``gtol`` and then certifies the
    Hessian: ``converged`` means a certified local maximum. :doc:`/ism_solver`
    says how it climbs, when it stops and how many passes it makes.

    Parameters
    ----------
    X : ndarray (n, d) or scipy.sparse matrix, float64 or float32
        Data, usually standardised (sparse X: scaled, never centered, and
        never made dense; :doc:`/guide/sparse`). Its dtype (or ``dtype``) is the precision
        of the plain steps' C++ products; the trust region works in float64.
    gamma : Gamma or array-like of shape (n, n)
        Paradigm matrix (:mod:`ikdr.gamma`); an array is a dense symmetric
        Gamma (a factored one, e.g. :func:`ikdr.supervised_gamma`, makes
        :math:`\Phi_0` cheaper and is needed by the landmark passes).
    kernel : str or Kernel
        Any ISM kernel or conic combination; data-dependent parameters
        (``sigma="median"``) are fitted on X.
    n_components : int or None
        q, 1 <= q <= d. None: the q of the largest eigengap of :math:`\Phi_0`
        (:func:`choose_n_components`, dissertation Eq. 3.11), at least
        ``min_components``, or W0's number of columns.
    W0 : ndarray (d, q), optional
        Warm start (orthonormalised); skips :math:`\Phi_0`.
    tol : float, default=0.01
        Tolerance of the papers' rules (``criterion="eigenvalues"`` or ``"angle"``).
    criterion : {"gradient", "eigenvalues", "angle"}, default="gradient"
        ``"gradient"``: stop at a relative Riemannian gradient norm of ``gtol``,
        then certify the Hessian (a saddle is left along its ascent direction).
        ``"eigenvalues"``: relative change of Phi's top-q eigenvalues below
        ``tol`` (the papers' rule) with a step of less than 0.1 rad;
        ``"angle"``: largest principal angle between successive W below ``tol``.
    max_iter : int, default=100
        Plain plus trust-region iterations.
    eigen_solver : {"auto", "lapack", "power", "cpm"}
        How the top-q eigenvectors of a dense Phi are found
        (:func:`ikdr._utils.eig.top_eigenvectors`); "cpm" is the coordinate-wise
        power method (:doc:`/cpm`), with a LAPACK fallback.
    n_threads : int, optional
        Threads of the C++ core (default :func:`ikdr.get_num_threads`).
    random_state : int, RandomState or None
        Seeds the kernel's data-dependent parameters.
    warn : bool, default=True
        ``ConvergenceWarning`` when the fit ends uncertified under the gradient
        rule, or when ``max_iter`` ends before a papers' rule.
    gtol : float, default=1e-6
        Relative Riemannian gradient norm :math:`\|g\|_F / |f|` of the gradient
        rule, of the trust region's stop and of the certificate's first order
        (the objective's rounding, about 1e-13, bounds it).
    certify : bool, default=True
        Compute the largest Hessian eigenvalue too (:class:`ISMConvergence`: a
        few thin passes); False keeps the gradient only (use it in inner loops).
    callback : callable, optional
        Called with each new ``history`` entry (a dict) as it is recorded.
    phi_solver : {"auto", "dense", "hybrid", "matrix_free"}, default="auto"
        How a plain step finds the top-q eigenvectors of :math:`\Phi(W)`: form
        the d x d Phi (one pass with the d columns of X), or a block eigensolver
        on thin products :math:`V \mapsto \Phi(W)V` (a pass with a few columns
        each), or the first step dense and then the cheaper way; "auto"
        chooses by a flop count (:doc:`/ism_solver`).
    dtype : {None, numpy.float64, numpy.float32}, default=None
        Precision of the plain steps' C++ products; None keeps X's own.
    min_components : int, default=1
        Smallest q considered when ``n_components=None``.
    approximation : ikdr.passes.landmarks.Approximation or None, default=None
        Landmark (Nystrom) or random-feature settings, e.g.
        ``Approximation("nystrom", 256, random_state=0)``: every pass costs
        O(n d m) (:class:`ikdr.passes.landmarks.LandmarkProblem`, X read in
        row blocks, never copied). The "auto" landmark count and the exact
        polish are :func:`ikdr.reduction.approximate.approximate_ism` and the
        estimators' ``approximation``. A row-chunked ``dask.array.Array`` X
        runs every pass as Dask tasks (:doc:`/distributed`); the provider is
        picked once, by :func:`ikdr.passes.resolve`.
    acceleration : {"pulay", None}, default="pulay"
        Once a plain step turns W by less than 0.2 rad, W comes from the top
        eigenvectors of the Pulay (DIIS) combination of the last (up to 6)
        dense Phi (:mod:`ikdr.solver.mixing`); a mixed step that would lower
        the objective is replaced by the plain one. None: the papers' plain
        steps throughout.

    Returns
    -------
    ISMResult
        W, its eigenvalues, the history and the certificate; every n^2 pass is
        counted in ``convergence``.

    References
    ----------
    Wu, Miller, Chang, Sznaier, Dy. Solving Interpretable Kernel Dimension
    Reduction. NeurIPS 2019, Algorithm 1 and Eq. (1).
    Wu. Kernel dependence methods for interpretable representations,
    dissertation, 2020, Theorem 5.1 and Eq. (C.73) (eigengap condition).
    Absil, Baker, Gallivan. Trust-region methods on Riemannian manifolds.
    Found. Comput. Math. 7 (2007), Algorithms 1-2.
    """
    options = ISMOptions(n_components=n_components, min_components=min_components, tol=tol,
                         criterion=criterion, max_iter=max_iter, gtol=gtol, certify=certify,
                         eigen_solver=eigen_solver, phi_solver=phi_solver,
                         acceleration=acceleration, warn=warn, callback=callback,
                         n_threads=n_threads, random_state=random_state)
    provider = resolve(X, approximation, dtype=dtype)
    return solve_ism(provider, X, as_gamma(gamma), kernel, options, W0=W0, stacklevel=3)
