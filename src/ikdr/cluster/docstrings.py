"""The parameter and attribute sections every alternating clustering estimator shares
(ISMClustering, SemiSupervisedISM, KDAC): one text, pasted into each docstring."""

__all__ = ["COMMON_PARAMS", "COMMON_ATTRS"]

COMMON_PARAMS = r"""
    n_clusters : int
        Number of clusters k (>= 2).
    n_components : int or None, default=None
        q, the dimension of the learned subspace. ``None`` picks q by the
        largest eigengap of :math:`\Phi_0` at the first W-step (dissertation
        Eq. 3.11: the gap between the q-th and (q+1)-th largest eigenvalues),
        but at least ``min(n_clusters, max(2, n_features // 2))`` (SemiSupervisedISM
        and KDAC, whose objectives have a second term on W: at least
        ``min(n_features, n_clusters)``) and at most ``n_features``
        (:func:`ikdr.default_n_components`).
    kernel : str or Kernel, default="gaussian"
        Any ISM kernel or conic combination (:mod:`ikdr.kernels`).
    sigma : float, "auto" or "median", default="auto"
        Bandwidth of ``kernel="gaussian"``. "auto" (chosen from the data
        alone, no labels): local scaling, the relative Gaussian
        :math:`\exp(-\|W^T(x_i - x_j)\|^2 / 2\sigma_i\sigma_j)` with
        :math:`\sigma_i` the distance of :math:`x_i` to its 7th nearest
        neighbour in X, used by both the W-step kernel and the U-step affinity
        (:func:`ikdr.spectral.auto_kernel`: rule, measurements and cost, one
        k-NN query). It raises ValueError when every sample is identical or
        n_samples < 3 x n_clusters. "median": a global Gaussian at the median
        pairwise distance of X (the papers' choice). A float: that global
        bandwidth. All are fixed for the whole run.
    max_iter : int, default=20
        Cap on the outer U/W iterations.
    tol : float, default=1e-3
        Stop when the relative subspace changes of U and W are both below tol.
    affinity : None, str or Kernel, default=None
        Kernel of the U-step (spectral clustering of XW). None: ``kernel``
        itself (the papers' single-kernel objective) when it is an affinity
        (Gaussian, relative Gaussian, even-degree polynomial with c >= 0);
        otherwise (polynomial of odd degree, linear, squared, multiquadric) the
        Gaussian of ``sigma`` ("auto": local scaling, :func:`ikdr.spectral.auto_kernel`):
        such a global kernel finds the subspace in the W-step but cannot
        cluster XW by itself (unsupervised wine, q = 3: polynomial 0.70 -> 0.86,
        linear 0.84 -> 0.90; docs/clustering_defaults.md). ISM keeps ``kernel``
        in the W-step and D comes from the affinity in both steps. A Gaussian
        given by name uses ``sigma`` ("auto": local scaling; else the median
        distance of X). Pass the kernel itself (e.g. ``affinity="linear"``)
        for the single-kernel objective with a non-affinity kernel.
    normalize : "auto" or bool, default="auto"
        Degree normalisation :math:`D = \mathrm{diag}(K_{XW}1)` of the papers.
        "auto" uses it when the U-step kernel is non-negative by construction
        (Gaussian, relative Gaussian, even-degree polynomial) and otherwise
        D = I: the U-step then maximises the plain HSIC
        :math:`\mathrm{Tr}(U^THK_{XW}HU)`, which needs no positive degrees
        (linear, squared, multiquadric and odd polynomial kernels take
        negative values, so ``K 1`` can vanish or change sign).
    random_state : int, RandomState instance or None
        Seeds the median heuristic's subsample, the Lanczos start vector and k-means.
    verbose : int, default=0
        1 prints one line per outer U/W iteration (objective, the larger
        subspace change of U and W, quality, ISM iterations, time); 2 also
        the W-steps' ISM iterations. With tqdm installed, a progress bar on a
        terminal.
    dtype : {numpy.float64, numpy.float32}, default=numpy.float64
        Precision of the C++ kernel products during ``fit``. ``np.float32``
        runs the fused products (and their BLAS calls) in single precision,
        about twice as fast at large n, with HSIC agreeing to about 1e-4
        relative; the certificate and the fitted attributes stay float64.
    approximation : {None, "nystrom"}, default=None
        "nystrom": U-steps by Nystrom spectral embedding (Fowlkes et al.
        2004: left singular vectors of :math:`HD^{-1/2}CK_{mm}^{+1/2}`,
        :math:`O(nm^2)`) and W-steps by landmark passes (:mod:`ikdr.passes.landmarks`),
        so the whole alternation is near-linear in n; X may be an
        ``np.memmap``. Serves the Gaussian, multiquadric and polynomial
        kernels; ``sigma="auto"`` uses the median rule on this path.
    n_landmarks : "auto" or int, default="auto"
        m. "auto": doubled from 64 at the first U-step until the embedding
        moves by less than 0.01 (``ConvergenceWarning`` at 2,048); the m
        used is ``n_landmarks_``.
    eigen_solver : {"auto", "lapack", "power", "cpm"}, default="auto"
        How each W-step finds the top-q eigenvectors of a dense :math:`\Phi`
        (as :class:`ikdr.ISM`'s); "cpm" is the coordinate-wise power method
        (Lei, Zhong and Dhillon 2016; docs/cpm.md).
"""

