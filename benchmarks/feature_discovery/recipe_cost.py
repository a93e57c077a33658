"""Cost of the recipe's extra work (screen + start + med(XW0)) against one ISM() fit, papers' data."""
import sys, os
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from common import *
from bench_feature_discovery import moment_screen, phi0_start
from sklearn.datasets import load_wine, load_breast_cancer, load_digits
for name, (X, y) in {"wine": load_wine(return_X_y=True), "breast_cancer": load_breast_cancer(return_X_y=True),
                     "digits": load_digits(return_X_y=True)}.items():
    X = std(X)
    t = time.perf_counter(); 
    for _ in range(5): m = ikdr.ISM().fit(X, y)
    tf = (time.perf_counter() - t) / 5
    t = time.perf_counter()
    for _ in range(5):
        s = moment_screen(X, y); keep = np.flatnonzero(s > 0); Xs = X[:, keep]
        W0 = phi0_start(Xs, y, max(m.components_.shape[1], 2)); sig = med(Xs @ W0, m=3000)
    te = (time.perf_counter() - t) / 5
    print(f"{name:14s} ISM() fit {tf*1e3:.1f} ms; screen + Phi_0 start + med(XW0) {te*1e3:.1f} ms ({te/tf:.2f}x of the fit)", flush=True)
