"""Directed graphs: KSVD node embeddings, graph reconstruction, a directed SBM.

A directed graph's adjacency A (A_ij = 1 for an edge i -> j) gives each node
two roles: source, with out-links x_i = A[i, :], and target, with in-links
z_j = A[:, j]. KSVD on G_ij = kappa(x_i, z_j) embeds both (ICML 2024 paper,
Section 4.1); a node's embedding concatenates its source and target parts.
:func:`node_features` gives the paper's vectors, or vectors under which
the kernel sees the direct edges and each node itself, with a regularised
degree normalisation (the default of :func:`node_embeddings`), or the
older self-loop cosine vectors.
"""
from __future__ import annotations

import numbers
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_array, check_random_state

from .ksvd.estimator import KernelSVD
from ._utils.typing import ArrayLike, RandomStateLike
from ._utils.validation import plain

#: (nodes, edges, classes) of the citation graphs of the paper's Tables 1 and 4.
PRESETS = {"cora": (2708, 5429, 7), "citeseer": (3312, 4732, 6), "pubmed": (19717, 44338, 3)}


def _check_adjacency(A):
    A = check_array(A, accept_sparse=("csr", "csc", "coo"), dtype=np.float64,
                    ensure_all_finite=True, input_name="A")
    if A.shape[0] != A.shape[1]:
        raise ValueError(f"an adjacency matrix must be square, got shape {A.shape}")
    return sp.csr_matrix(A)


#: Input features of the SNE kernel for a graph (see :func:`node_features`).
FEATURES = ("edges", "cosine", "adjacency")


def node_features(A: Any, features: str = "edges") -> tuple[Any, Any]:
    r"""The two point sets KSVD compares for a directed graph: sources and targets.

    Parameters
    ----------
    A : {array-like, sparse matrix} of shape (N, N)
        Adjacency, A_ij != 0 for an edge i -> j.
    features : {"edges", "cosine", "adjacency"}, default="edges"
        ``"edges"``: the out-links, the node and the node again for a source,
        the node, the in-links and the node for a target (3N coordinates),
        :math:`x_i = (A[i, :], e_i, e_i) / \sqrt{\|A[i, :]\|^2 + 2 + \tau}`,
        :math:`z_j = (e_j, A[:, j], e_j) / \sqrt{\|A[:, j]\|^2 + 2 + \tau}`,
        with :math:`\tau = \|A\|_F^2 / N` (the mean degree of a binary A).
        Then :math:`x_i^T z_j = (2 A_{ij} + [i = j]) / (\ldots)`: the kernel
        sees the direct edge i -> j (from both of its ends) and the node
        itself, and no two-step paths, whose communities differ from the
        edges' when the communities are asymmetric. :math:`\tau` is the
        regularised degree normalisation of spectral embeddings of sparse
        graphs (Qin and Rohe, 2013; Amini et al., 2013): without it a pair of
        low-degree nodes joined by an edge is at cosine 1 and the top
        components sit on such pairs (measured below).
        ``"adjacency"`` (the paper's, Section 4.1): :math:`x_i = A[i, :]`
        (out-links) and :math:`z_j = A[:, j]` (in-links). Then
        :math:`\|x_i - z_j\|^2 = d^{out}_i + d^{in}_j - 2(A^2)_{ij}`: a direct
        edge i -> j does not enter G at all, only two-step paths do, and the
        distance is dominated by the degrees (on a sparse graph the SNE matrix
        is then nearly the rank-one :math:`\propto e^{-d^{in}_j/\gamma^2}`).
        ``"cosine"``: the same vectors with a self-loop, scaled to unit length,
        :math:`x_i = (A + I)[i, :] / \|\cdot\|` and
        :math:`z_j = (A + I)[:, j] / \|\cdot\|`; then
        :math:`\|x_i - z_j\|^2 = 2 - 2\,((A + I)^2)_{ij} / \sqrt{(d^{out}_i + 1)(d^{in}_j + 1)}`,
        which sees the edge i -> j (twice), the two-step paths and i = j, and
        no longer the degrees (every pair without a common neighbor is at
        distance :math:`\sqrt 2`).

    Returns
    -------
    X, Z : scipy.sparse.csr_matrix of shape (N, N), or (N, 3N) for ``"edges"``
        Sources (rows) and targets (rows), for ``KernelSVD().fit(X, Z)``.

    Examples
    --------
    >>> import numpy as np
    >>> from ikdr.graph import node_features
    >>> X, Z = node_features(np.array([[0, 1], [0, 0]]), "cosine")
    >>> np.round(X.toarray(), 3)
    array([[0.707, 0.707],
           [0.   , 1.   ]])
    >>> X, Z = node_features(np.array([[0, 1], [0, 0]]))  # "edges", tau = 1/2
    >>> np.round((X @ Z.T).toarray(), 3)  # (2 A + I) / sqrt((d_out + 2.5)(d_in + 2.5))
    array([[0.338, 0.571],
           [0.   , 0.338]])
    """
    A = _check_adjacency(A)
    if features not in FEATURES:
        raise ValueError(f"features must be one of {FEATURES}, got {features!r}")
    if features == "adjacency":
        return A, A.T.tocsr()
    if features == "cosine":
        B = (A + sp.eye(A.shape[0], format="csr")).tocsr()
        B.sum_duplicates()
        return _scaled_rows(B), _scaled_rows(B.T.tocsr())
    eye = sp.eye(A.shape[0], format="csr")
    tau = float(A.multiply(A).sum()) / A.shape[0]
    return (_scaled_rows(sp.hstack([A, eye, eye], format="csr"), tau),
            _scaled_rows(sp.hstack([eye, A.T, eye], format="csr"), tau))


