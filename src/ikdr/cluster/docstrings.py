"""The parameter and attribute sections every alternating clustering estimator shares
(ISMClustering, SemiSupervisedISM, KDAC): one text, pasted into each docstring."""

__all__ = ["COMMON_PARAMS", "COMMON_ATTRS"]

COMMON_PARAMS = r"""
    n_clusters : int
        Number of clusters k (>= 2).
    n_components : int or None, default=None
        q, the dimension of the learned subspace. ``None`` picks q by the
        largest eigengap of :math:`\Phi_0` at the first W-step (dissertation
        Eq. 3.11: the gap between the q-th and (q+1)-th largest eigenvalues,
        sought among the leading ``n_clusters + 16``),
        but at least ``min(n_clusters, max(2, n_features // 2))``
        (SemiSupervisedISM, and KDAC against an existing clustering visible in
        X, whose objectives have a second term on W that steers it: at least
        ``min(n_features, n_clusters)``) and at most ``n_features``
        (:func:`ikdr.default_n_components`).
    kernel : str or Kernel, default="gaussian"
        Any ISM kernel or conic combination (:mod:`ikdr.kernels`). The
        Gaussian (by any of its names) at ``sigma="auto"`` with ``affinity=None``
        is what ``strategy="select"`` uses; any other kernel runs the papers'
        alternation with it (``strategy="auto"``). A kernel object keeps its own
        bandwidth: ``Gaussian()`` is one global Gaussian at the median pairwise
        distance of X (as ``sigma="median"`` by name), not the default's local
        scaling; :doc:`/guide/kernels` compares the two.
    sigma : float, "auto" or "median", default="auto"
        Bandwidth of ``kernel="gaussian"`` (a kernel object keeps its own). "auto" (chosen from the data
        alone, no labels): local scaling, the relative Gaussian
        :math:`\exp(-\|W^T(x_i - x_j)\|^2 / 2\sigma_i\sigma_j)` with
        :math:`\sigma_i` the distance of :math:`x_i` to its 7th nearest
        neighbor in X, used by both the W-step kernel and the U-step affinity
        (:func:`ikdr.spectral.auto_kernel`: rule, measurements and cost, one
        k-NN query). It raises ValueError when every sample is identical or
        n_samples < 3 x n_clusters. "median": a global Gaussian at the median
        pairwise distance of X (the papers' choice). A float: that global
        bandwidth. All are fixed for the whole run.
    max_iter : int, default=20
        Cap on the outer iterations: W-steps, each followed by a U-step.
    tol : float, default=1e-3
        ``strategy="alternate"``: stop when the relative subspace changes of U
        and W are both below tol. ``strategy="select"``: stop when a kept
        W-step changed the embedding U by less than tol (or the criterion
        refused the iterate).
    affinity : None, str or Kernel, default=None
        Kernel of the U-step (spectral clustering of XW). None: ``kernel``
        itself (the papers' single-kernel objective) when it is an affinity
        (Gaussian, relative Gaussian, even-degree polynomial with c >= 0);
        otherwise (polynomial of odd degree, linear, squared, multiquadric) the
        Gaussian of ``sigma`` ("auto": local scaling, :func:`ikdr.spectral.auto_kernel`):
        such a global kernel finds the subspace in the W-step but cannot
        cluster XW by itself (unsupervised wine, q = 3: polynomial 0.70 -> 0.86,
        linear 0.84 -> 0.90; :doc:`/clustering_defaults`). ISM keeps ``kernel``
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
        (Lei, Zhong and Dhillon 2016; :doc:`/cpm`).
    strategy : {"auto", "select", "alternate"}, default="auto"
        How U and W are found. "select" (:mod:`ikdr.cluster.selection`):
        several starts (k-means, spectral clustering on the 10-NN graph and
        with the local-scaling affinity, the same on screened features) judged
        on every feature by a label-free criterion
        (:class:`ikdr.cluster.criterion.PartitionCriterion`), then W-steps from
        the best while the criterion prefers their clusters; it uses the
        local-scaling Gaussian (``kernel="gaussian"``, ``sigma="auto"``,
        ``affinity=None``) and needs the rows in memory with exact passes.
        "alternate" (:mod:`ikdr.cluster.alternation`): the papers' U/W
        alternation from spectral clustering of X, with the given kernel,
        affinity and ``normalize``. "auto": "select" where it can run, else
        "alternate" (KDAC: "alternate" also when the existing clustering is
        visible in X, ``existing_dependence_ >= 2``); the strategy run is
        ``strategy_``. The comparison that chose the default is on
        :doc:`/clustering_defaults`.
"""