COMMON_ATTRS = r"""
    labels_ : ndarray (n_samples,)
        k-means labels of the row-normalised embedding (Ng-Jordan-Weiss).
    components_ : ndarray (n_features, n_components)
        W, orthonormal columns.
    embedding_ : ndarray (n_samples, n_clusters)
        U, the final spectral embedding of XW.
    eigenvalues_ : ndarray (n_clusters,)
        Eigenvalues belonging to U; their sum is ``quality_``.
    degrees_ : ndarray (n_samples,)
        Diagonal of the final D (ones when not normalised).
    quality_ : float
        Clustering quality CQ = :math:`\mathrm{Tr}(U^T H D^{-1/2} K_{XW} D^{-1/2} H U)`
        (dissertation Table 3.1; at most n_clusters when normalised).
    n_iter_ : int
        Outer U/W iterations.
    objective_ : float
        The paradigm's objective at ``best_iteration_``.
    best_iteration_ : int
        The (1-based) outer iteration whose W, U are returned: the one with
        the highest objective (D is held fixed in the W-step, so the true
        objective need not rise monotonically).
    converged_ : bool
    history_ : list of dict
        Per outer iteration: ``objective`` (the paradigm's objective, maximised),
        ``cost`` (its negative, the thesis' convention), ``quality``,
        ``u_change``, ``w_change``, ``ism_iterations``, ``time`` and the
        paradigm's own terms.
    kernel_ : Kernel
        The W-step kernel with fitted parameters.
    affinity_ : Kernel
        The U-step kernel (``kernel_`` unless ``affinity`` was given).
    sigma_ : float or None
    normalize_ : bool
        Whether D was the degree matrix (True) or the identity.
    feature_importances_ : ndarray (n_features,)
        Squared row norms of W divided by q (columns weighted equally; sums
        to 1): the weight of each input feature in the learned subspace.
    n_landmarks_ : int or None
        Landmarks used with ``approximation="nystrom"`` (None otherwise).
    feature_scores_ : ndarray (n_features,) or None
        Each feature's larger 2- or 3-group gap (:func:`ikdr.cluster.screen.feature_gaps`) when
        the default kernel let the features be screened (KDAC: each feature's
        k-group gap in X without the existing clusters' means, see its
        Notes); None otherwise.
    support_ : ndarray of int
        The features W may use: all, unless :func:`ikdr.cluster.screen.screen_features`
        took a few (4 blobs in 3 of 50 features: ISMClustering 0.26 -> 0.90;
        docs/alternative_clustering.md); ``components_`` is zero elsewhere.
    start_ : int
        Which of the runs was kept (KDAC's feature start is 1, see its Notes;
        0 when there was one run).
    start_gaps_ : ndarray
        The spectral gap :math:`\lambda_{k-1} - \lambda_k` of each run's final
        U-step (:func:`ikdr.spectral.spectral_gap`); a run other than the
        first is kept only when its gap is larger by at least 0.05.
    n_features_in_ : int
"""