def _scaled_rows(X, tau=0.0):
    """Rows divided by sqrt(||row||^2 + tau) (unit rows for tau = 0)."""
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel() + tau)
    return sp.csr_matrix(sp.diags(1.0 / np.where(norms > 0, norms, 1.0)) @ X)


def node_embeddings(A: Any, n_components: int = 8, *, kernel: str = "sne",
                    features: str = "edges", center: bool = True,
                    return_model: bool = False, **params: Any) -> Any:
    r"""Source and target embeddings of the nodes of a directed graph, concatenated.

    Fits :class:`ikdr.KernelSVD` between the sources and the targets of
    :func:`node_features` and returns ``[U Lambda, V Lambda]`` (N x 2r).

    Parameters
    ----------
    A : {array-like, sparse matrix} of shape (N, N)
        Adjacency, A_ij != 0 for an edge i -> j; kept sparse.
    n_components : int, default=8
        r.
    kernel : str or callable, default="sne"
    features : {"edges", "cosine", "adjacency"}, default="edges"
        What the kernel compares (:func:`node_features`): ``"edges"``, the
        direct edges and the node itself under a regularised degree
        normalisation; ``"adjacency"`` is the paper's out-links against
        in-links; ``"cosine"`` (the default before 0.2) adds a self-loop and
        scales each vector to unit length, so the kernel also sees the
        two-step paths.
    center : bool, default=True
        Double centering :math:`H G H` (the paper's centered feature maps,
        Section 2.2): the first component is then not the near-constant
        mean row of the SNE matrix.
    return_model : bool, default=False
        Also return the fitted KernelSVD.
    **params
        Other :class:`ikdr.KernelSVD` parameters (gamma, solver, ...).

    Returns
    -------
    embedding : ndarray of shape (N, 2 r)
    model : KernelSVD, only if ``return_model``

    Notes
    -----
    The bandwidth. ``gamma=None`` is KernelSVD's median rule: on a sparse
    graph most source-target pairs share no coordinate, so the median
    distance is that of two unrelated low-degree nodes (about 1.1 with the
    default ``"edges"`` features, :math:`\sqrt 2` with ``"cosine"``). The
    paper's rule for the adjacency features is
    ``features="adjacency", gamma=paper_gamma(A)`` (:func:`paper_gamma`).

    Measured (:doc:`/benchmarks/ksvd`, graph table; logistic regression
    on the standardised embeddings, stratified 5-fold; reconstruction
    precision), r = 16, accuracy / precision:
    ``directed_sbm("cora", random_state=0)``: the defaults 0.81 / 0.105,
    the ``"cosine"`` features 0.73 / 0.14, the paper's features and rule
    0.57 / 0.011, the SVD of A 0.70 / 0.032, random embeddings 0.23 / 0.018;
    asymmetric communities (``target_offset=1``): 0.76 / 0.051, cosine
    0.58 / 0.12, SVD of A 0.69 / 0.005; Citeseer preset: 0.73 / 0.043,
    cosine 0.69 / 0.12, SVD of A 0.54 / 0.007; PubMed preset: 0.87, cosine
    0.74, SVD of A 0.76. Why the cosine features lost to the SVD of A on
    the last two graphs (measured): their two-step paths i -> k -> j point
    to community k + 2 when the planted edges go from k to k + 1, so each
    row of G mixes three communities; and unit-length vectors put every
    edge between two low-degree nodes at cosine near 1, so on PubMed the
    top target components sit on a few such nodes (inverse participation
    ratio up to 0.57) and the communities need r = 32. The ``"edges"``
    features drop the two-step paths and add :math:`\tau` to the squared
    norms (regularised spectral embedding); each change alone helps little
    (asymmetric Cora: no paths 0.73 with :math:`\tau`, 0.42 without;
    :math:`\tau` with paths 0.59). The price: the cosine features reconstruct
    better (their two-step paths are what reconstruction rewards), though
    the defaults stay far above the SVD of A and random embeddings.
    Bandwidths below about 1 on the cosine features (and per-row bandwidths
    calibrated to a perplexity, as t-SNE does, on either features) make G
    nearly diagonal: its top components then sit on a few nodes and the
    communities are lost (accuracy 0.30-0.37).

    Examples
    --------
    >>> from ikdr.graph import directed_sbm, node_embeddings
    >>> A, labels = directed_sbm(200, 800, 2, random_state=0)
    >>> node_embeddings(A, 4, random_state=0).shape
    (200, 8)
    """
    X, Z = node_features(A, features)
    if params.get("gamma") is not None:     # the paper's bandwidth: sigma = gamma / sqrt(2)
        params["sigma"] = float(params.pop("gamma")) / np.sqrt(2.0)
    params.pop("gamma", None)
    model = KernelSVD(n_components=n_components, kernel=kernel, center=center,
                      **params).fit(X, Z)
    emb = np.hstack([model.row_embedding_, model.column_embedding_])
    return (emb, model) if return_model else emb


