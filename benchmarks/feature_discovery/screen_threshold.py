"""Screen thresholds: which features are kept, per task (2 seeds)."""
import sys, os
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from common import *
from bench_feature_discovery import make_task, TASKS


def screen(X, y, z_mean, z_cov, z_diag=None):
    n, d = X.shape
    classes, yi = np.unique(y, return_inverse=True)
    S = X.T @ X / n; mu = X.mean(0); s = np.zeros(d)
    zc = np.full((d, d), z_cov)
    if z_diag is not None: np.fill_diagonal(zc, z_diag)
    for c in range(len(classes)):
        Xc = X[yi == c]; nc = Xc.shape[0]
        m = Xc.mean(0) - mu; m = m * (np.abs(m) > z_mean / np.sqrt(nc))
        D = Xc.T @ Xc / nc - S; D = D * (np.abs(D) > zc * np.sqrt((1 + S * S) / nc))
        s += nc / n * (m * m + np.sum(D * D, 1))
    return s

for key, (name, n, d, quick) in TASKS.items():
    for seed in [0, 1]:
        X, y, inf = make_task(name, seed, n, d); d = X.shape[1]
        L1, L2 = np.sqrt(2 * np.log(d)), np.sqrt(2 * np.log(d * d))
        row = []
        for label, args in [("z=sqrt(2log d^2) all", (L2, L2)), ("means+diag sqrt(2log d), pairs sqrt(2log d^2)", (L1, L2, L1))]:
            s = screen(X, y, *args); keep = set(np.flatnonzero(s > 0))
            row.append(f"{label}: kept {len(keep)} (true {len(keep & set(inf))}/{len(inf)}, false {len(keep - set(inf))})")
        print(f"{key:28s} s{seed} " + " | ".join(row), flush=True)
