"""ikdr.graph: directed SBM generator, node embeddings, reconstruction score."""
import numpy as np
import pytest
import scipy.sparse as sp

from ikdr.graph import (PRESETS, directed_sbm, node_embeddings, node_features, paper_gamma,
                        reconstruction_score)


@pytest.mark.parametrize("name", ["cora", "citeseer"])
def test_directed_sbm_presets(name):
    A, labels = directed_sbm(name, random_state=0)
    N, E, K = PRESETS[name]
    assert sp.isspmatrix_csr(A) and A.shape == (N, N) and A.nnz == E
    assert set(np.unique(A.data)) == {1.0}
    assert A.diagonal().sum() == 0
    assert labels.shape == (N,) and len(np.unique(labels)) == K
    # communities are planted: most edges stay inside them
    src, dst = A.nonzero()
    assert np.mean(labels[src] == labels[dst]) > 0.7
    B, labels_b = directed_sbm(name, random_state=0)
    assert (A != B).nnz == 0 and np.array_equal(labels, labels_b)
    C, _ = directed_sbm(name, random_state=1)
    assert (A != C).nnz > 0


def test_directed_sbm_pubmed_size_and_errors():
    A, y = directed_sbm("pubmed", random_state=0)
    assert A.shape == (19717, 19717) and A.nnz == 44338 and len(np.unique(y)) == 3
    with pytest.raises(ValueError, match="preset"):
        directed_sbm("cornell")
    with pytest.raises(ValueError, match="n_communities"):
        directed_sbm(10, 20, 11)
    with pytest.raises(ValueError, match="dense"):
        directed_sbm(10, 80, 2)


def test_reconstruction_score_toy():
    A = np.array([[0, 1, 0, 0], [0, 0, 1, 1], [0, 0, 0, 0], [1, 0, 0, 0]])
    E = np.array([[0.0], [1.0], [2.0], [3.0]])
    # node 0 -> 1 (hit); node 1 -> {0, 2} (one hit, one miss); node 3 -> 2 (miss)
    s = reconstruction_score(A, E)
    R = np.array([[0, 1, 0, 0], [1, 0, 1, 0], [0, 0, 0, 0], [0, 0, 1, 0]])
    assert s["l1"] == np.abs(A - R).sum()
    assert s["l2"] == pytest.approx(np.sqrt(((A - R) ** 2).sum()))
    assert s["precision"] == pytest.approx(2 / 4)
    with pytest.raises(ValueError, match="rows"):
        reconstruction_score(A, E[:3])
    with pytest.raises(ValueError, match="square"):
        reconstruction_score(A[:3], E[:3])


def test_node_embeddings_beat_random_embeddings():
    A, labels = directed_sbm(600, 3000, 3, p_within=0.9, random_state=0)
    emb, model = node_embeddings(A, 8, kernel="sne", solver="arpack", random_state=0,
                                 return_model=True)
    assert emb.shape == (600, 16)
    np.testing.assert_array_equal(emb[:, :8], model.row_embedding_)
    np.testing.assert_array_equal(emb[:, 8:], model.column_embedding_)
    ours = reconstruction_score(A, emb)
    rand = reconstruction_score(A, np.random.default_rng(0).normal(size=emb.shape))
    assert ours["precision"] > rand["precision"] and ours["l1"] < rand["l1"]
    # the embeddings carry the planted communities
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import cross_val_score
    acc = cross_val_score(LogisticRegression(max_iter=2000), emb / emb.std(0), labels, cv=3).mean()
    assert acc > 0.85  # random 16-d embeddings: about 0.4


def test_node_features_cosine_and_adjacency():
    A, _ = directed_sbm(60, 150, 2, random_state=0)
    X, Z = node_features(A, "adjacency")
    assert (X != A).nnz == 0 and (Z != A.T).nnz == 0
    X, Z = node_features(A, "cosine")
    B = A.toarray() + np.eye(60)
    d_out, d_in = B.sum(1), B.sum(0)
    D2 = ((X.toarray()[:, None, :] - Z.toarray()[None, :, :]) ** 2).sum(-1)
    # ||x_i - z_j||^2 = 2 - 2 ((A + I)^2)_ij / sqrt((dout_i + 1)(din_j + 1)): edges, paths, no degrees
    np.testing.assert_allclose(D2, 2 - 2 * (B @ B) / np.sqrt(np.outer(d_out, d_in)), atol=1e-12)
    with pytest.raises(ValueError, match="features"):
        node_features(A, "laplacian")


