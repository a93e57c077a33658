"""Data sets of the clustering-quality benchmark and tests.

Every set is standardised (zero mean, unit variance per column), as a new
user following the docs would do. The shared paper data are read from
``../shared/data`` (or ``$IKDR_SHARED_DATA``) and skipped when absent.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

SHARED = Path(os.environ.get("IKDR_SHARED_DATA",
                             Path(__file__).resolve().parents[1].parent / "shared" / "data"))


def standardise(X):
    X = np.asarray(X, dtype=np.float64)
    std = X.std(axis=0)
    std[std == 0] = 1.0
    return (X - X.mean(axis=0)) / std


def generated(name, seed=0, n=900):
    """scikit-learn's generators: circles, moons, blobs, anisotropic, varied."""
    from sklearn import datasets as skd

    if name == "circles":
        X, y = skd.make_circles(n, factor=0.45, noise=0.06, random_state=seed)
    elif name == "moons":
        X, y = skd.make_moons(n, noise=0.07, random_state=seed)
    elif name == "blobs":
        X, y = skd.make_blobs(n, centers=3, random_state=seed)
    elif name == "anisotropic":
        X, y = skd.make_blobs(n, centers=3, random_state=seed)
        X = X @ np.array([[0.6, -0.6], [-0.4, 0.8]])
    elif name == "varied":
        X, y = skd.make_blobs(n, centers=3, cluster_std=[1.0, 2.5, 0.5], random_state=seed)
    else:
        raise ValueError(name)
    return standardise(X), y


def shared(name, max_n=None, seed=0):
    """The papers' data from ../shared/data, or None when absent."""
    files = {"spiral": ("spiral.csv", "spiral_label.csv"),
             "moon": ("moon_1000x2.csv", "moon_1000x2_label.csv"),
             "face": ("face_624x20.csv", "face_624x20_identity_label.csv"),
             "cancer683": ("cancer_683x9.csv", "cancer_683x9_label.csv")}
    xf, yf = files[name]
    if not (SHARED / xf).exists():
        return None
    X = np.loadtxt(SHARED / xf, delimiter=",")
    y = np.loadtxt(SHARED / yf, delimiter=",").astype(int).ravel()
    if max_n is not None and X.shape[0] > max_n:
        idx = np.sort(np.random.default_rng(seed).choice(X.shape[0], max_n, replace=False))
        X, y = X[idx], y[idx]
    return standardise(X), y


def bundled(name):
    from sklearn import datasets as skd

    loader = {"iris": skd.load_iris, "wine": skd.load_wine,
              "breast_cancer": skd.load_breast_cancer, "digits": skd.load_digits}[name]
    X, y = loader(return_X_y=True)
    return standardise(X), y


def text_topics(n_docs=400, n_topics=4, vocabulary=600, words=30, topical=0.4, seed=0):
    """TF-IDF of a corpus generated here (no download): each topic draws its words
    from a Zipf law over its own permutation of a shared vocabulary; documents are
    30 words, 40 % from their topic, 60 % from a common background."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    rng = np.random.default_rng(seed)
    zipf = 1.0 / np.arange(1, vocabulary + 1)
    zipf /= zipf.sum()
    orders = [rng.permutation(vocabulary) for _ in range(n_topics + 1)]
    y = rng.integers(0, n_topics, n_docs)
    docs = []
    for t in y:
        own = rng.random(words) < topical
        ids = np.where(own, orders[t][rng.choice(vocabulary, words, p=zipf)],
                       orders[-1][rng.choice(vocabulary, words, p=zipf)])
        docs.append(" ".join(f"w{i}" for i in ids))
    X = TfidfVectorizer(min_df=3).fit_transform(docs).toarray()
    return standardise(X), y


def few_informative(kind, seed=0):
    """High-dimensional sets where a few features carry the clusters.

    ``"classification"``: make_classification, 600 x 30, 3 informative features,
    3 classes; ``"blobs+noise"``: 4 blobs in 3 dimensions + 47 noise features."""
    from sklearn import datasets as skd

    if kind == "classification":
        X, y = skd.make_classification(600, 30, n_informative=3, n_redundant=0,
                                       n_classes=3, n_clusters_per_class=1, class_sep=2.0,
                                       random_state=seed)
    else:
        X, y = skd.make_blobs(600, n_features=3, centers=4, random_state=seed)
        X = np.hstack([X, np.random.default_rng(seed).standard_normal((600, 47))])
    return standardise(X), y


def all_sets(seeds=(0, 1, 2), n=900, spiral_n=1200):
    """(name, X, y) for every data set of the benchmark; shared ones only when present."""
    out = []
    for name in ("circles", "moons", "blobs", "anisotropic", "varied"):
        for s in seeds:
            X, y = generated(name, s, n)
            out.append((f"{name}-{s}", X, y))
    for name, kw in (("spiral", {"max_n": spiral_n}), ("moon", {}), ("face", {})):
        data = shared(name, **kw)
        if data is not None:
            out.append((name, *data))
    for name in ("iris", "wine", "breast_cancer", "digits"):
        out.append((name, *bundled(name)))
    out.append(("text (TF-IDF)", *text_topics()))
    out.append(("classification 3 of 30", *few_informative("classification")))
    out.append(("blobs 3 + 47 noise", *few_informative("blobs+noise")))
    return out


def baselines(X, k, seed=0):
    """Labels of k-means and of SpectralClustering(affinity="nearest_neighbors")."""
    from sklearn.cluster import KMeans, SpectralClustering

    km = KMeans(n_clusters=k, n_init=10, random_state=seed).fit_predict(X)
    sc = SpectralClustering(n_clusters=k, affinity="nearest_neighbors",
                            random_state=seed).fit_predict(X)
    return {"kmeans": km, "spectral_nn": sc}
