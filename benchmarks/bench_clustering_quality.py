"""Clustering quality with the defaults: NMI and fit time of every ikdr clustering
estimator beside k-means and scikit-learn's SpectralClustering
(affinity="nearest_neighbors"), on every data set of the table, and how well the
label-free criterion that chooses among the selection's candidates ranks them.

Every estimator gets only ``n_clusters`` (and ``random_state``), on standardised
data, as a new user would run it. The two estimators that need a second input
get one that carries no information about the clusters, so that they must find
the structure themselves:

* ``KDAC``: ``y_existing`` = a seeded random 2-way partition (an "existing
  clustering" unrelated to the data, against which any clustering is novel).
* ``SemiSupervisedISM``: ``scores`` = the first principal component of X
  (an expert score any user has; it carries no label information).

Floor: every estimator's NMI >= (best baseline) - 0.02; the table marks rows below
the floor with ``*``. Time: on rows of at least 500 samples a fit should take at most
10 times scikit-learn's spectral clustering in the same run; ``+`` marks those that
take longer (CPU seconds of one thread, the least of ``--repeat`` runs; valid only on
a quiet machine).

The criterion (:class:`ikdr.cluster.criterion.PartitionCriterion`) is compared with
its own parts and the internal indices a user might try (the multi-graph cut,
Calinski-Harabasz, silhouette, the normalised cut of the 10-NN graph alone) on a pool of candidates per row: ISMClustering's
starts and W-step iterates (``selection_``) and k-means. For each index: the
Spearman rank correlation of its score with NMI over the pool (mean over the rows
whose candidates differ), and the rows where its choice falls below the floor (the
criterion chooses as the estimators do, :func:`ikdr.cluster.criterion.choose`).

    python benchmarks/bench_clustering_quality.py            # full table
    python benchmarks/bench_clustering_quality.py --quick    # one seed, no digits

Quality figures (NMI) are valid on a loaded machine; fit times are not (run alone
for the record). Shared paper data come from ../shared/data (or $IKDR_SHARED_DATA)
and are skipped when absent.
"""
from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr
from sklearn.cluster import KMeans, SpectralClustering
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import calinski_harabasz_score, silhouette_score

sys.path.insert(0, str(Path(__file__).resolve().parent))

import ikdr  # noqa: E402
from _clustering_data import all_sets  # noqa: E402
from _peers import results_head, timed  # noqa: E402
from ikdr.cluster.criterion import choose, normalised_cut  # noqa: E402
from ikdr.cluster.neighbors import nearest_neighbors, neighbor_graph  # noqa: E402
from ikdr.cluster.selection import scored_starts  # noqa: E402
from ikdr.metrics import nmi  # noqa: E402
from ikdr.spectral import auto_kernel  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "clustering_quality.md"
FLOOR_MARGIN = 0.02
#: a fit may take this many times scikit-learn's spectral clustering (rows of >= 500)
TIME_RATIO = 10.0
TIMED_MIN_N = 500
METHODS = ("k-means", "spectral (kNN)", "ISMClustering", "SemiSupervisedISM", "KDAC",
           "KNetClustering")


def first_component(X):
    """First principal component scores of X (an uninformative expert score)."""
    Xc = X - X.mean(axis=0)
    _, _, vt = np.linalg.svd(Xc, full_matrices=False)
    return Xc @ vt[0]


def estimators(k, seed):
    """(name, fit(X) -> labels) for every method of the table."""
    def random_partition(X):
        return np.random.default_rng(seed).integers(0, 2, X.shape[0])

    return [
        ("k-means", lambda X: KMeans(k, n_init=10, random_state=seed).fit_predict(X)),
        ("spectral (kNN)", lambda X: SpectralClustering(
            k, affinity="nearest_neighbors", random_state=seed).fit_predict(X)),
        ("ISMClustering", lambda X: ikdr.ISMClustering(k, random_state=seed).fit(X).labels_),
        ("SemiSupervisedISM", lambda X: ikdr.SemiSupervisedISM(k, random_state=seed).fit(
            X, first_component(X)).labels_),
        ("KDAC", lambda X: ikdr.KDAC(k, random_state=seed).fit(X, random_partition(X)).labels_),
        ("KNetClustering", lambda X: ikdr.KNetClustering(k, random_state=seed).fit_predict(X)),
    ]


def run(sets, only=None, repeat=1):
    rows = []
    for name, X, y in sets:
        k = int(np.unique(y).shape[0])
        row = {"data": name, "n": X.shape[0], "d": X.shape[1], "k": k, "X": X, "y": y}
        for method, fit in estimators(k, 0):
            if only and method not in only and method not in ("k-means", "spectral (kNN)"):
                continue
            # CPU seconds: the table's time floor is 10 x the kNN spectral clustering's
            labels, seconds = timed(fit, X, repeat=repeat, clock=time.process_time, quiet=True)
            row[method] = (nmi(y, labels), seconds)
            print(f"{name:16s} {method:18s} NMI {row[method][0]:.3f}  {seconds:7.3f} s",
                  flush=True)
        rows.append(row)
    return rows


