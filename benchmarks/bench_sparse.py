"""Which words, which genes: ikdr on sparse, very wide data with planted structure.

Three sections, each on data generated here (seeded) and fitted from its
``scipy.sparse`` CSR form, never densified:

``documents``
    20,000 documents x 30,000 term counts, about 100 distinct terms a document:
    Zipf noise (token ranks ~ 1/r^1.1 over the vocabulary) plus three planted
    groups of 5 terms at random vocabulary positions. Two groups are present in
    a document with probability 1/2 each, independently; the third ("linear")
    too; the class (4) is ``2 * (A xor B) + C``. Every term of a present group
    occurs with probability 0.9 (once, besides its noise tokens). A term of A or B alone
    says nothing about the class (the XOR): univariate tests miss them.
    ``ikdr.ISM()`` with its defaults on the counts; its ranking is its
    selection ``support_`` ordered by ``feature_importances_``, then the other
    terms by theirs (the ranking by the importances alone is shown beside it).
    recall@15: the share of the 15 planted terms
    among the 15 top-ranked; "XOR recall": of the 10 terms of A and B among
    the 15.
``cells``
    10,000 cells x 20,000 genes of negative-binomial counts (dispersion 2,
    gene means log-normal, cell library sizes log-normal), 6 clusters of equal
    size, 10 marker genes per cluster (mean x 6 in their cluster), and an
    interaction pair: two genes each expressed in half the cells of every
    cluster, jointly (both or neither) in cluster 4 and exclusively (one of
    the two) in cluster 5, so that neither gene alone differs between
    clusters. ``ikdr.ISMClustering(6, approximation="nystrom")`` on log(1 + counts)
    (sparse); its ranking is ``feature_importances_``. Marker recall: the share
    of the 60 markers among its 60 top-ranked genes; the peers rank genes
    against the labels of the usual unsupervised pipeline (k-means on a
    20-component truncated SVD of the same matrix), and, for reference, against
    the true clusters ("oracle").
``scale``
    200,000 documents as above, ``ikdr.ISM(approximation="nystrom")``: the fit
    time and recall@15.

Peers (same data, same run, one thread each): chi2 and mutual information
(univariate), L1-regularised logistic regression (liblinear, C = 0.1; the
largest absolute coefficient over the classes), a random forest of 100 trees
on the 2,000 columns with the most stored values (the full matrix would take
far longer than 10 minutes), and pyHSICLasso (``pip install pyhsiclasso``;
skipped when absent) on 1,000 rows of those 2,000 columns, where its dense
O(n d) blocks fit in memory. Fit times include nothing but the fit (and, for
the peers of ``cells``, the ranking against fixed labels).

Floors (on 2 cores): documents at most 30 s with recall@15 = 1.0, the XOR terms
included; cells at most 60 s with marker recall at least the best unsupervised
peer's; 200,000 documents with ``approximation="nystrom"`` at most 120 s.
Memory: the peak of Python's allocations during the ikdr fit (tracemalloc)
and the process's RSS growth, beside the size the dense X would take.

Run from the repository root (every section)::

    OMP_NUM_THREADS=2 python benchmarks/bench_sparse.py

``--only documents cells scale`` picks sections, ``--quick`` runs them at a
tenth of the size (a smoke test; no floors), ``--no-peers`` skips the peers.
Writes ``benchmarks/results/sparse.md`` and ``.json`` (``--out DIR`` elsewhere).
"""
from __future__ import annotations

import argparse
import time
import tracemalloc
import warnings

import numpy as np
import scipy.sparse as sp

import ikdr
from _peers import (floors_missed, machine_summary, peak_rss_mb, run_conditions, timed,
                    write_results)

DOC_FLOOR_SECONDS, CELL_FLOOR_SECONDS, SCALE_FLOOR_SECONDS = 30.0, 60.0, 120.0
GROUP_SIZE = 5
MARKERS_PER_CLUSTER = 10
RF_COLUMNS, HSIC_ROWS = 2000, 1000


