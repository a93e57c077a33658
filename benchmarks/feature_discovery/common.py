"""Shared helpers for the feature-discovery measurements (public ikdr API only)."""
import os, time, warnings
os.environ.setdefault("OMP_NUM_THREADS", "1"); os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np
import ikdr
from ikdr.kernels import Gaussian
from scipy.spatial.distance import pdist
ikdr.set_num_threads(1)
warnings.filterwarnings("ignore")


def std(X):
    X = np.asarray(X, float); s = X.std(0); s[s == 0] = 1
    return (X - X.mean(0)) / s


def task(name, seed=0, d=None, n=None):
    rng = np.random.default_rng(seed)
    if name == "linear3":
        n, d = n or 1000, d or 50
        X = rng.standard_normal((n, d)); B = rng.standard_normal((5, 3))
        y = np.argmax(X[:, :5] @ B, 1); inf = np.arange(5)
    elif name == "ring":
        n, d = n or 1000, d or 50
        X = rng.standard_normal((n, d)); r = np.hypot(X[:, 0], X[:, 1])
        y = (r > np.median(r)).astype(int); inf = np.arange(2)
    elif name == "xor":
        n, d = n or 1000, d or 50
        X = rng.standard_normal((n, d)); y = (X[:, 0] * X[:, 1] > 0).astype(int); inf = np.arange(2)
    elif name == "ringxor":
        n, d = n or 2000, d or 50
        X = rng.standard_normal((n, d)); r = np.hypot(X[:, 0], X[:, 1])
        y = 2 * (r > np.median(r)) + (X[:, 2] * X[:, 3] > 0); inf = np.arange(4)
    elif name == "cancer_noise":
        from sklearn.datasets import load_breast_cancer
        Xc, y = load_breast_cancer(return_X_y=True)
        d0 = Xc.shape[1]
        X = np.hstack([Xc, rng.standard_normal((Xc.shape[0], 100))]); inf = np.arange(d0)
    else:
        raise KeyError(name)
    return std(X), np.asarray(y), inf


TASKS = {"linear3": {}, "ring": {}, "xor": {}, "ringxor": {}, "ring200": dict(name="ring", n=2000, d=200),
         "cancer_noise": {}}


def get(key, seed=0):
    kw = dict(TASKS[key]); name = kw.pop("name", key)
    return task(name, seed=seed, **kw)


def recall(imp, inf):
    k = len(inf); top = np.argsort(-imp)[:k]
    return len(set(top) & set(inf)) / k


def onehot_centred(y):
    _, yi = np.unique(y, return_inverse=True)
    Y = np.eye(yi.max() + 1)[yi]
    return Y - Y.mean(0)


def phi0_start(X, y, q):
    """Top-q eigenvectors of X^T Gamma X (Gamma = H Y Y^T H): the papers' Phi_0 start."""
    G = onehot_centred(y)
    A = X.T @ G
    vals, vecs = np.linalg.eigh(A @ A.T)
    return vecs[:, ::-1][:, :q]


def med(Z, m=2000, seed=0):
    if Z.shape[0] > m:
        Z = Z[np.random.default_rng(seed).choice(Z.shape[0], m, replace=False)]
    return float(np.median(pdist(Z)))


def fit_ism(X, y, sigma, q=None, W0=None, **kw):
    gamma, _ = ikdr.supervised_gamma(y, target="labels")
    ncls = len(np.unique(y))
    r = ikdr.ism(X, gamma, Gaussian(sigma), q, W0=W0, min_components=max(1, ncls - 1),
                 warn=False, **kw)
    return r


def importances(r):
    W = r.components; w = np.abs(r.eigenvalues)
    if not np.all(np.isfinite(w)) or w.sum() <= 0: w = np.ones(W.shape[1])
    imp = (W * W) @ w; return imp / imp.sum()