def paper_gamma(A: Any, k: float = 1.0) -> float:
    r"""The KSVD paper's SNE bandwidth for a graph: :math:`\gamma = k\sqrt{M\,\mathrm{var}(A)}`.

    App. C.2 of the paper (Table 4): M columns, var(A) the variance of the
    adjacency's entries, k = 1 for Cora and Citeseer and 0.5 for PubMed (the
    paper quotes var = 0.0002 and gamma ~ 0.74 for Cora). In the paper's
    parametrisation :math:`e^{-\|x - z\|^2/\gamma^2}`, as ``KernelSVD(gamma=...)``.

    What it does to a sparse graph: :math:`\|x_i - z_j\|^2 = d^{out}_i + d^{in}_j - 2(A^2)_{ij}`,
    so off the two-step pattern of A^2 the SNE matrix is the rank-one
    :math:`\propto e^{-d^{in}_j/\gamma^2}` and only the two-step paths
    (weight :math:`e^{2(A^2)_{ij}/\gamma^2}`) carry structure: the larger gamma
    the closer G is to rank one (measured on ``directed_sbm("cora")``:
    sigma_2 / sigma_1 = 0.015 at this rule's gamma = 1.42, 0.61 at 0.74).
    The paper's quoted var = 0.0002 for Cora is not the variance of its
    binary adjacency (7.4e-4) but close to that of the row-normalised one
    (1.7e-4 on the Cora preset, gamma 0.68): a plausible reading, not
    confirmed. Neither scale makes the adjacency features recover the
    communities (:func:`node_embeddings` Notes; :doc:`/ksvd`): use it with
    ``node_embeddings(A, features="adjacency", center=False, gamma=paper_gamma(A))``
    to reproduce the paper's setting.

    Examples
    --------
    >>> import numpy as np
    >>> from ikdr.graph import paper_gamma
    >>> round(paper_gamma(np.eye(4)), 3)
    0.866
    """
    A = _check_adjacency(A)
    N, M = A.shape
    mean = A.sum() / (N * M)
    var = float(A.multiply(A).sum() / (N * M) - mean ** 2)
    return float(k) * float(np.sqrt(M * var))