def test_node_features_edges():
    """The default features: x_i^T z_j = (2 A_ij + [i = j]) / sqrt((d_out_i + 2 + tau)
    (d_in_j + 2 + tau)), tau the mean degree; no two-step paths."""
    A, _ = directed_sbm(60, 150, 2, random_state=0)
    X, Z = node_features(A)
    assert X.shape == Z.shape == (60, 180)
    Ad = A.toarray()
    tau = Ad.sum() / 60
    d_out, d_in = Ad.sum(1), Ad.sum(0)
    expected = (2 * Ad + np.eye(60)) / np.sqrt(np.outer(d_out + 2 + tau, d_in + 2 + tau))
    np.testing.assert_allclose((X @ Z.T).toarray(), expected, atol=1e-12)
    np.testing.assert_allclose(X.multiply(X).sum(1).A.ravel(), (d_out + 2) / (d_out + 2 + tau))
    # weighted edges: tau is the mean squared row norm
    W = A.multiply(3.0).tocsr()
    Xw, Zw = node_features(W)
    np.testing.assert_allclose(Xw.multiply(Xw).sum(1).A.ravel(),
                               (9 * d_out + 2) / (9 * d_out + 2 + 9 * tau))


def test_directed_sbm_target_offset():
    A, labels = directed_sbm(400, 1200, 4, p_within=0.9, target_offset=1, random_state=0)
    src, dst = A.nonzero()
    assert np.mean(labels[dst] == (labels[src] + 1) % 4) > 0.8
    with pytest.raises(ValueError, match="target_offset"):
        directed_sbm(400, 1200, 4, target_offset=0.5)


def test_block_model_recovered():
    """The planted communities of a sparse, degree-heterogeneous directed block model
    are recovered from the KSVD (SNE) source + target embeddings of node_embeddings'
    defaults ("edges" features, median bandwidth, centered) clearly better than from the
    SVD of A, the paper's features and bandwidth, and random embeddings, both by a
    linear classifier and by graph reconstruction."""
    from scipy.sparse.linalg import svds
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_score

    A, labels = directed_sbm(1000, 3000, 4, random_state=0)
    r = 12
    emb, model = node_embeddings(A, r, solver="arpack", random_state=0, return_model=True)
    s = model.singular_values_
    assert 0.5 < model.gamma_ < np.sqrt(2.0)  # the median rule on the "edges" features
    assert s[1] / s[0] > 0.2  # centered: the first component is not the constant mean row
    U, sv, Vt = svds(A, r, random_state=0)
    svd_emb = np.hstack([U * sv, Vt.T * sv])
    paper = node_embeddings(A, r, features="adjacency", center=False, gamma=paper_gamma(A),
                            solver="arpack", random_state=0)
    rand = np.random.default_rng(0).normal(size=emb.shape)

    def accuracy(E):
        cv = StratifiedKFold(5, shuffle=True, random_state=0)
        return cross_val_score(LogisticRegression(max_iter=3000), E / E.std(0), labels,
                               cv=cv).mean()

    ours, svd, old, chance = accuracy(emb), accuracy(svd_emb), accuracy(paper), accuracy(rand)
    assert ours > 0.85 and ours > svd + 0.03 and ours > old + 0.03 and chance < 0.5, \
        (ours, svd, old, chance)
    prec = {name: reconstruction_score(A, E)["precision"]
            for name, E in (("ours", emb), ("svd", svd_emb), ("paper", paper), ("rand", rand))}
    assert prec["ours"] > 2 * max(prec["svd"], prec["paper"], prec["rand"]), prec


def test_asymmetric_communities_recovered():
    """Communities whose planted edges go from k to k + 1 (source and target roles
    differ): the defaults classify better than the SVD of A and than the former
    cosine features (whose two-step paths point to k + 2), and reconstruct better
    than the SVD of A."""
    from scipy.sparse.linalg import svds
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_score

    A, labels = directed_sbm(1000, 3000, 4, target_offset=1, random_state=0)
    r = 12
    emb = node_embeddings(A, r, solver="arpack", random_state=0)
    cosine = node_embeddings(A, r, features="cosine", solver="arpack", random_state=0)
    U, sv, Vt = svds(A, r, random_state=0)
    svd_emb = np.hstack([U * sv, Vt.T * sv])

    def accuracy(E):
        cv = StratifiedKFold(5, shuffle=True, random_state=0)
        return cross_val_score(LogisticRegression(max_iter=3000), E / E.std(0), labels,
                               cv=cv).mean()

    ours, old, svd = accuracy(emb), accuracy(cosine), accuracy(svd_emb)
    assert ours > svd + 0.03 and ours > old + 0.03, (ours, old, svd)
    assert reconstruction_score(A, emb)["precision"] > \
        2 * reconstruction_score(A, svd_emb)["precision"]