def table(rows):
    methods = [m for m in METHODS if any(m in r for r in rows)]
    head = "| data | n x d | k | " + " | ".join(f"{m} NMI | time (s)" for m in methods) + " |"
    sep = "|---|---|---|" + "---|---|" * len(methods)
    lines = [head, sep]
    below = {m: 0 for m in methods[2:]}
    slow = {m: 0 for m in methods[2:]}
    for r in rows:
        best = max(r["k-means"][0], r["spectral (kNN)"][0])
        budget = TIME_RATIO * r["spectral (kNN)"][1] if r["n"] >= TIMED_MIN_N else np.inf
        cells = []
        for m in methods:
            if m not in r:
                cells.append("| ")
                continue
            v, t = r[m]
            mark = time_mark = ""
            if m in below and v < best - FLOOR_MARGIN:
                below[m] += 1
                mark = "*"
            if m in slow and t > budget:
                slow[m] += 1
                time_mark = "+"
            cells.append(f"{v:.3f}{mark} | {t:.3f}{time_mark}")
        lines.append(f"| {r['data']} | {r['n']} x {r['d']} | {r['k']} | " + " | ".join(cells) + " |")
    summary = ", ".join(f"{m}: {c} of {len(rows)}" for m, c in below.items())
    timed_rows = sum(r["n"] >= TIMED_MIN_N for r in rows)
    slow_summary = ", ".join(f"{m}: {c} of {timed_rows}" for m, c in slow.items())
    return "\n".join(lines), summary, slow_summary


def candidate_pool(X, k):
    """ISMClustering's candidates (its starts and W-step iterates) and k-means on X,
    with the default fit's criterion."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = ikdr.ISMClustering(k, random_state=0).fit(X)
    pool = {c["candidate"]: c["labels"] for c in model.selection_}
    pool["k-means"] = KMeans(k, n_init=10, random_state=0).fit_predict(X)
    criterion = scored_starts(X, k, auto_kernel(X, k), random_state=0).criterion
    return pool, criterion


def index_scores(X, labels_list, criterion):
    """Every index's score of each candidate, higher = better."""
    graph = neighbor_graph(nearest_neighbors(X, 10)[1], 10)
    ok = [np.unique(lab).shape[0] > 1 for lab in labels_list]
    return {
        "cut over compactness (ours)": [-criterion(lab) for lab in labels_list],
        "multi-graph cut": [-float(np.mean(criterion.cuts(lab))) for lab in labels_list],
        "10-NN normalised cut": [-normalised_cut(graph, lab) for lab in labels_list],
        "silhouette": [silhouette_score(X, lab) if o else -1.0
                       for lab, o in zip(labels_list, ok)],
        "Calinski-Harabasz": [calinski_harabasz_score(X, lab) if o else 0.0
                              for lab, o in zip(labels_list, ok)],
    }


def criterion_table(rows):
    """Rank correlation with NMI and the floor of each index's pick (see the module)."""
    results = {}
    for r in rows:
        X, y, k = r["X"], r["y"], r["k"]
        pool, criterion = candidate_pool(X, k)
        labels_list = list(pool.values())
        nmis = np.array([nmi(y, lab) for lab in labels_list])
        floor = max(r["k-means"][0], r["spectral (kNN)"][0]) - FLOOR_MARGIN
        for index, scores in index_scores(X, labels_list, criterion).items():
            entry = results.setdefault(index, {"rho": [], "below": [], "picked": []})
            scores = np.asarray(scores, dtype=float)
            if np.ptp(nmis) > 1e-9 and np.ptp(scores) > 0:
                entry["rho"].append(spearmanr(scores, nmis)[0])
            # ours picks as the clusterers do (ikdr.cluster.criterion.choose: admissible,
            # then separated partitions first); the others by their score alone
            best = choose(criterion.assess(labels_list)) if index.endswith("(ours)") else \
                int(np.argmax(scores))
            picked = nmis[best]
            entry["picked"].append(picked)
            if picked < floor:
                entry["below"].append(r["data"])
    lines = ["| index | mean rank correlation with NMI | rows | mean NMI of its pick | "
             "picks below the floor |", "|---|---|---|---|---|"]
    for index, e in results.items():
        below = ", ".join(e["below"]) if e["below"] else "none"
        lines.append(f"| {index} | {np.mean(e['rho']):.2f} | {len(e['rho'])} | "
                     f"{np.mean(e['picked']):.3f} | {len(e['below'])}: {below} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one seed, no digits")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--only", nargs="+", help="data set name prefixes to run")
    parser.add_argument("--methods", nargs="+", help="ikdr estimators to run (default all)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="fits per method and row; the least CPU time is kept")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    seeds = [args.seeds[0]] if args.quick else args.seeds
    sets = all_sets(seeds=tuple(seeds))
    if args.quick:
        sets = [s for s in sets if s[0] != "digits"]
    if args.only:
        sets = [s for s in sets if any(s[0].startswith(p) for p in args.only)]
    rows = run(sets, args.methods, args.repeat)
    text, summary, slow = table(rows)
    doc = ("\n".join(results_head("Clustering quality with the defaults",
                                   "bench_clustering_quality.py", argv)) + "\n"
           "Standardised data; every estimator gets only n_clusters and random_state=0 "
           "(KDAC: a random 2-way partition as the existing clustering; SemiSupervisedISM: "
           "the first principal component as the scores). `*`: NMI below (best of k-means "
           f"and kNN spectral) - {FLOOR_MARGIN}. Rows below the floor: {summary}. Times: "
           f"CPU seconds of one thread, the least of {args.repeat} fits; `+`: more than "
           f"{TIME_RATIO:g} x the kNN spectral clustering of the row (rows of at least "
           f"{TIMED_MIN_N} samples): {slow}.\n\n"
           + text + "\n\n## The criterion against other internal indices\n\n"
           "Candidates per row: ISMClustering's starts and W-step iterates and k-means. "
           "Rank correlation: Spearman's, of the index with NMI over the row's candidates, "
           "averaged over the rows whose candidates differ in NMI.\n\n"
           + criterion_table(rows) + "\n")
    print(doc)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(doc)


if __name__ == "__main__":
    main()