def reconstruction_score(A: Any, embedding: ArrayLike, *, batch_size: int = 2048
                         ) -> dict[str, float]:
    r"""Graph reconstruction from embeddings (paper appendix C.1).

    Each node v with out-degree k_v is linked to its k_v nearest other nodes
    in the embedding (Euclidean); the reconstruction R is compared with A.

    Parameters
    ----------
    A : {array-like, sparse matrix} of shape (N, N)
        Ground-truth adjacency (binarised: A_ij != 0 is an edge).
    embedding : ndarray of shape (N, k)

    Returns
    -------
    scores : dict
        ``"l1"`` = :math:`\sum_{ij} |A - R|_{ij}`, ``"l2"`` = :math:`\|A - R\|_F` (the paper's norms, lower
        is better), ``"precision"`` = fraction of reconstructed edges that are
        edges of A (higher is better).

    Examples
    --------
    >>> import numpy as np
    >>> from ikdr.graph import reconstruction_score
    >>> A = np.array([[0, 1, 0], [0, 0, 1], [0, 0, 0]])
    >>> reconstruction_score(A, np.array([[0.0], [1.0], [1.5]]))  # 0 -> 1, 1 -> 2: exact
    {'l1': 0.0, 'l2': 0.0, 'precision': 1.0}
    """
    from sklearn.neighbors import NearestNeighbors

    A = _check_adjacency(A)
    A.data = (A.data != 0).astype(np.float64)
    A.eliminate_zeros()
    E = check_array(embedding, dtype=np.float64, input_name="embedding")
    N = A.shape[0]
    if E.shape[0] != N:
        raise ValueError(f"embedding has {E.shape[0]} rows, the graph has {N} nodes")
    deg = np.diff(A.indptr)
    kmax = int(min(deg.max(initial=0), N - 1))
    rows: Any = []
    cols: Any = []
    if kmax > 0:
        nn = NearestNeighbors(n_neighbors=kmax + 1).fit(E)
        for r0 in range(0, N, batch_size):
            idx = np.arange(r0, min(N, r0 + batch_size))
            neigh = nn.kneighbors(E[idx], return_distance=False)
            for i, row in zip(idx, neigh):
                if deg[i] == 0:
                    continue
                row = row[row != i][: deg[i]]
                rows.append(np.full(row.size, i))
                cols.append(row)
    rows = np.concatenate(rows) if rows else np.zeros(0, dtype=int)
    cols = np.concatenate(cols) if cols else np.zeros(0, dtype=int)
    R = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(N, N))
    hits = float(A.multiply(R).sum())
    diff = (A - R).tocsr()
    return {"l1": float(np.abs(diff.data).sum()), "l2": float(np.sqrt((diff.data ** 2).sum())),
            "precision": hits / max(R.nnz, 1)}