COMMON_ATTRS = r"""
    labels_ : ndarray (n_samples,)
        The clusters. Default fit: those of the kept candidate (the k-means
        step of its spectral clustering); otherwise k-means of the
        row-normalised embedding (Ng-Jordan-Weiss).
    components_ : ndarray (n_features, n_components)
        W, orthonormal columns (zero on the features ``support_`` leaves out
        and on constant ones). Default fit: the kept W-step's W or, when none
        was kept, the first W-step's, the subspace whose kernel best matches
        the kept clusters; the identity when q equals the number of features.
    embedding_ : ndarray (n_samples, n_clusters)
        U of the kept clusters: the spectral embedding of XW (the
        orthonormalised centered cluster indicators for the 10-NN graph's
        clusters, whose spectral embedding is not of a kernel).
    eigenvalues_ : ndarray (n_clusters,)
        :math:`\mathrm{diag}(U^T H D^{-1/2} K D^{-1/2} H U)` in the W-step
        kernel's normalised affinity; their sum is ``quality_``.
    degrees_ : ndarray (n_samples,)
        Diagonal of the final D (ones when not normalised).
    quality_ : float
        Clustering quality CQ = :math:`\mathrm{Tr}(U^T H D^{-1/2} K_{XW} D^{-1/2} H U)`
        (dissertation Table 3.1; at most n_clusters when normalised).
    n_iter_ : int
        W-steps ("select") or outer U/W iterations ("alternate") run.
    objective_ : float
        The paradigm's objective at ``best_iteration_``.
    best_iteration_ : int
        The 1-based position in ``history_`` of what is returned.
        "select": the kept candidate (1: the start). Otherwise the outer iteration
        with the highest objective (D is held fixed in the W-step, so the
        true objective need not rise monotonically).
    strategy_ : {"select", "alternate"}
        The strategy the fit ran (``strategy`` with "auto" resolved).
    converged_ : bool
        "select": the W-steps ended because the criterion refused an iterate,
        a kept one changed U by less than ``tol``, or no W-step could move
        (q = d), not at ``max_iter``. "alternate": the U and W changes fell
        below ``tol``.
    history_ : list of dict
        "select": the start, then one entry per W-step, with
        ``candidate``, ``criterion``, ``accepted``, ``objective`` (the
        paradigm's, maximised), ``cost`` (its negative, the thesis'
        convention), ``quality`` and the paradigm's own terms; the W-steps'
        also ``u_change``, ``w_change``, ``ism_iterations``. Otherwise one
        entry per outer iteration with the same terms.
    criterion_ : float or None
        The kept candidate's criterion, the log of its multi-graph cut over its
        compactness (:class:`ikdr.cluster.criterion.PartitionCriterion`; lower
        is better); None for "alternate".
    selection_ : list of dict or None
        Every candidate of "select" (the starts, then the W-steps'
        iterates): ``candidate``, ``criterion`` and ``labels``. None for
        "alternate".
    kernel_ : Kernel
        The W-step kernel with fitted parameters.
    affinity_ : Kernel or None
        The U-step kernel (``kernel_`` unless ``affinity`` was given); None
        when the kept clusters are the 10-NN graph's.
    sigma_ : float or None
        Bandwidth of the W-step kernel when it is a plain Gaussian; None for
        other kernels (a local-scaling Gaussian has one bandwidth per point).
    normalize_ : bool
        Whether D was the degree matrix (True) or the identity.
    feature_importances_ : ndarray (n_features,)
        How much each feature carries the clusters; sums to 1. The mean of
        two shares: the feature's weight in the learned subspace (squared row
        norms of W, its columns weighted by the absolute eigenvalues of
        :math:`\Phi` belonging to them with "select", equally with
        "alternate"; :func:`ikdr.reduction.importances.feature_importances`)
        and its own dependence on ``labels_`` (the positive part of its
        marginal HSIC with the partition,
        :func:`ikdr.reduction.marginal.marginal_dependence`), which ranks the
        features W leaves out (:func:`ikdr.cluster.base.clustering_importances`).
    cluster_importances_ : ndarray (n_clusters, n_features)
        Per cluster (rows in the order of the labels), how much each feature
        tells it from the other clusters, each weighed alike; each row sums to 1
        (a cluster without rows: 0). The mean of two shares: of what the
        cluster's dependence on the rows loses, to first order, without the
        feature in the projection W, and of the feature's own dependence on
        the cluster where beyond noise
        (:func:`ikdr.reduction.importances.cluster_importances`).
    n_landmarks_ : int or None
        Landmarks used with ``approximation="nystrom"`` (None otherwise).
    feature_scores_ : ndarray (n_features,) or None
        Each feature's larger 2- or 3-group gap
        (:func:`ikdr.cluster.screen.feature_gaps`) when "select" screened
        the features on X's own columns (KDAC's feature start: each feature's k-group
        gap in X without the existing clusters' means, see its Notes); None
        otherwise.
    support_ : ndarray of int
        The features W may use: all, unless the feature screen
        (:func:`ikdr.cluster.screen.screen_features`) took a few and its start
        was kept (4 blobs in 3 of 50 features: ISMClustering 0.34 -> 0.91);
        ``components_`` is zero elsewhere. Sparse or wide X clustered on its
        leading singular vectors: all.
    start_ : int
        "select": the index in ``selection_`` of the kept start. KDAC
        against a visible existing clustering: which of its runs was kept
        (the feature start is 1, see its Notes; 0 when there was one run).
    start_gaps_ : ndarray or None
        KDAC's runs: the spectral gap :math:`\lambda_{k-1} - \lambda_k` of
        each run's final U-step (:func:`ikdr.spectral.spectral_gap`); a run
        other than the first is kept only when its gap is larger by at least
        0.05. None for "select".
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of str
        Column names of a DataFrame X (absent otherwise): ``feature_names_in_[support_]``
        names the features W may use, and :func:`ikdr.importance_table` ranks them
        by name. ``get_feature_names_out()`` names the columns of ``transform``
        (the lower-case class name and the component's number, e.g. ``kdac0``).
"""
