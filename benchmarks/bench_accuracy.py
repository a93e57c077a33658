"""Supervised ISM accuracy, the papers' protocol (ISM paper Tables 4-5).

Stratified 10-fold CV; StandardScaler, ISM and SVC() fit on the training folds
only. Wine (scikit-learn, q = 3) and, when ../shared/data is present, the
papers' Cancer 683 x 9 (q = 2), for every ISM kernel and Gaussian + polynomial.

    python benchmarks/bench_accuracy.py
"""
import os
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

KERNELS = ["linear", "polynomial", "gaussian", "squared", "multiquadratic", "relative_gaussian",
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


def main():
    cv = StratifiedKFold(n_splits=10, shuffle=True, random_state=0)
    print(f"{'data':8s} {'kernel':22s} {'accuracy':>9s} {'std':>6s} {'time/fold':>9s}  paper")
    for name, X, y, q in datasets():
        for kname in KERNELS:
            kernel = Gaussian() + Polynomial() if kname == "gaussian+polynomial" else kname
            model = make_pipeline(StandardScaler(), ikdr.ISM(n_components=q, kernel=kernel), SVC())
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                acc = cross_val_score(model, X, y, cv=cv)
            per_fold = (time.perf_counter() - t0) / 10
            print(f"{name:8s} {kname:22s} {acc.mean():9.4f} {acc.std():6.3f} {per_fold:8.3f}s  "
                  f"{PAPER[name]}", flush=True)


if __name__ == "__main__":
    main()