def directed_sbm(n_nodes: int | str = "cora", n_edges: int | None = None,
                 n_communities: int | None = None, *, p_within: float = 0.8,
                 degree_exponent: float = 2.5, target_offset: int = 0,
                 random_state: RandomStateLike = None) -> tuple[Any, np.ndarray]:
    """Directed, degree-corrected stochastic block model with community labels.

    Communities have random (Dirichlet(5)) sizes. Each node draws an out- and
    an in-propensity from a Pareto law (heavy-tailed degrees, as in citation
    graphs); an edge picks its source by out-propensity and, with probability
    ``p_within``, a target of the same community (else any node) by
    in-propensity. Exactly ``n_edges`` distinct edges, no self-loops.
    With ``target_offset=t`` the planted targets of community k are in
    community (k + t) mod K instead: asymmetric communities whose nodes
    link to one community and are linked from another (a cyclic flow, as in
    the directed SBMs of Cucuringu et al., 2020), so source and target
    roles differ.

    Parameters
    ----------
    n_nodes : int or {"cora", "citeseer", "pubmed"}, default="cora"
        A preset fixes (nodes, edges, communities) to 2,708 / 5,429 / 7,
        3,312 / 4,732 / 6 or 19,717 / 44,338 / 3.
    n_edges : int or None
        Defaults to the preset's, or 2 * n_nodes.
    n_communities : int or None
        Defaults to the preset's, or 2.
    p_within : float, default=0.8
    degree_exponent : float, default=2.5
        Pareto tail exponent of the propensities (> 1).
    target_offset : int, default=0
        Planted edges go from community k to community (k + target_offset)
        mod K (0: within communities).
    random_state : int, RandomState instance or None

    Returns
    -------
    A : scipy.sparse.csr_matrix of shape (N, N), binary
    labels : ndarray of shape (N,)

    Examples
    --------
    >>> from ikdr.graph import directed_sbm
    >>> A, y = directed_sbm("citeseer", random_state=0)
    >>> A.shape, A.nnz, len(set(y))
    ((3312, 3312), 4732, 6)
    """
    if isinstance(n_nodes, str):
        if n_nodes not in PRESETS:
            raise ValueError(f"unknown preset {plain(n_nodes)!r}; use one of {sorted(PRESETS)} "
                             "or an int")
        N, E, K = PRESETS[n_nodes]
        E = E if n_edges is None else n_edges
        K = K if n_communities is None else n_communities
    else:
        N = n_nodes
        E = 2 * N if n_edges is None else n_edges
        K = 2 if n_communities is None else n_communities
    for name, v, lo in (("n_nodes", N, 2), ("n_edges", E, 1), ("n_communities", K, 1)):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < lo:
            raise ValueError(f"{name} must be an int >= {lo}, got {plain(v)!r}")
    if K > N:
        raise ValueError(f"n_communities={K} is larger than n_nodes={N}")
    if E > N * (N - 1) // 4:
        raise ValueError(f"n_edges={E} is too dense for a sparse graph on {N} nodes")
    if not 0.0 <= p_within <= 1.0:
        raise ValueError(f"p_within must be in [0, 1], got {p_within}")
    if not degree_exponent > 1.0:
        raise ValueError(f"degree_exponent must be > 1, got {degree_exponent}")
    if isinstance(target_offset, bool) or not isinstance(target_offset, numbers.Integral):
        raise ValueError(f"target_offset must be an int, got {plain(target_offset)!r}")
    rng = check_random_state(random_state)
    sizes = np.maximum(1, np.round(rng.dirichlet(5.0 * np.ones(K)) * N).astype(int))
    sizes[-1] = N - sizes[:-1].sum()
    while sizes[-1] < 1:  # rounding took too much from the last community
        j = int(np.argmax(sizes[:-1]))
        sizes[j] -= 1
        sizes[-1] += 1
    labels = rng.permutation(np.repeat(np.arange(K), sizes))
    theta_out = rng.pareto(degree_exponent - 1.0, N) + 1.0
    theta_in = rng.pareto(degree_exponent - 1.0, N) + 1.0
    p_out = theta_out / theta_out.sum()
    members = [np.flatnonzero(labels == k) for k in range(K)]
    p_in_comm = [theta_in[m] / theta_in[m].sum() for m in members]
    p_in_all = theta_in / theta_in.sum()
    edges = np.zeros(0, dtype=np.int64)
    while edges.size < E:
        batch = 2 * (E - edges.size) + 64
        src = rng.choice(N, batch, p=p_out)
        dst = rng.choice(N, batch, p=p_in_all)
        within = rng.random_sample(batch) < p_within
        for k in range(K):
            sel = np.flatnonzero(within & (labels[src] == k))
            t = (k + int(target_offset)) % K
            if sel.size:
                dst[sel] = members[t][rng.choice(members[t].size, sel.size, p=p_in_comm[t])]
        keep = src != dst
        codes = src[keep].astype(np.int64) * N + dst[keep]
        # keep first occurrences in draw order, so the result depends only on the seed
        merged = np.concatenate([edges, codes])
        _, first = np.unique(merged, return_index=True)
        edges = merged[np.sort(first)]
    edges = edges[:E]
    A = sp.csr_matrix((np.ones(E), (edges // N, edges % N)), shape=(N, N))
    return A, labels
