"""KNet deep kernel clustering (dissertation ch. 4)."""
from __future__ import annotations

import numbers
import warnings
from typing import Sequence

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClusterMixin, TransformerMixin
from sklearn.cluster import KMeans
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from .._utils.mlp import MLP, pretrain_identity
from .._utils.progress import IterationReport
from .._utils.sparse import check_sparse
from .._utils.validation import ComponentNamesMixin, NewParametersOnLoad, SparseInputMixin, check_scale
from .._utils.validation import keep_state_on_error, plain
from ..kernels import Gaussian
from .._config import one_thread
from ..spectral import (START_TOL, auto_kernel, median_scale_gaussian, njw_labels,
                       row_normalised, spectral_embedding)
from .._utils.typing import ArrayLike, RandomStateLike, SigmaLike

from ..reduction.importances import cluster_importances
from .criterion import PartitionCriterion, choose
from .knet_training import (PREDICT_CHUNK, KNetOptions, kernel_times, spread, train_knet,
                            u_gradient)
from .screen import screen_features
from .selection import scored_starts, selection_points

__all__ = ["KNetClustering"]


class KNetClustering(NewParametersOnLoad, SparseInputMixin, ClusterMixin, ComponentNamesMixin,
                     TransformerMixin, BaseEstimator):
    r"""KNet deep kernel clustering (dissertation chapter 4, Algorithm 3).

    Learns an embedding :math:`\psi_\theta` (a ReLU MLP) that maximises the
    dependence :math:`\mathrm{HSIC}(\psi_\theta(X), U)` on a spectral
    clustering U (Eq. 4.8). The start is plain spectral clustering of X: U is
    the top eigenvectors of :math:`H D^{-1/2} K_X D^{-1/2} H` for the
    Gaussian affinity of ``sigma`` (Eq. 4.14), whose small default bandwidth
    follows non-convex clusters. Each round is one epoch of stochastic
    gradient ascent (Adam) on :math:`\sum_{ij}\Gamma_{ij}
    \exp(-\|\psi_i - \psi_j\|^2/2s^2)` (Eq. 4.11; mini-batches use the
    batch's sub-matrix of Gamma), for one of two U-updates:

    * ``update="fixed"`` (default): :math:`\Gamma = HUU^TH` with U held at the
      start and s = ``embedding_sigma`` (the median distance): the plain HSIC
      of a wide kernel, which sees whole clusters and so rises as the network
      gathers each cluster of the start into a compact, convex group. The
      rounds stop when one raises it by less than ``tol`` (relative).
    * ``update="eig"`` / ``"sma"`` (the thesis' KNet_EIG / KNet_SMA):
      :math:`\Gamma = D^{-1/2} H U U^T H D^{-1/2}` and s = ``sigma``; after
      the epoch D, then U by the top eigenvectors of
      :math:`H D^{-1/2} K_\Psi D^{-1/2} H` or one Cayley step on the Stiefel
      manifold (Eq. 4.16), until :math:`UU^T` stops changing.

    Why "fixed" is the default (a deviation from the paper). With the
    small sigma the normalised objective is already near its maximum k at the
    start (moons 1.998 of 2): it only sees neighborhoods, gives no reason to
    gather a cluster, and every round of ``"eig"`` on the moons was undone
    (below), so the network learned nothing. Ascending the wide kernel against
    the start's clusters raises the objective 1.4-1.8x on the moons, the
    Spiral and Moon and maps them to groups k-means separates (NMI 1.0 from
    0.39-0.51 on X). U-steps with either kernel on the moving embedding
    drifted away from the clusters (moons NMI 0.0-0.6), so U stays the start's.

    Monotone rounds (deviation from the paper). For ``"eig"`` and ``"sma"``
    the epoch holds D fixed, a surrogate of (4.8a); on the Moon and the Spiral
    (sigma = 0.1 x median, Table 4.1) every such epoch *lowers* (4.8a)
    evaluated with D recomputed (it rewards making neighborhoods denser), and
    repeated epochs tore the clusters apart (NMI 0.44-0.66). A round whose
    epoch lowers the objective (for ``"eig"``/``"sma"``: (4.8a) at the old U
    with D recomputed) is therefore undone and the learning rate halved; after
    ten halvings the run stops with ``converged_ = False`` and a
    ConvergenceWarning. The history is non-decreasing.

    No gain by fragmenting (deviation from the paper). (4.8a) is
    :math:`\mathrm{Tr}(\Gamma K) = \sum_i \Gamma_{ii} + \sum_{i \ne j}
    \Gamma_{ij} k(\psi_i, \psi_j)`; the first part, :math:`\sum_i
    \|(HU)_i\|^2 / d_i`, grows only as degrees fall towards a point's
    similarity to itself, i.e. by isolating points. A round is also undone
    when it lowers the second part (the pairs). And when the first part is
    more than half of the objective at the start, the Gaussian of ``sigma``
    isolates points of X and U holds indicators of them rather than clusters;
    epochs on that Gamma only push those points further out, so no round is
    run (``stop_reason_ = "fragmented start"``, ``n_iter_ = 0``, a
    ConvergenceWarning) and the output is the rounding of the start. On the
    standardised digits at the default sigma the first part is 97 % of the
    objective (the learned kernel's NJW partition: nine clusters of 1-7
    points), and the five rounds the guard kept before took k-means on psi
    from NMI 0.63 to 0.19; on circles, moons, spiral, face and wine it is
    8-13 % and nothing changes.

    Output. Candidate partitions are formed: k-means on :math:`\psi_\theta(X)`
    (Alg. 3), the NJW rounding of U (k-means on the row-normalised spectral
    embedding of the learned kernel 4.10) and, at ``sigma="auto"``, the
    starts of the ISM estimators' selection on every feature of X (wide X:
    its leading singular vectors): k-means ("X kmeans"), spectral clustering
    of the 10-NN graph, as scikit-learn's, and, where the start is fragmented,
    of the local-scaling affinity (:func:`ikdr.cluster.selection.scored_starts`),
    otherwise the NJW rounding of the local-scaling affinity on
    :math:`\psi_\theta(X)`. At ``sigma="auto"`` after kept rounds of
    ``"fixed"`` the learned kernel's NJW rounding is not formed (its cut was
    never the lowest of the candidates on the 25 data sets of
    ``benchmarks/bench_clustering_quality.py``, and it costs an eigenproblem of
    order n), nor the local-scaling start (it serves where the Gaussian
    isolates points). ``labels_`` is
    the one the selection's criterion prefers on every feature of X (the
    multi-graph normalised cut over the compactness,
    :class:`ikdr.cluster.criterion.PartitionCriterion`, which reads no
    labels; ``partition_criterion_``, ``rounding_``). Judged by the learned
    kernel itself, whose sigma is small enough for the spiral and the moons,
    a partition that isolates the few outliers of a wide cluster scored
    highest (varied-variance blobs: NMI 0.02-0.04); the criterion's graphs
    of three scales do not reward that. After the rounds of ``"fixed"``
    k-means on the gathered groups usually wins (moons, circles, Moon,
    Spiral); after a fragmented start (digits, breast cancer, most blobs)
    :math:`\psi(X) = X` and the candidates are partitions of X itself, where
    the 10-NN graph wins on digits and breast cancer
    (:doc:`/clustering_defaults`).

    The embedding is the network output rescaled to the spread of the
    training data, :math:`\psi = c f_\theta(X) / s(f_\theta(X))` (s: root
    mean square distance to the mean). Deviation from the paper: with sigma
    fixed, the unscaled objective (4.11) rises by shrinking every distance,
    which merged the clusters in our runs; the rescaling removes that trivial
    direction and is the identity at the start.

    The encoder starts as the exact identity map (see :mod:`ikdr._utils.mlp`; hidden
    widths < 2 d are pre-trained to it, Eq. 4.12) and U as the spectral
    embedding of X, so the first iterate is plain spectral clustering.

    Data should be standardised first, as in the paper. Training on a subset
    and clustering the rest with :meth:`predict` (out of sample, Table 4.4) is
    a supported use: ``KNetClustering(2).fit(X[subset]).predict(X)``. New
    points go to the nearest k-means center in the embedding, with the
    spectral rounding through the Nystrom extension of U with the learned
    kernel to the nearest NJW center, with the local rounding to the cluster
    of the nearest training point in the embedding.

    Parameters
    ----------
    n_clusters : int
    hidden_layer_sizes : tuple of int or None, default=None
        Hidden widths of the encoder (the decoder mirrors them). None: two
        hidden layers of ``max(2 d, 20)`` units, the smallest network that
        starts as the exact identity (the paper used 3 layers of width d or 20).
    update : {"fixed", "eig", "sma"}, default="fixed"
        "fixed": train against the start's U with the kernel of
        ``embedding_sigma``; "eig" / "sma": KNet_EIG or KNet_SMA (Algorithm 3).
    sigma : float, "auto" or "median", default="auto"
        Bandwidth of the Gaussian affinity: the start's spectral clustering,
        the rounding of the learned embedding and, for "eig" and "sma", the
        kernel the network ascends. "auto": the median distance of the
        samples to their 7th nearest neighbor (:func:`ikdr.spectral.median_scale_gaussian`, chosen
        from X alone; raises ValueError when all samples coincide or
        n_samples < 3 x n_clusters); "median": the median pairwise distance of
        the training X (dissertation Table 4.1).
    embedding_sigma : float or "median", default="median"
        Bandwidth of the Gaussian the network ascends with ``update="fixed"``
        (ignored otherwise); "median": the median pairwise distance of X. The
        embedding keeps the spread of X, so the scale stays meaningful.
    lam : float, default=0.0
        Weight of the autoencoder penalty; 0 (no decoder) in all of the
        paper's reported results.
    max_iter : int, default=100
        Maximum number of (epoch, D, U) rounds.
    epochs_per_iter : int, default=1
        Epochs of gradient ascent per round.
    learning_rate : float, default=1e-2
        Adam step size (halved after every undone round).
    batch_size : int or None, default=None
        Mini-batch size; None uses ``min(n_samples, 200)``.
    tol : float, default=1e-3
        Stop after a kept round that changes U by less than ``tol``
        (:math:`\|U_kU_k^T - U_{k-1}U_{k-1}^T\|_F / \|U_kU_k^T\|_F`, zero for
        "fixed") and raises the objective by less than ``tol`` times its value.
    random_state : int, RandomState instance or None
    verbose : int, default=0
        >= 1 prints one line per round (HSIC objective, change of
        :math:`UU^T`, time); with tqdm installed, a progress bar on a terminal.

    Attributes
    ----------
    labels_ : ndarray (n_samples,)
        Cluster of each training sample: k-means of the final spectral embedding.
    embedding_ : ndarray (n_samples, n_features)
        :math:`\psi_\theta(X)` of the training data.
    cluster_centers_ : ndarray (n_clusters, n_features)
        k-means centers in the embedding (used by :meth:`predict`).
    U_ : ndarray (n_samples, n_clusters)
        Final spectral embedding: of the learned kernel on ``embedding_``, or
        the start's on X where U was not updated (``"fixed"``: the target the
        network was trained against; see "Output").
    sigma_ : float
        Bandwidth of the affinity.
    embedding_kernel_ : Gaussian or None
        The kernel the network ascended (``update="fixed"``; None otherwise, and
        when no round ran).
    n_iter_ : int
        Rounds run (0 after a fragmented start).
    history_ : list of float
        The objective the rounds ascend, :math:`\mathrm{Tr}(\Gamma K_\Psi)`,
        after each round (entry 0: the spectral-clustering start; "fixed":
        the plain HSIC of the embedding kernel, "eig"/"sma": Eq. 4.8a with D
        recomputed; after a fragmented start: (4.8a) of the start).
    converged_ : bool
        True only when a kept round met ``tol`` (not when the rounds stopped
        because every step was undone or ``max_iter`` was reached; a
        ConvergenceWarning is issued then, as after a fragmented start).
    stop_reason_ : str
        "converged", "step size exhausted", "max_iter" or "fragmented start"
        (no round run; see "No gain by fragmenting").
    n_rejected_ : int
        Rounds undone because their epoch lowered (4.8a) or its part over
        pairs of distinct points.
    rounding_ : {"kmeans", "spectral", "local", "X kmeans", "graph", "kernel"}
        Which candidate became ``labels_``: k-means on ``embedding_``, the NJW
        rounding of ``U_``, that of the local-scaling affinity on
        ``embedding_``, or a start of the selection on X (see "Output").
    partition_criterion_ : dict
        The criterion of each candidate (lower is better; the winner is
        :func:`ikdr.cluster.criterion.choose`'s, which prefers partitions
        without a near-empty cluster and cleanly separated ones).
    support_ : ndarray of int
        The features the network reads: all, unless at ``sigma="auto"``
        :func:`ikdr.cluster.screen.screen_features` took a few (iris 0.63 -> 0.85,
        4 blobs in 3 of 50 features 0.30 -> 0.91;
        :doc:`/alternative_clustering`). ``transform`` and ``predict`` read
        the same columns of their X.
    projection_ : ndarray (n_features, r) or None
        Sparse X, or X of more than
        :data:`~ikdr.cluster.selection.SELECTION_MAX_FEATURES` features: the
        orthonormal basis of its r leading right singular vectors
        (:func:`ikdr.cluster.selection.selection_points`), whose coordinates
        ``X @ projection_`` the network reads (``support_`` is then every
        feature). None otherwise.
    feature_scores_ : ndarray (n_features,) or None
        Each feature's larger 2- or 3-group gap (:func:`ikdr.cluster.screen.feature_gaps`) at
        ``sigma="auto"`` with more than 2 features; None otherwise.
    feature_names_in_ : ndarray of str
        Column names of a DataFrame X (absent otherwise);
        ``feature_names_in_[support_]`` names the features the network reads.
        ``get_feature_names_out()`` names the embedding's columns
        (``knetclustering0``, ...).
    cluster_importances_ : ndarray (n_clusters, n_features)
        Per cluster (rows in the order of the labels), how much each feature
        tells it from the other clusters, each weighed alike; each row sums to 1.
        The network has no projection W, so this is each feature's share of its
        own dependence on the cluster where beyond noise
        (:func:`ikdr.reduction.importances.cluster_importances`).

    References
    ----------
    Wu, C. (2020). Interpretable Kernel Dimension Reduction... PhD thesis,
    Northeastern University, ch. 4 (Eqs. 4.8-4.17, Algorithm 3).

    Examples
    --------
    >>> from sklearn.datasets import make_moons
    >>> from sklearn.preprocessing import StandardScaler
    >>> from ikdr import KNetClustering
    >>> X = StandardScaler().fit_transform(make_moons(300, noise=0.05, random_state=0)[0])
    >>> labels = KNetClustering(2, sigma=0.2, random_state=0).fit_predict(X)
    >>> labels.shape
    (300,)
    """

    def __init__(self, n_clusters: int = 2, hidden_layer_sizes: Sequence[int] | None = None,
                 update: str = "fixed", sigma: SigmaLike = "auto",
                 embedding_sigma: float | str = "median", lam: float = 0.0,
                 max_iter: int = 100, epochs_per_iter: int = 1, learning_rate: float = 1e-2,
                 batch_size: int | None = None, tol: float = 1e-3,
                 random_state: RandomStateLike = None, verbose: int = 0) -> None:
        self.n_clusters = n_clusters
        self.hidden_layer_sizes = hidden_layer_sizes
        self.update = update
        self.sigma = sigma
        self.embedding_sigma = embedding_sigma
        self.lam = lam
        self.max_iter = max_iter
        self.epochs_per_iter = epochs_per_iter
        self.learning_rate = learning_rate
        self.batch_size = batch_size
        self.tol = tol
        self.random_state = random_state
        self.verbose = verbose

    def _fitted_defaults(self, state):
        # fitted by ikdr 0.1, before the screen: the network reads every feature
        if "encoder_" in state:
            return {"support_": np.arange(state["n_features_in_"]), "feature_scores_": None,
                    "projection_": None}
        return {}

    #: get_feature_names_out names the embedding's columns: ``knetclustering0``, ...
    _output_columns_of = "embedding_"

    _parameter_constraints: dict = {
        "n_clusters": [Interval(numbers.Integral, 2, None, closed="left")],
        "hidden_layer_sizes": [None, tuple, list],
        "update": [StrOptions({"fixed", "eig", "sma"})],
        "sigma": [Interval(numbers.Real, 0, None, closed="neither"),
                  StrOptions({"auto", "median"})],
        "embedding_sigma": [Interval(numbers.Real, 0, None, closed="neither"),
                            StrOptions({"median"})],
        "lam": [Interval(numbers.Real, 0, None, closed="left")],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "epochs_per_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "learning_rate": [Interval(numbers.Real, 0, None, closed="neither")],
        "batch_size": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "tol": [Interval(numbers.Real, 0, None, closed="neither")],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    # -- validation ----------------------------------------------------------
    def _check_params(self, n, d):
        """Data-dependent checks (the rest: ``_parameter_constraints``)."""
        self._validate_params()
        k = int(self.n_clusters)
        if k >= n:
            raise ValueError(f"n_clusters={k} needs more samples than clusters; got "
                             f"n_samples={n}")
        batch = self.batch_size
        if batch is None:
            batch = min(n, 200)
        elif batch > n:
            raise ValueError(f"batch_size={batch} is larger than n_samples={n}")
        if batch <= k:
            raise ValueError(f"batch_size={batch} must exceed n_clusters={k}")
        if self.hidden_layer_sizes is None:
            hidden = (max(2 * d, 20),) * 2
        else:
            hidden = tuple(self.hidden_layer_sizes)
            for h in hidden:
                if isinstance(h, bool) or not isinstance(h, numbers.Integral):
                    raise TypeError(f"hidden_layer_sizes entries must be ints, got {plain(h)!r}")
                if h < 1:
                    raise ValueError(f"hidden_layer_sizes entries must be >= 1, got {h}")
        return k, float(self.lam), int(batch), hidden

    # -- network ---------------------------------------------------------------
    def _build(self, X, hidden, lam, rng):
        d = X.shape[1]
        seed = np.random.default_rng(rng.randint(2**31 - 1))
        encoder = MLP((d,) + hidden + (d,), seed)
        decoder = MLP((d,) + hidden[::-1] + (d,), seed) if lam > 0 else None
        nets = [encoder] + ([decoder] if decoder is not None else [])
        if all(net.can_be_identity() for net in nets):
            for net in nets:
                net.set_identity(seed)
        else:  # Eq. 4.12: pre-train to the identity
            pretrain_identity(nets, X, rng=seed)
        return encoder, decoder

    # -- fitting -----------------------------------------------------------------
    @keep_state_on_error
    def fit(self, X: ArrayLike, y: None = None) -> KNetClustering:
        """Learn the embedding and cluster X (:func:`train_knet` does the rounds).

        Parameters
        ----------
        X : array-like (n_samples, n_features)
        y : ignored

        Returns
        -------
        self
        """
        X = every_feature = validate_data(self, X, accept_sparse="csr", dtype=np.float64,
                                          ensure_min_samples=2)
        if sp.issparse(X):
            check_sparse(X)
        else:
            check_scale(X)
        k, lam, batch, hidden = self._check_params(*X.shape)
        auto = isinstance(self.sigma, str) and self.sigma == "auto"
        # sparse or wide X: the network reads its leading singular vectors, as the
        # selection's starts do (an MLP of thousands of inputs learns the noise, slowly)
        points, projection = selection_points(X, random_state=self.random_state)
        X = points
        columns, feature_scores = None, None
        if auto and projection is None and X.shape[1] > 2 and X.shape[0] >= 3 * k:
            # a few of many features carry the clusters: the network reads those
            columns, feature_scores, _ = screen_features(X, k, random_state=self.random_state)
        support = np.arange(X.shape[1]) if columns is None else columns
        X = np.ascontiguousarray(X[:, support])
        n, d = X.shape
        k, lam, batch, hidden = self._check_params(n, d)
        rng = check_random_state(self.random_state)
        seed = rng.randint(2**31 - 1)
        found = None
        if auto:
            local = auto_kernel(X, k)
            kernel = median_scale_gaussian(local)
        else:
            kernel = Gaussian(self.sigma).fit(X, random_state=seed)
        # made when the rounds start (a fragmented start runs none)
        embedding_kernel = (
            (lambda: Gaussian(self.embedding_sigma).fit(X, random_state=seed))
            if self.update == "fixed" else None)
        encoder, decoder = self._build(X, hidden, lam, rng)
        report = IterationReport("KNetClustering", self.verbose, total=int(self.max_iter)).start()
        try:
            options = KNetOptions(embedding_kernel=embedding_kernel, lam=lam,
                                  learning_rate=self.learning_rate, batch_size=batch,
                                  max_iter=int(self.max_iter),
                                  epochs_per_iter=int(self.epochs_per_iter), tol=self.tol,
                                  update=self.update)
            out = train_knet(X, kernel, k, encoder, decoder, options=options, rng=rng,
                             report=report)
        finally:
            report.close()
        if auto:
            # the selection's starts on every feature (wide X: its leading singular
            # vectors) and the criterion that judges the rounding there: candidates
            # found on the screened features and on all of them on one footing
            own = columns is None          # the network reads the points: their kernel
            found = scored_starts(points, k, local if own else auto_kernel(points, k),
                                  screen=False,
                                  local_start=out.stop_reason == "fragmented start",
                                  random_state=seed)
        if out.stop_reason == "fragmented start":
            warnings.warn(f"KNetClustering did not train: at sigma={kernel.sigma:.4g} the kernel "
                          "isolates points of X (more of the objective comes from the points' "
                          "similarity to themselves than from pairs), so the labels are the "
                          "rounding of the start, psi = identity; a larger sigma may let KNet "
                          "learn", ConvergenceWarning, stacklevel=2)
        elif not out.converged:
            warnings.warn(f"KNetClustering stopped without converging ({out.stop_reason}); "
                          f"{out.n_accepted} of {out.n_iter} rounds were kept",
                          ConvergenceWarning, stacklevel=2)
        self.encoder_, self.decoder_ = encoder, decoder
        self.support_, self.feature_scores_ = support, feature_scores
        self.projection_ = projection
        self.kernel_ = kernel
        self.sigma_ = float(kernel.sigma)
        self.embedding_kernel_ = out.embedding_kernel
        self.embedding_ = out.embedding
        self.scale_ = out.spread / spread(encoder.forward(X))
        # The NJW rounding and predict need the eigenvectors of the learned embedding:
        # "eig" has them, "fixed" kept the start's U, "sma" one Cayley step from them.
        moved = self.update == "sma" or (self.update == "fixed" and out.n_accepted > 0)
        # Beside the selection's starts (sigma="auto") the learned kernel's NJW
        # rounding after kept rounds of "fixed" is not formed: on the 25 data sets of
        # the clustering benchmark its cut was never the lowest of the candidates,
        # and it costs an eigenproblem of order n.
        spectral = found is None or not (self.update == "fixed" and out.n_accepted > 0)
        self._round(out.embedding, kernel, k, out.U, out.degrees, rng,
                    recompute_u=moved and spectral, spectral=spectral, starts=found, X=X)
        # no projection W: the marginal part of each cluster alone
        self.cluster_importances_ = cluster_importances(every_feature, None, None, self.labels_,
                                                        k, self.random_state)
        self.n_iter_ = out.n_iter
        self.n_rejected_ = out.n_rejected
        self.converged_ = out.converged
        self.stop_reason_ = out.stop_reason
        self.history_ = out.history
        return self

    def _round(self, Psi, kernel, k, U, degrees, rng, recompute_u=False, spectral=True,
               starts=None, X=None):
        """Turn the learned embedding into labels (see the class docstring, "Output").

        Candidates: k-means on psi(X) (Alg. 3), with ``spectral`` the NJW
        rounding of U, the spectral embedding of the learned kernel
        (``recompute_u``: recomputed on psi(X) first) and, at
        ``sigma="auto"``, the starts of the clustering estimators' default
        fit on X (``starts``, :func:`ikdr.cluster.selection.scored_starts`);
        otherwise the NJW rounding of the local-scaling affinity on psi(X)
        (:func:`ikdr.spectral.auto_kernel`).
        The one with the lowest label-free criterion on X wins
        (:class:`ikdr.cluster.criterion.PartitionCriterion`).
        """
        if recompute_u:
            U, _, degrees = spectral_embedding(Psi, kernel, k, random_state=rng.randint(2**31 - 1),
                                               dense_solver="lanczos", tol=START_TOL)
        seed, km_seed, njw_seed = (rng.randint(2**31 - 1) for _ in range(3))
        # k-means on n x k data is light; its OpenMP threads only fight busy cores
        with one_thread():
            km = KMeans(n_clusters=k, n_init=10, random_state=km_seed).fit(Psi)
            njw = KMeans(n_clusters=k, n_init=10, random_state=njw_seed).fit(
                row_normalised(U)) if spectral else None
        candidates = {"kmeans": km.labels_}
        if njw is not None:
            candidates["spectral"] = njw.labels_
        if starts is None and Psi.shape[0] >= 3 * k and np.any(Psi != Psi[:1]):
            # (with the selection's starts it never won alone: its ties with them,
            # moons-2 and iris, go to the starts at the same cut)
            U_local, _, _ = spectral_embedding(Psi, auto_kernel(Psi, k), k, random_state=seed,
                                               dense_solver="lanczos", tol=START_TOL)
            candidates["local"] = njw_labels(U_local, k, random_state=seed)
        if starts is not None:
            # the starts on X; "X kmeans" is not the k-means on psi(X) named "kmeans"
            candidates.update({("X kmeans" if c.name == "kmeans" else c.name): c.labels
                               for c in starts.candidates})
            judge = starts.criterion
        else:
            judge = PartitionCriterion(X, k)
        assessments = judge.assess(candidates.values())
        self.partition_criterion_ = {name: a.criterion for name, a in zip(candidates, assessments)}
        # ties keep the earlier candidate (k-means, then the learned kernel's)
        self.rounding_ = list(candidates)[choose(assessments)]
        self.labels_ = candidates[self.rounding_]
        self.U_ = U
        self.degrees_ = degrees
        self.cluster_centers_ = km.cluster_centers_
        if self.rounding_ == "spectral":
            # Nystrom extension of U (Bengio et al. 2004): u(x) = a(x) (U^T M U)^-1 with
            # a(x) = d(x)^-1/2 k(x, .) D^-1/2 U - c; exact on the training points.
            SU = U / np.sqrt(degrees)[:, None]
            MU = u_gradient(Psi, kernel, U, degrees)[0] / 2.0
            self._nystrom_shift = np.mean(np.sqrt(degrees)[:, None] * kernel_times(
                Psi, Psi, kernel, SU) / degrees[:, None], axis=0)
            self._nystrom_inverse = np.linalg.pinv(U.T @ MU)
            self._spectral_rows = SU
            self._spectral_centers = njw.cluster_centers_

    def fit_predict(self, X: ArrayLike, y: None = None) -> np.ndarray:
        """Fit and return the cluster labels of X."""
        return self.fit(X).labels_

    def transform(self, X: ArrayLike) -> np.ndarray:
        """The learned embedding :math:`\\psi_\\theta(X)`."""
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        Z = X[:, self.support_] if self.projection_ is None else X @ self.projection_
        if sp.issparse(Z):          # narrow sparse X, read densely as in fit
            Z = Z.toarray()
        return self.encoder_.forward(np.ascontiguousarray(Z)) * self.scale_

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Cluster new points (out of sample, dissertation Table 4.4).

        With the k-means rounding: the nearest learned cluster center in the
        embedding. With the spectral rounding: the Nystrom extension of U
        through the learned kernel (4.10), then the nearest NJW center. With the
        local rounding (its bandwidths belong to the training points): the
        label of the nearest training point in the embedding. All reproduce
        ``labels_`` on the training data.
        """
        Psi = self.transform(X)
        if self.rounding_ == "kmeans":
            d2 = ((Psi[:, None, :] - self.cluster_centers_[None, :, :]) ** 2).sum(axis=2)
            return np.argmin(d2, axis=1)
        if self.rounding_ not in ("kmeans", "spectral"):
            # a partition of the training points (the local rounding, whose bandwidths
            # belong to them, or a start on X): the label of the nearest training
            # point in the embedding
            from sklearn.neighbors import NearestNeighbors

            nearest = NearestNeighbors(n_neighbors=1).fit(self.embedding_).kneighbors(
                Psi, return_distance=False)[:, 0]
            return self.labels_[nearest]
        labels = np.empty(Psi.shape[0], dtype=np.intp)
        for start in range(0, Psi.shape[0], PREDICT_CHUNK):
            P = Psi[start:start + PREDICT_CHUNK]
            KS = kernel_times(P, self.embedding_, self.kernel_, self._spectral_rows)
            deg = kernel_times(P, self.embedding_, self.kernel_, None)
            far = deg <= 0.0
            deg[far] = 1.0
            u = (KS / np.sqrt(deg)[:, None] - self._nystrom_shift) @ self._nystrom_inverse
            d2 = (row_normalised(u)[:, None, :] - self._spectral_centers[None, :, :]) ** 2
            lab = np.argmin(d2.sum(axis=2), axis=1)
            if np.any(far):  # no training point within reach of the kernel: nearest one
                nearest = np.argmin(((P[far][:, None, :] - self.embedding_[None]) ** 2).sum(2), 1)
                lab[far] = self.labels_[nearest]
            labels[start:start + PREDICT_CHUNK] = lab
        return labels
