"""Which features matter for a clustering: recall@m of the clusterers' feature importances.

Every task has m informative features among d (the others pure noise), standardised, and
no labels are given to any method. A method ranks the features; recall@m (= precision@m)
is the share of the informative ones among its top m, exact ties broken at random
(seeded: the tasks put their informative features first, which an index order would
favour). Tasks:

* ``blobs m of d``: ``make_blobs`` with 4 centres in m = 3 dimensions, plus d - 3 standard
  normal noise features (d = 20, 50, 100);
* ``classification m of d``: ``make_classification`` with m = 3, 4, 5 informative features
  of d = 30, 60, 100, 3 classes, one cluster per class, ``class_sep=2``;
* ``grid m of d``: a 3 x 3 grid of Gaussian cells in 2 informative dimensions among d = 20,
  50 (9 clusters).

Peers, implemented here from their papers' formulas (no library of theirs is used):

* **Laplacian score** (He, Cai and Niyogi, NIPS 2005): a 5-NN graph with heat-kernel weights
  :math:`S_{ij} = e^{-\\|x_i - x_j\\|^2 / t}` (t: the mean squared distance of the
  neighbour pairs), :math:`D = \\mathrm{diag}(S1)`, :math:`L = D - S`; for each feature f,
  :math:`\\tilde f = f - (f^TD1 / 1^TD1)1` and :math:`L_f = \\tilde f^TL\\tilde f /
  \\tilde f^TD\\tilde f`; the smallest scores rank first.
* **MCFS** (Cai, Zhang and He, KDD 2010, multi-cluster feature selection): the same graph;
  the k eigenvectors y of :math:`Ly = \\lambda Dy` with the smallest eigenvalues after the
  constant one (k = n_clusters); for each, a Lasso path of y on X (LARS) stopped at m
  non-zero coefficients; a feature's score is its largest absolute coefficient over the k
  regressions.
* **RF on k-means labels**: k-means (10 starts) of all features, then a 200-tree random
  forest on those labels; its impurity importances.

The clusterers get only n_clusters and random_state (SemiSupervisedISM: the first principal
component as the scores; KDAC: a random 2-way partition as the existing clustering), as in
``bench_clustering_quality.py``. KNetClustering learns no W and has no importances.

    python studies/clustering_features.py            # the table and its figure
    python studies/clustering_features.py --quick    # one seed
"""
from __future__ import annotations

import argparse
import os
import sys
import warnings
from pathlib import Path

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from sklearn.cluster import KMeans
from sklearn.datasets import make_blobs, make_classification
from sklearn.ensemble import RandomForestClassifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import lars_path
from sklearn.neighbors import kneighbors_graph

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))  # _peers, _clustering_data

import ikdr  # noqa: E402
from _clustering_data import standardise  # noqa: E402
from _peers import recall_at_k, results_head  # noqa: E402

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "clustering_features.md"
FIGURE = HERE.parent / "docs" / "clustering_features.png"
#: neighbours of the peers' graph (the papers use p = 5)
PEER_NEIGHBORS = 5


# -- tasks --------------------------------------------------------------------

def blobs(d, seed, n=600, m=3):
    X, y = make_blobs(n, n_features=m, centers=4, random_state=seed)
    noise = np.random.default_rng(seed).standard_normal((n, d - m))
    return standardise(np.hstack([X, noise])), y, np.arange(m)


def classification(m, d, seed, n=600):
    X, y = make_classification(n, d, n_informative=m, n_redundant=0, n_repeated=0,
                               n_classes=3, n_clusters_per_class=1, class_sep=2.0,
                               shuffle=False, random_state=seed)
    return standardise(X), y, np.arange(m)


