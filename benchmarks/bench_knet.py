"""Time KNetClustering.fit and KernelDependenceNetwork.fit beside the dissertation's times.

Run once:  python benchmarks/bench_knet.py [--quick]
Needs ../shared/data (moon, spiral, cancer, face); wine comes from scikit-learn.
Paper times (dissertation Tables 4.3 and 6.1, 16-core Xeon E5-2630 v3 + GPU):
KNet_EIG run time (after preprocessing) and KDN fit time per fold.
"""
import argparse
import os
import time
from pathlib import Path

import numpy as np
from sklearn.datasets import load_wine
from sklearn.metrics import normalized_mutual_info_score
from sklearn.preprocessing import StandardScaler

import ikdr

DATA = Path(os.environ.get("IKDR_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))

# (prep, RT_EIG) seconds from Table 4.3; KDN seconds from Table 6.1
PAPER_KNET = {"moon": (129.0, 28.9), "spiral": (300.0, 42.0), "cancer": (150.0, 19.3),
              "wine": (462.0, 7.2), "face": (1320.0, 20.9)}
PAPER_KNET_NMI = {"moon": 1.0, "spiral": 1.0, "cancer": 0.842, "wine": 0.91, "face": 0.93}
PAPER_KDN = {"wine": 0.28, "cancer": 2.58, "spiral": 0.87}
SIGMA = {"moon": 0.1701, "spiral": 0.1708}  # Table 4.1 (the median heuristic elsewhere)


def load(name):
    if name == "wine":
        X, y = load_wine(return_X_y=True)
        return StandardScaler().fit_transform(X), y
    if name == "face":
        return (np.loadtxt(DATA / "face_624x20.csv", delimiter=","),
                np.loadtxt(DATA / "face_624x20_identity_label.csv", delimiter=","))
    stem = {"moon": "moon_1000x2", "cancer": "cancer_683x9", "spiral": "spiral"}[name]
    X = np.loadtxt(DATA / f"{stem}.csv", delimiter=",")
    return StandardScaler().fit_transform(X), np.loadtxt(DATA / f"{stem}_label.csv", delimiter=",")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="cap KNet at 20 rounds")
    parser.add_argument("--knet", default="moon,wine,cancer,face,spiral",
                        help="comma-separated KNet datasets")
    parser.add_argument("--kdn", default="wine,cancer,spiral",
                        help="comma-separated KDN datasets ('' for none)")
    args = parser.parse_args()
    print(f"threads={ikdr.get_num_threads()}")
    print("KNetClustering.fit (seed 0)")
    print(f"{'data':8s} {'n':>5s} {'fit s':>8s} {'paper RT':>9s} {'paper RT+prep':>14s} "
          f"{'rounds':>6s} {'undone':>6s} {'output':>8s} {'NMI':>6s} {'paper':>6s}")
    for name in filter(None, args.knet.split(",")):
        X, y = load(name)
        k = len(np.unique(y))
        model = ikdr.KNetClustering(k, update="eig", sigma=SIGMA.get(name, "median"),
                                    learning_rate=1e-3, tol=1e-2, random_state=0,
                                    max_iter=20 if args.quick else 100)
        t = time.perf_counter()
        model.fit(X)
        dt = time.perf_counter() - t
        score = normalized_mutual_info_score(y, model.labels_, average_method="geometric")
        prep, rt = PAPER_KNET[name]
        print(f"{name:8s} {len(X):5d} {dt:8.2f} {rt:9.1f} {prep + rt:14.1f} {model.n_iter_:6d} "
              f"{model.n_rejected_:6d} {model.rounding_:>8s} "
              f"{score:6.3f} {PAPER_KNET_NMI[name]:6.3f}", flush=True)
    print("KernelDependenceNetwork.fit (all samples, seed 0)")
    print(f"{'data':8s} {'n':>5s} {'fit s':>8s} {'paper s':>8s} {'layers':>6s} {'train acc':>9s}")
    for name in filter(None, args.kdn.split(",")):
        X, y = load(name)
        net = ikdr.KernelDependenceNetwork(random_state=0)
        t = time.perf_counter()
        net.fit(X, y)
        dt = time.perf_counter() - t
        print(f"{name:8s} {len(X):5d} {dt:8.2f} {PAPER_KDN[name]:8.2f} {net.n_layers_:6d} "
              f"{net.score(X, y):9.3f}", flush=True)


if __name__ == "__main__":
    main()