# ---------------------------------------------------------------- data
def documents(n=20_000, d=30_000, tokens=100, seed=0):
    """(X counts CSR, y, planted term indices (A, B, C)); module docstring."""
    rng = np.random.default_rng(seed)
    # Zipf tokens: each document draws about ``tokens`` distinct terms
    ranks = np.arange(1, d + 1, dtype=np.float64)
    p = ranks ** -1.1
    p /= p.sum()
    order = rng.permutation(d)                      # which term has which frequency rank
    draws = rng.poisson(tokens * 1.25, n)
    rows = np.repeat(np.arange(n), draws)
    cols = order[rng.choice(d, size=rows.size, p=p)]
    noise = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n, d))
    # planted groups at vocabulary positions of rank 500-5,000 (their noise is rare;
    # the same share of the vocabulary in a --quick run's smaller one)
    ranks = np.arange(d // 60, min(d, d // 6))
    planted = order[rng.choice(ranks, size=3 * GROUP_SIZE, replace=False)]
    groups = planted.reshape(3, GROUP_SIZE)
    present = rng.random((n, 3)) < 0.5
    y = 2 * (present[:, 0] ^ present[:, 1]).astype(int) + present[:, 2].astype(int)
    occurs = (rng.random((n, 3, GROUP_SIZE)) < 0.9) & present[:, :, None]
    i, g, t = np.nonzero(occurs)
    counts = np.ones(i.size)
    signal = sp.csr_matrix((counts, (i, groups[g, t])), shape=(n, d))
    X = (noise + signal).tocsr()
    X.sum_duplicates()
    return X, y, groups


def cells(n=10_000, d=20_000, k=6, seed=0):
    """(X log1p counts CSR, true clusters, markers (k x 10), interaction pair); module docstring."""
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(k), n // k + 1)[:n]
    rng.shuffle(labels)
    mean = np.exp(rng.normal(-2.6, 1.2, d))        # about 90% zeros
    library = np.exp(rng.normal(0.0, 0.3, n))
    genes = rng.permutation(d)
    markers = genes[:k * MARKERS_PER_CLUSTER].reshape(k, MARKERS_PER_CLUSTER)
    pair = genes[k * MARKERS_PER_CLUSTER:k * MARKERS_PER_CLUSTER + 2]
    mean[markers.ravel()] = np.maximum(mean[markers.ravel()], 0.3)
    mean[pair] = 0.0
    # negative binomial, dispersion 2: Poisson of a gamma-distributed rate, drawn for the
    # cells whose rate is not negligible only (the counts of a cell-gene pair are
    # independent, so the sparse matrix is built gene block by gene block)
    blocks = []
    for start in range(0, d, 500):
        cols = np.arange(start, min(d, start + 500))
        mu = library[:, None] * mean[None, cols]
        for c in range(k):
            in_c = labels == c
            boost = np.isin(cols, markers[c])
            mu[np.ix_(in_c, boost)] *= 6.0
        rate = rng.gamma(2.0, mu / 2.0)
        blocks.append(sp.csr_matrix(rng.poisson(rate).astype(np.float64)))
    X = sp.hstack(blocks).tocsr()
    # the pair: each gene in half the cells of every cluster; both or neither in
    # cluster 4, exactly one in cluster 5
    a = rng.random(n) < 0.5
    b = np.where(labels == 4, a, np.where(labels == 5, ~a, rng.random(n) < 0.5))
    counts = np.column_stack([a, b]) * (2.0 + rng.poisson(2.0, (n, 2)))
    rows, which = np.nonzero(counts)
    X = (X + sp.csr_matrix((counts[rows, which], (rows, pair[which])), shape=X.shape)).tocsr()
    X.eliminate_zeros()
    return X.log1p(), labels, markers, pair


# ---------------------------------------------------------------- helpers
def recall_at(ranking, truth, k):
    return float(np.isin(np.asarray(ranking)[:k], np.asarray(truth).ravel()).mean() *
                 k / np.asarray(truth).size)


def ranking_of(scores, seed=0):
    """Features by decreasing score, exact ties broken at random (seeded)."""
    scores = np.asarray(scores, dtype=np.float64)
    scores = np.where(np.isfinite(scores), scores, -np.inf)
    tiebreak = np.random.default_rng(seed).random(scores.size)
    return np.lexsort((tiebreak, -scores))


def ism_ranking(model, seed=0):
    """ISM's ranking: the features of ``support_`` (its selection) by
    ``feature_importances_``, then the others by theirs. The importances alone are
    first-order held-out HSIC: a group whose fitted direction lowers the held-out
    objective to first order (an XOR at a bandwidth below its spread) scores
    about 0 there, below the marginal parts of noise terms."""
    order = ranking_of(model.feature_importances_, seed)
    chosen = np.isin(order, model.support_)
    return np.concatenate([order[chosen], order[~chosen]])


def measured(fit):
    """(result, seconds, peak MB of Python allocations, RSS growth MB) of ``fit()``."""
    rss = peak_rss_mb()
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        result = fit()
        seconds = time.perf_counter() - t0
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, seconds, peak / 2**20, max(0.0, peak_rss_mb() - rss)


def frequent_columns(X, count):
    return np.sort(np.argsort(-np.bincount(X.indices, minlength=X.shape[1]),
                              kind="stable")[:count])


def peer_scores(X, labels, seed=0):
    """{peer: (scores over every column, seconds)} of the supervised peers against ``labels``."""
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.feature_selection import chi2, mutual_info_classif
    from sklearn.linear_model import LogisticRegression
    from sklearn.multiclass import OneVsRestClassifier

    d = X.shape[1]
    out = {}
    (scores, _), seconds = timed(lambda: chi2(X, labels))
    out["chi2"] = (np.nan_to_num(scores), seconds)
    scores, seconds = timed(lambda: mutual_info_classif(X, labels, discrete_features=True,
                                                        random_state=seed))
    out["mutual information"] = (scores, seconds)
    # liblinear fits one class against the rest (OneVsRestClassifier for 3+ classes)
    model, seconds = timed(lambda: OneVsRestClassifier(LogisticRegression(
        l1_ratio=1.0, C=0.1, solver="liblinear")).fit(X, labels))
    coefficients = np.vstack([np.abs(m.coef_).max(axis=0) for m in model.estimators_])
    out["L1 logistic"] = (coefficients.max(axis=0), seconds)
    cols = frequent_columns(X, RF_COLUMNS)
    forest, seconds = timed(lambda: RandomForestClassifier(
        100, n_jobs=1, random_state=seed).fit(X[:, cols], labels))
    scores = np.zeros(d)
    scores[cols] = forest.feature_importances_
    out[f"random forest ({RF_COLUMNS} frequent columns)"] = (scores, seconds)
    hsic = hsic_lasso_scores(X, labels, cols, seed)
    if hsic is not None:
        out[f"HSIC Lasso ({HSIC_ROWS} rows x {RF_COLUMNS} columns)"] = hsic
    return out


def hsic_lasso_scores(X, labels, cols, seed, k=60):
    try:
        from pyHSICLasso import HSICLasso
    except ImportError:
        return None
    rows = np.sort(np.random.default_rng(seed).choice(X.shape[0], min(HSIC_ROWS, X.shape[0]),
                                                      replace=False))
    dense = X[rows][:, cols].toarray()          # the peer's own dense blocks (1,000 x 2,000)

    def fit():
        lasso = HSICLasso()
        lasso.input(dense, labels[rows])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lasso.classification(k, B=20, M=3, n_jobs=1)
        return lasso

    lasso, seconds = timed(fit)
    scores = np.zeros(X.shape[1])
    chosen = np.asarray(lasso.get_index(), dtype=int)
    scores[cols[chosen]] = np.abs(np.asarray(lasso.get_index_score(), dtype=float)) + 1.0
    return scores, seconds


# ---------------------------------------------------------------- sections
def run_documents(scale, peers, records, lines, missed, label="documents", n=20_000,
                  approximation=None, floor=DOC_FLOOR_SECONDS):
    n = max(2000, int(n * scale))
    d = max(3000, int(30_000 * scale))
    X, y, groups = documents(n, d)
    k = groups.size
    dense_mb = n * d * 8 / 2**20
    options = {} if approximation is None else {"approximation": approximation}
    model, seconds, traced, rss = measured(
        lambda: ikdr.ISM(random_state=0, **options).fit(X, y))
    ranking = ism_ranking(model)
    recall = recall_at(ranking, groups, k)
    xor = float(np.isin(groups[:2], ranking[:k]).mean())
    by_importance = ranking_of(model.feature_importances_)
    name = f"ikdr.ISM({', '.join(f'{a}={b!r}' for a, b in options.items())})"
    rows = [(name, seconds, recall, xor, f"{traced:.0f} / {rss:.0f}"),
            (f"{name}, by feature_importances_ alone", seconds,
             recall_at(by_importance, groups, k),
             float(np.isin(groups[:2], by_importance[:k]).mean()), "-")]
    records.append({"section": label, "method": name, "n": n, "d": d, "nnz": int(X.nnz),
                    "seconds": seconds, "recall": recall, "xor_recall": xor,
                    "recall_by_importance": rows[1][2], "xor_recall_by_importance": rows[1][3],
                    "traced_mb": traced, "rss_mb": rss, "support": model.support_.tolist()})
    if peers:
        for peer, (scores, secs) in peer_scores(X, y).items():
            r = ranking_of(scores)
            rows.append((peer, secs, recall_at(r, groups, k),
                         float(np.isin(groups[:2], r[:k]).mean()), "-"))
            records.append({"section": label, "method": peer, "seconds": secs,
                            "recall": rows[-1][2], "xor_recall": rows[-1][3]})
    lines += [f"## {label}: {n:,} x {d:,} counts, {X.nnz:,} stored values "
              f"(dense: {dense_mb:,.0f} MB)", "",
              "| method | fit (s) | recall@15 | XOR recall | MB (traced / RSS growth) |",
              "|---|---|---|---|---|"]
    lines += [f"| {m} | {s:.1f} | {r:.2f} | {x:.2f} | {mem} |" for m, s, r, x, mem in rows]
    lines.append("")
    if scale == 1.0:
        if seconds > floor:
            missed.append(f"{label}: {seconds:.1f} s against a floor of {floor:.0f} s")
        if recall < 1.0 or xor < 1.0:
            missed.append(f"{label}: recall@15 {recall:.2f} (XOR {xor:.2f}) against 1.0")


def run_cells(scale, peers, records, lines, missed):
    from sklearn.cluster import KMeans
    from sklearn.decomposition import TruncatedSVD

    n, d = max(1200, int(10_000 * scale)), max(2000, int(20_000 * scale))
    X, labels, markers, pair = cells(n, d)
    k = markers.size
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, seconds, traced, rss = measured(lambda: ikdr.ISMClustering(
            6, approximation="nystrom", random_state=0).fit(X))
    ranking = ranking_of(model.feature_importances_)
    recall = recall_at(ranking, markers, k)
    nmi = ikdr.metrics.nmi(labels, model.labels_)
    pair_rank = [int(np.flatnonzero(ranking == g)[0]) + 1 for g in pair]
    name = 'ikdr.ISMClustering(6, approximation="nystrom")'
    rows = [(name, seconds, recall, nmi, pair_rank, f"{traced:.0f} / {rss:.0f}")]
    records.append({"section": "cells", "method": name, "n": n, "d": d, "nnz": int(X.nnz),
                    "seconds": seconds, "recall": recall, "nmi": nmi, "pair_rank": pair_rank,
                    "traced_mb": traced, "rss_mb": rss})
    best_peer = 0.0
    if peers:
        def pipeline():
            Z = TruncatedSVD(20, random_state=0).fit_transform(X)
            return KMeans(6, n_init=10, random_state=0).fit_predict(Z)

        found, svd_seconds = timed(pipeline)
        for tag, target in (("k-means on SVD labels", found), ("oracle labels", labels)):
            for peer, (scores, secs) in peer_scores(X, target).items():
                r = ranking_of(scores)
                rec = recall_at(r, markers, k)
                extra = svd_seconds if tag.startswith("k-means") else 0.0
                rows.append((f"{peer}, {tag}", secs + extra, rec,
                             ikdr.metrics.nmi(labels, target),
                             [int(np.flatnonzero(r == g)[0]) + 1 for g in pair], "-"))
                records.append({"section": "cells", "method": rows[-1][0],
                                "seconds": rows[-1][1], "recall": rec, "nmi": rows[-1][3],
                                "pair_rank": rows[-1][4]})
                if tag.startswith("k-means"):
                    best_peer = max(best_peer, rec)
    lines += [f"## cells: {n:,} x {d:,} log(1 + counts), {X.nnz:,} stored values "
              f"(dense: {n * d * 8 / 2**20:,.0f} MB)", "",
              "| method | time (s) | marker recall@60 | NMI of the labels | ranks of the pair "
              "| MB (traced / RSS growth) |", "|---|---|---|---|---|---|"]
    lines += [f"| {m} | {s:.1f} | {r:.2f} | {q:.2f} | {p[0]}, {p[1]} | {mem} |"
              for m, s, r, q, p, mem in rows]
    lines.append("")
    if scale == 1.0:
        if seconds > CELL_FLOOR_SECONDS:
            missed.append(f"cells: {seconds:.1f} s against a floor of {CELL_FLOOR_SECONDS:.0f} s")
        if peers and recall < best_peer:
            missed.append(f"cells: marker recall {recall:.2f} against the best peer's "
                          f"{best_peer:.2f}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=["documents", "cells", "scale"],
                        default=["documents", "cells", "scale"])
    parser.add_argument("--quick", action="store_true", help="a tenth of the size, no floors")
    parser.add_argument("--no-peers", action="store_true")
    parser.add_argument("--out", default=None, help="results folder (default benchmarks/results)")
    args = parser.parse_args(argv)
    scale = 0.1 if args.quick else 1.0
    records, lines, missed = [], [], []
    if "documents" in args.only:
        run_documents(scale, not args.no_peers, records, lines, missed)
    if "cells" in args.only:
        run_cells(scale, not args.no_peers, records, lines, missed)
    if "scale" in args.only:
        run_documents(scale, False, records, lines, missed, label="scale", n=200_000,
                      approximation="nystrom", floor=SCALE_FLOOR_SECONDS)
    if scale == 1.0:
        lines.append(floors_missed(missed))
    print(machine_summary())
    print("\n".join(lines))
    path = write_results("sparse", "Sparse, very wide data: which words, which genes",
                         run_conditions("bench_sparse.py", argv), lines, records, args.out)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