def grid(d, seed, n=630, cells=3, spacing=4.0):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % (cells * cells)
    centres = spacing * np.stack([y // cells, y % cells], axis=1).astype(float)
    X = np.hstack([centres + rng.standard_normal((n, 2)), rng.standard_normal((n, d - 2))])
    return standardise(X), y, np.arange(2)


def tasks(seeds):
    for seed in seeds:
        for d in (20, 50, 100):
            yield f"blobs 3 of {d}", seed, blobs(d, seed)
        for m in (3, 4, 5):
            for d in (30, 60, 100):
                yield f"classification {m} of {d}", seed, classification(m, d, seed)
        for d in (20, 50):
            yield f"grid 2 of {d}", seed, grid(d, seed)


# -- peers (from the papers' formulas) ----------------------------------------

def heat_graph(X, n_neighbors=PEER_NEIGHBORS):
    """The symmetric p-NN graph with heat-kernel weights (both papers' construction)."""
    D2 = kneighbors_graph(X, n_neighbors, mode="distance")
    D2 = D2.maximum(D2.T).tocsr()
    D2.data = D2.data ** 2
    t = float(np.mean(D2.data))
    S = D2.copy()
    S.data = np.exp(-S.data / t)
    return S


def laplacian_score(X, S):
    """He, Cai, Niyogi (2005), Eq. (after the centring by D): lower is better."""
    deg = np.asarray(S.sum(axis=1)).ravel()
    L = sp.diags(deg) - S
    F = X - (deg @ X) / deg.sum()
    numerator = np.sum(F * (L @ F), axis=0)
    denominator = np.sum(F * (deg[:, None] * F), axis=0)
    return numerator / np.where(denominator > 0, denominator, np.inf)


def mcfs_score(X, S, n_clusters, n_selected):
    """Cai, Zhang, He (2010): spectral embedding, then one L1 regression per eigenvector."""
    deg = np.asarray(S.sum(axis=1)).ravel()
    L = (sp.diags(deg) - S).toarray()
    vals, vecs = scipy.linalg.eigh(L, np.diag(deg), subset_by_index=[1, n_clusters])
    scores = np.zeros(X.shape[1])
    for y in vecs.T:
        _, _, coefs = lars_path(X, y, method="lasso", max_iter=4 * n_selected)
        active = np.count_nonzero(coefs, axis=0)
        step = int(np.searchsorted(active, n_selected))   # first point with m non-zeros
        a = coefs[:, min(step, coefs.shape[1] - 1)]
        scores = np.maximum(scores, np.abs(a))
    return scores


def forest_on_kmeans(X, n_clusters, seed):
    labels = KMeans(n_clusters, n_init=10, random_state=seed).fit_predict(X)
    forest = RandomForestClassifier(200, random_state=seed, n_jobs=1).fit(X, labels)
    return forest.feature_importances_


# -- the table -----------------------------------------------------------------

def first_component(X):
    Xc = X - X.mean(axis=0)
    return Xc @ np.linalg.svd(Xc, full_matrices=False)[2][0]


def rankings(X, k, m, seed):
    """Scores per method, higher = more important."""
    S = heat_graph(X)
    out = {"Laplacian score": -laplacian_score(X, S),
           "MCFS": mcfs_score(X, S, k, m),
           "RF on k-means": forest_on_kmeans(X, k, seed)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        out["ISMClustering"] = ikdr.ISMClustering(k, random_state=seed).fit(X) \
            .feature_importances_
        out["SemiSupervisedISM"] = ikdr.SemiSupervisedISM(k, random_state=seed).fit(
            X, first_component(X)).feature_importances_
        existing = np.random.default_rng(seed).integers(0, 2, X.shape[0])
        out["KDAC"] = ikdr.KDAC(k, random_state=seed).fit(X, existing).feature_importances_
    return out


PEERS = ("Laplacian score", "MCFS", "RF on k-means")
OURS = ("ISMClustering", "SemiSupervisedISM", "KDAC")


def run(seeds):
    rows = {}
    for name, seed, (X, y, informative) in tasks(seeds):
        k = int(np.unique(y).shape[0])
        scores = rankings(X, k, informative.shape[0], seed)
        row = rows.setdefault(name, {"n x d": f"{X.shape[0]} x {X.shape[1]}", "k": k})
        for method, s in scores.items():
            row.setdefault(method, []).append(recall_at_k(s, informative, seed))
        print(name, seed, {m: round(v[-1], 2) for m, v in row.items() if isinstance(v, list)},
              flush=True)
    return rows


def table(rows):
    methods = PEERS + OURS
    lines = ["| task | n x d | k | " + " | ".join(methods) + " |",
             "|---|---|---|" + "---|" * len(methods)]
    below = {m: 0 for m in OURS}
    for name, row in rows.items():
        best = max(np.mean(row[p]) for p in PEERS)
        cells = []
        for m in methods:
            v = float(np.mean(row[m]))
            mark = "*" if m in OURS and v < best - 1e-9 else ""
            if m in below:
                below[m] += bool(mark)
            cells.append(f"{v:.2f}{mark}")
        lines.append(f"| {name} | {row['n x d']} | {row['k']} | " + " | ".join(cells) + " |")
    mean = [f"{np.mean([np.mean(r[m]) for r in rows.values()]):.2f}" for m in methods]
    lines.append("| mean | | | " + " | ".join(mean) + " |")
    return "\n".join(lines), below


def figure(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    methods = PEERS + OURS
    names = list(rows)
    fig, ax = plt.subplots(figsize=(10, 4.2))
    width = 0.8 / len(methods)
    for i, m in enumerate(methods):
        ax.bar(np.arange(len(names)) + i * width, [np.mean(rows[t][m]) for t in names], width,
               label=m)
    ax.set_xticks(np.arange(len(names)) + 0.4 - width / 2)
    ax.set_xticklabels(names, rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("recall@m of the informative features")
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=7, ncol=len(methods), loc="lower center", bbox_to_anchor=(0.5, 1.0),
              frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one seed")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--out", default=str(RESULTS))
    parser.add_argument("--figure", default=str(FIGURE))
    args = parser.parse_args(argv)
    seeds = args.seeds[:1] if args.quick else args.seeds
    rows = run(seeds)
    text, below = table(rows)
    summary = ", ".join(f"{m}: {c} of {len(rows)}" for m, c in below.items())
    doc = ("\n".join(results_head("Which features matter for a clustering",
                                   "studies/clustering_features.py", argv)) + "\n"
           f"Recall@m of the m informative features, mean over seeds {seeds}. `*`: below "
           f"the best of the three peers. Tasks below the best peer: {summary}.\n\n"
           + text + "\n")
    print(doc)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(doc)
    if args.figure:
        figure(rows, args.figure)


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
