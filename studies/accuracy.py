"""Supervised ISM accuracy, the papers' protocol (ISM paper Tables 4-5).

Stratified 10-fold CV; StandardScaler, ISM and SVC() fit on the training folds
only. Wine (scikit-learn, q = 3) and, when ../shared/data is present, the
papers' Cancer 683 x 9 (q = 2), for every ISM kernel and Gaussian + polynomial.

    python studies/accuracy.py

Writes ``studies/results/accuracy.md`` (machine, date, command, table) and
``accuracy.json``.
"""
import argparse
import os
import sys
import time
import warnings

import numpy as np
from sklearn.datasets import load_wine
from sklearn.model_selection import StratifiedKFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

import ikdr
from ikdr.kernels import Gaussian, Polynomial

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "benchmarks"))  # _peers

KERNELS = ["linear", "polynomial", "gaussian", "squared", "multiquadric", "relative_gaussian",
           "gaussian+polynomial"]
PAPER = {"wine": "95.0-98.3%", "cancer": "97.3%"}


def datasets():
    X, y = load_wine(return_X_y=True)
    yield "wine", X, y, 3
    data = os.environ.get("IKDR_SHARED_DATA", os.path.join(os.path.dirname(__file__), "..", "..",
                                                          "shared", "data"))
    path = os.path.join(data, "cancer_683x9.csv")
    if os.path.exists(path):
        yield ("cancer", np.loadtxt(path, delimiter=","),
               np.loadtxt(os.path.join(data, "cancer_683x9_label.csv"), delimiter=","), 2)


HEADER = ("| data | kernel | q | 10-fold accuracy | std | time per fold (s) | paper (ISM19 Tables 4-5) |\n"
          "|---|---|---|---|---|---|---|")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"),
                        help="results directory (default studies/results)")
    parser.add_argument("--name", default="accuracy", help="results file stem (default accuracy)")
    args = parser.parse_args(argv)
    from _peers import run_conditions, write_results

    conditions = run_conditions("studies/accuracy.py", argv)
    cv = StratifiedKFold(n_splits=10, shuffle=True, random_state=0)
    print(conditions["machine"] + "\n\n" + HEADER, flush=True)
    rows, records = [], []
    for name, X, y, q in datasets():
        for kname in KERNELS:
            kernel = Gaussian() + Polynomial() if kname == "gaussian+polynomial" else kname
            model = make_pipeline(StandardScaler(), ikdr.ISM(n_components=q, kernel=kernel), SVC())
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                acc = cross_val_score(model, X, y, cv=cv)
            per_fold = (time.perf_counter() - t0) / 10
            records.append({"data": name, "kernel": kname, "q": q, "accuracy": float(acc.mean()),
                            "std": float(acc.std()), "time_per_fold": per_fold,
                            "paper": PAPER[name]})
            rows.append(f"| {name} | {kname} | {q} | {acc.mean():.4f} | {acc.std():.3f} | "
                        f"{per_fold:.3f} | {PAPER[name]} |")
            print(rows[-1], flush=True)
    body = ["Stratified 10-fold cross-validation (shuffled, seed 0); StandardScaler, ISM and "
            "SVC() fit on the training folds only. Time per fold includes scaling, ISM and SVC.",
            "", HEADER, *rows]
    path = write_results(args.name, "Supervised ISM accuracy, the papers' protocol", conditions,
                         body, records, out_dir=args.out)
    print(f"table: {path}")


if __name__ == "__main__":
    main()
