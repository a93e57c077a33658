"""Clustering quality with the defaults: NMI and fit time of every ikdr
clustering estimator beside k-means and scikit-learn's SpectralClustering
(affinity="nearest_neighbors"), on every data set of the benchmark.

Every estimator gets only ``n_clusters`` (and ``random_state``), on standardised
data, as a new user would run it. The two estimators that need a second input
get one that carries no information about the clusters, so that they must find
the structure themselves:

* ``KDAC``: ``y_existing`` = a seeded random 2-way partition (an "existing
  clustering" unrelated to the data, against which any clustering is novel).
* ``SemiSupervisedISM``: ``scores`` = the first principal component of X
  (an expert score any user has; it carries no label information).

Floor: every estimator's NMI >= (best baseline) - 0.02. The table
marks rows below the floor with ``*``.

    PYTHONPATH=src python benchmarks/bench_clustering_quality.py            # full table
    PYTHONPATH=src python benchmarks/bench_clustering_quality.py --quick    # one seed, no digits

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
from sklearn.cluster import KMeans, SpectralClustering
from sklearn.exceptions import ConvergenceWarning

sys.path.insert(0, str(Path(__file__).resolve().parent))

import ikdr  # noqa: E402
from _clustering_data import all_sets  # noqa: E402
from _peers import results_head  # noqa: E402
from ikdr.metrics import nmi  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "clustering_quality.md"
FLOOR_MARGIN = 0.02


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


def run(sets, only=None):
    rows = []
    for name, X, y in sets:
        k = int(np.unique(y).shape[0])
        row = {"data": name, "n": X.shape[0], "d": X.shape[1], "k": k}
        for method, fit in estimators(k, 0):
            if only and method not in only and method not in ("k-means", "spectral (kNN)"):
                continue
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                labels = fit(X)
            row[method] = (nmi(y, labels), time.perf_counter() - t0)
            print(f"{name:16s} {method:18s} NMI {row[method][0]:.3f}  {row[method][1]:7.2f} s",
                  flush=True)
        rows.append(row)
    return rows


def table(rows):
    methods = [m for m in ("k-means", "spectral (kNN)", "ISMClustering", "SemiSupervisedISM",
                           "KDAC", "KNetClustering") if any(m in r for r in rows)]
    head = "| data | n x d | k | " + " | ".join(f"{m} NMI | time (s)" for m in methods) + " |"
    sep = "|---|---|---|" + "---|---|" * len(methods)
    lines = [head, sep]
    below = {m: 0 for m in methods[2:]}
    for r in rows:
        best = max(r["k-means"][0], r["spectral (kNN)"][0])
        cells = []
        for m in methods:
            if m not in r:
                cells.append("| ")
                continue
            v, t = r[m]
            mark = ""
            if m in below and v < best - FLOOR_MARGIN:
                below[m] += 1
                mark = "*"
            cells.append(f"{v:.3f}{mark} | {t:.2f}")
        lines.append(f"| {r['data']} | {r['n']} x {r['d']} | {r['k']} | " + " | ".join(cells) + " |")
    summary = ", ".join(f"{m}: {c} of {len(rows)}" for m, c in below.items())
    return "\n".join(lines), summary


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one seed, no digits")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--only", nargs="+", help="data set name prefixes to run")
    parser.add_argument("--methods", nargs="+", help="ikdr estimators to run (default all)")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    seeds = [args.seeds[0]] if args.quick else args.seeds
    sets = all_sets(seeds=tuple(seeds))
    if args.quick:
        sets = [s for s in sets if s[0] != "digits"]
    if args.only:
        sets = [s for s in sets if any(s[0].startswith(p) for p in args.only)]
    rows = run(sets, args.methods)
    text, summary = table(rows)
    doc = ("\n".join(results_head("Clustering quality with the defaults",
                                   "bench_clustering_quality.py", argv)) + "\n"
           "Standardised data; every estimator gets only n_clusters and random_state=0 "
           "(KDAC: a random 2-way partition as the existing clustering; SemiSupervisedISM: "
           "the first principal component as the scores). `*`: NMI below (best of k-means "
           f"and kNN spectral) - {FLOOR_MARGIN}. Rows below the floor: {summary}.\n\n"
           + text + "\n")
    print(doc)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(doc)


if __name__ == "__main__":
    main()
