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

    Plain fixed point :math:`W \leftarrow V_{\max}(\Phi(W))` (ISM paper,
    Algorithm 1) while it climbs, started from the W-free :math:`\Phi_0`
    (Theorem 3) unless ``W0`` is given; a Riemannian trust region where it does
    not. :math:`V_{\max}` are the eigenvectors of the q largest *algebraic*
    eigenvalues (Phi is indefinite). A kernel whose Phi does not depend on W
    (linear, squared) is solved by the first eigendecomposition.

    **Why a safeguard.** The plain fixed point is fast where it converges, but
    nothing makes it monotone: on some problems (e.g. face images, 20
    identities, Gaussian kernel, q = 5) it cycles with period two forever, or
    its eigenvalue rule stops it while the objective is still falling. ikdr
    therefore evaluates the objective of every plain candidate (it did so
    anyway for ``history``) and

    1. accepts the plain step while it raises the objective. Where the plain
       iteration converges monotonically, the stopping rule (``criterion``,
       ``tol``) is that of Algorithm 1 and so are the iterates until W settles;
       from there each step diagonalises a Pulay combination of the last Phi
       (``acceleration="pulay"``, :mod:`ikdr.solver.mixing`), which reaches
       the same fixed point in fewer passes (``acceleration=None``: Algorithm 1's
       iterates throughout);
    2. when a plain step would lower the objective (cycling, stalling, tied
       eigenvalues), refuses it and switches, from the best iterate, to a
       Riemannian trust-region Newton method on the Grassmann manifold
       (Absil, Baker, Gallivan 2007): exact gradient :math:`2(I - WW^T)\Phi W`,
       Hessian-vector products from Phi (the kernel-curvature term by a forward
       difference of the gradient: one Phi per product), steps along geodesics,
       a candidate is accepted only if the objective rises as the model
       predicts (below the objective's rounding: only if its gradient halves).
       Its truncated CG is preconditioned by the *surrogate* Hessian
       (the Hessian of :math:`\mathrm{Tr}(V^T\Phi(W)V)`, diagonal in the
       eigenbases of :math:`W^T\Phi W` and :math:`W_\perp^T\Phi W_\perp`), so
       its first step is the linearised ISM step and the CG iterations only add
       the curvature the plain fixed point ignores. It is monotone, converges
       to points satisfying the second-order necessary conditions from any
       start, and quadratically near a non-degenerate maximum; it stops when the
       Riemannian gradient norm is at most ``gtol`` times the objective.

    **When it stops, and what converged means.** By default
    (``criterion="gradient"``) the fit runs until the relative Riemannian
    gradient norm :math:`\|g\|_F / |f|` is at most ``gtol`` (first order), then
    checks the Hessian: its largest eigenvalue over the tangent space must be
    non-positive to within 1e-5 of its scale (second order). ``converged`` is
    True only when both hold: W is then a certified local maximum. Where the
    Hessian has a positive eigenvalue (a saddle), the fit steps along its
    eigenvector to a higher point and goes on with trust-region steps only,
    which cannot fall back into the saddle (at most three times). Plain steps
    that shrink the gradient by less than half twice in a row hand over to the
    trust region. The papers' loose rules (``criterion="eigenvalues"`` or
    ``"angle"`` with ``tol``) stop earlier, where Algorithm 1 stops; there
    ``converged`` still says whether the certificate holds at that point,
    and a ``ConvergenceWarning`` comes only when ``max_iter`` ends before the
    rule.

    Parameters
    ----------
    X : ndarray (n, d), float64 or float32
        Data, usually standardised. Its dtype selects the precision of the
        C++ products of the plain steps (the trust region works in float64).
    gamma : Gamma or array-like of shape (n, n)
        Paradigm matrix (see :mod:`ikdr.gamma`); an array is taken as a dense,
        symmetric Gamma (a factored one, e.g. :func:`ikdr.supervised_gamma`,
        makes Phi_0 cheaper and is needed by the landmark passes).
    kernel : str or Kernel
        Any ISM kernel or conic combination; data-dependent parameters
        (``sigma="median"``) are fitted on X.
    n_components : int or None
        q, 1 <= q <= d. None: the q of the largest eigengap of :math:`\Phi_0`
        (:func:`choose_n_components`, dissertation Eq. 3.11) with q >=
        ``min_components``, or W0's number of columns when W0 is given.
    W0 : ndarray (d, q), optional
        Warm start (orthonormalised); skips Phi_0.
    tol : float, default=0.01
        Used by the papers' rules only (``criterion="eigenvalues"`` or
        ``"angle"``). Plain fixed point's rule: stop when
        :math:`\|\Lambda_k - \Lambda_{k-1}\| / \|\Lambda_k\| < tol`
        (``criterion="eigenvalues"``, the papers' rule with delta = 0.01, and
        the step turned W by less than 0.1 rad: a period-two cycle can repeat
        its eigenvalues while W swings) or when the largest principal angle
        between successive W is below ``tol`` radians (``criterion="angle"``).
    criterion : {"gradient", "eigenvalues", "angle"}, default="gradient"
        ``"gradient"``: stop when the relative Riemannian gradient norm is
        at most ``gtol``, then certify the Hessian (see above; ``tol`` is
        unused). ``"eigenvalues"`` / ``"angle"``: the papers' rules.
    max_iter : int, default=100
        Plain plus trust-region iterations.
    eigen_solver : {"auto", "lapack", "power", "cpm"}
        How the top-q eigenvectors of a dense Phi are found
        (:func:`ikdr._utils.eig.top_eigenvectors`): "cpm" is the coordinate-wise
        power method (Lei, Zhong and Dhillon 2016; :doc:`/cpm`), with a LAPACK
        fallback when it does not converge or eigenvalues q and q + 1 tie.
    n_threads : int, optional
        Threads of the C++ core (default :func:`ikdr.get_num_threads`).
    warn : bool, default=True
        Emit a ``ConvergenceWarning`` when the fit ends uncertified under
        ``criterion="gradient"`` (``max_iter`` reached first, a stall, a saddle
        it could not leave), or when ``max_iter`` ends before a papers' rule.
    gtol : float, default=1e-6
        Relative Riemannian gradient norm :math:`\|g\|_F / |f|` at which the
        fit (``criterion="gradient"``) and the trust region stop, and below
        which the certificate's first-order condition holds. The objective's
        rounding (about 1e-13 relative) bounds how small it can usefully be.
    certify : bool, default=True
        Compute the full certificate (:class:`ISMConvergence`), including the
        largest Hessian eigenvalue (LOBPCG on Hessian-vector products, one
        thin pass each, preconditioned by the surrogate, run to a residual of
        1e-4 times the Hessian's scale or 40 products; see
        :mod:`ikdr.solver.certificate`). With False, only the gradient is
        computed, from the last pass of the solve, and the Hessian fields are
        NaN / None (``converged`` then rests on the first order alone): use it
        in inner loops.
    callback : callable, optional
        Called with each new ``history`` entry (a dict) as it is recorded;
        the estimators' ``verbose`` output uses it.
    dtype : {None, numpy.float64, numpy.float32}, default=None
        Precision of the plain steps' C++ products; None keeps X's own
        (float32 or float64). The safeguarded phase and the certificate
        always work in float64.
    phi_solver : {"auto", "dense", "hybrid", "matrix_free"}, default="auto"
        How a plain step finds the top-q eigenvectors of :math:`\Phi(W)`.
        ``"dense"`` forms the d x d :math:`\Phi = X^T L(\Psi) X` (one fused pass
        with the d columns of X: :math:`O(n^2 d)`) and calls LAPACK.
        ``"matrix_free"`` never forms it: a block eigensolver
        (:func:`ikdr._utils.eig.block_top_eigenvectors`, LOBPCG on :math:`[W, R, P]`
        plus a few extra Ritz vectors) warm-started from the current W uses
        only products :math:`V \mapsto X^T L(\Psi)(XV)`, one fused pass with
        the few columns of XV each (:math:`O(n^2 q)`); the pass that evaluates
        a candidate W also yields :math:`\Phi(W)W` (the next gradient and the
        next eigensolve's first product) and, for a Gaussian kernel, its
        objective. ``"hybrid"`` forms Phi for the first step (its start, the
        top eigenvectors of :math:`\Phi_0`, is far from those of
        :math:`\Phi(W_1)`, and the block eigensolver would need about 40
        iterations), seeds the block eigensolver with that Phi's next
        eigenvectors, and then takes each step the cheaper way: the block
        iterations are predicted from the residual of W (known from the thin
        pass that evaluated it) and the convergence rate observed so far, and
        Phi is formed when they would cost more than a dense pass (or when a
        block eigensolve does not converge). ``"auto"`` chooses by the
        estimated flops per kernel-panel entry, F about 60 to form an entry,
        a dense pass F + 2d, a block iteration F + 4p + 8dp/n with
        p = q + max(10, q) columns: matrix-free when a dense pass costs more
        than 20 block iterations (above d of about 1,600 for q = 10 and
        n = 10,000), hybrid when it costs more than 8 (above d of about 570),
        dense otherwise or when n < 1000. The safeguarded (trust-region)
        phase, which is rarely needed, forms :math:`\Phi` densely; the
        certificate after a hybrid or matrix-free run uses the same thin
        products (its eigengap by a short block iteration, its Hessian
        eigenvalue unpreconditioned).
    min_components : int, default=1
        Smallest q considered when ``n_components=None``.
    acceleration : {"pulay", None}, default="pulay"
        ``"pulay"``: once a plain step turns W by less than 0.2 rad, the next W
        are the top eigenvectors of the combination :math:`\sum_i c_i \Phi(W_i)`
        of the last (up to 6) dense Phi whose commutator residuals
        :math:`\Phi(W_i) W_i W_i^T - W_i W_i^T \Phi(W_i)` combine to the
        smallest norm, :math:`\sum_i c_i = 1` (Pulay's DIIS, the accelerator
        of self-consistent field iterations; :mod:`ikdr.solver.mixing`). The
        stopping rule still reads the eigenvalues of each iterate's own
        :math:`\Phi`, and a mixed step that would lower the objective is
        replaced by the plain one. On a 1,000 x 32 mixture with q = 20 it
        makes 9 Phi passes instead of 14 and stops nearer the maximum. Dense
        steps only (not coarse float32 ones nor matrix-free eigensolves), and
        not below a relative gradient of 1e-8, where the combination is
        dominated by rounding. ``None``: the papers' plain step throughout.
    approximation : ikdr.passes.landmarks.Approximation or None, default=None
        Landmark (Nystrom) or random-feature settings (:mod:`ikdr.passes.landmarks`,
        e.g. ``Approximation("nystrom", 256, random_state=0)``): the driver
        runs unchanged on the landmark problem
        (:class:`ikdr.passes.landmarks.LandmarkProblem`), whose every Phi,
        Phi-product and objective costs O(n d m) (X read in row blocks, never
        copied). The "auto" landmark count and the exact polish are
        :func:`ikdr.reduction.approximate.approximate_ism` and the estimators'
        ``approximation`` parameter. A row-chunked ``dask.array.Array`` X gets the Dask provider
        (:class:`ikdr.distributed.DaskPasses`): every pass runs as Dask tasks on
        block pairs (:class:`ikdr.distributed.DaskProblem`) while W, the
        eigenproblems and the trust region stay here (:doc:`/distributed`).
        The provider is picked once, by :func:`ikdr.passes.resolve`.

    Notes
    -----
    **Passes.** Every n^2 pass is counted in ``convergence`` (``phi_evaluations``,
    ``objective_evaluations``, ``hessian_products``). A plain dense run that
    converges makes :math:`\Phi_0` without an n^2 pass when Gamma is
    factored, one pass per iteration (the pass that forms :math:`\Phi(W_k)`
    for the next step also gives :math:`f(W_k)`), and ends with one thin pass
    (:math:`\Phi W` and f, q columns) when ``certify=False``:
    ``phi_evaluations <= n_iter + 2``.

    Returns
    -------
    ISMResult

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
