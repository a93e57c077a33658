"""Which features matter: recall@k of feature importances on tasks with a known answer.

Every task has k informative features and the others pure noise (standardised). A method
ranks the features; recall@k (= precision@k) is the share of the true ones among its top k.

Columns
-------
ISM()                 the library's defaults, whatever they are when this runs
median                ISM(sigma=median of all-d distances, n_components=q)      (the papers' rule)
med*sqrt(q/d)         ISM(sigma=median x sqrt(q/d))
med(XW0)              ISM(sigma=median of the distances of X W0), W0 = Phi_0's top-q eigenvectors
med(XW0),q>=2         the same with q at least 2
screen+med(XW0)       the defaults' recipe: thresholded class-moment screen, ISM on the kept
                      features only (W = 0 elsewhere), sigma = median of X_S W0, q >= 2;
                      dropped features ranked last, by their raw screen score
RF                    RandomForestClassifier(200 trees).feature_importances_ (a regressor for
                      a continuous target)
PI                    permutation importance of a 100-tree forest on a held-out 30%
NCA                   NeighborhoodComponentsAnalysis(n_components=q): row norms of components_
MI                    mutual_info_classif
HSICLasso             pyHSICLasso (skipped when not installed)

Only ikdr's public API and the peers are used. Usage::

    python benchmarks/bench_feature_discovery.py [--quick] [--seeds 0 1] [--only ring xor]
        [--skip-peers] [--out results.md]

``--quick`` runs the small tasks with one seed (about a minute on one core); the full run adds
ring + XOR at d = 784 (the start study) and a second seed.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
from scipy.spatial.distance import pdist

import ikdr
from ikdr.kernels import Gaussian

warnings.filterwarnings("ignore")

# ---------------------------------------------------------------------------- tasks

def _std(X):
    X = np.asarray(X, float)
    s = X.std(0)
    s[s == 0] = 1
    return (X - X.mean(0)) / s


def make_task(name, seed=0, n=None, d=None):
    """(X standardised, y, informative feature indices, is_classification)."""
    rng = np.random.default_rng(seed)
    if name == "linear3":                       # 3 classes, 5 informative linear features
        n, d = n or 1000, d or 50
        X = rng.standard_normal((n, d))
        y = np.argmax(X[:, :5] @ rng.standard_normal((5, 3)), 1)
        inf = np.arange(5)
    elif name == "ring":                        # class = radius of (x0, x1) above its median
        n, d = n or 1000, d or 50
        X = rng.standard_normal((n, d))
        r = np.hypot(X[:, 0], X[:, 1])
        y = (r > np.median(r)).astype(int)
        inf = np.arange(2)
    elif name == "xor":                         # class = sign(x0 x1)
        n, d = n or 1000, d or 50
        X = rng.standard_normal((n, d))
        y = (X[:, 0] * X[:, 1] > 0).astype(int)
        inf = np.arange(2)
    elif name == "ringxor":                     # 4 classes: ring on (x0, x1) x XOR on (x2, x3)
        n, d = n or 2000, d or 50
        X = rng.standard_normal((n, d))
        r = np.hypot(X[:, 0], X[:, 1])
        y = 2 * (r > np.median(r)) + (X[:, 2] * X[:, 3] > 0)
        inf = np.arange(4)
    elif name == "pairs":                       # pairwise interactions: sign(x0 x1 + x2 x3)
        n, d = n or 1000, d or 50
        X = rng.standard_normal((n, d))
        y = (X[:, 0] * X[:, 1] + X[:, 2] * X[:, 3] > 0).astype(int)
        inf = np.arange(4)
    elif name == "continuous":                  # a continuous target: sin(2 x0) + x1^2 + noise
        n, d = n or 1000, d or 50
        X = rng.standard_normal((n, d))
        y = np.sin(2 * X[:, 0]) + X[:, 1] ** 2 + 0.1 * rng.standard_normal(n)
        inf = np.arange(2)
    elif name == "cancer+noise":                # breast cancer (30) + 100 noise features
        from sklearn.datasets import load_breast_cancer
        Xc, y = load_breast_cancer(return_X_y=True)
        X = np.hstack([Xc, rng.standard_normal((Xc.shape[0], 100))])
        inf = np.arange(Xc.shape[1])
    elif name == "wine+noise":                  # wine (13) + 50 noise features
        from sklearn.datasets import load_wine
        Xc, y = load_wine(return_X_y=True)
        X = np.hstack([Xc, rng.standard_normal((Xc.shape[0], 50))])
        inf = np.arange(Xc.shape[1])
    elif name == "cancer683+noise":             # the papers' Cancer (683 x 9, ../shared/data) + 50 noise
        path = _shared_data("cancer_683x9.csv")
        Xc = np.loadtxt(path, delimiter=",")
        y = np.loadtxt(path.replace(".csv", "_label.csv"), delimiter=",").astype(int)
        X = np.hstack([Xc, rng.standard_normal((Xc.shape[0], 50))])
        inf = np.arange(Xc.shape[1])
    else:
        raise KeyError(name)
    return _std(X), np.asarray(y), inf


def _shared_data(filename):
    """Path of a file of the shared data sets (``../shared/data`` beside the project root, or
    $IKDR_SHARED_DATA); FileNotFoundError when absent (the task is then skipped)."""
    here = os.path.dirname(os.path.abspath(__file__))
    for root in (os.environ.get("IKDR_SHARED_DATA", ""),
                 os.path.join(here, "..", "..", "shared", "data"), "/work/shared/data"):
        if root and os.path.exists(os.path.join(root, filename)):
            return os.path.join(root, filename)
    raise FileNotFoundError(f"{filename} (shared data set) not found")


#: key -> (task name, n, d, q_true, quick?)
TASKS = {
    "linear3 (1000x50)": ("linear3", None, None, True),
    "ring (1000x50)": ("ring", None, None, True),
    "xor (1000x50)": ("xor", None, None, True),
    "ring+xor (2000x50)": ("ringxor", None, None, True),
    "pairs (1000x50)": ("pairs", None, None, True),
    "ring (2000x200)": ("ring", 2000, 200, True),
    "cancer+100 noise (569x130)": ("cancer+noise", None, None, True),
    "wine+50 noise (178x63)": ("wine+noise", None, None, True),
    "cancer683+50 noise (683x59)": ("cancer683+noise", None, None, True),
    "ring+xor (2000x784)": ("ringxor", 2000, 784, False),
    "ring+xor (5000x800)": ("ringxor", 5000, 800, False),
    "continuous target (1000x50)": ("continuous", None, None, True),
    "ring (20000x20)": ("ring", 20000, 20, False),
}

# ---------------------------------------------------------------- bandwidth rules & start

def median_distance(Z, max_rows=2000, seed=0):
    """Median pairwise distance of the rows of Z (seeded subsample above max_rows rows)."""
    if Z.shape[0] > max_rows:
        Z = Z[np.random.default_rng(seed).choice(Z.shape[0], max_rows, replace=False)]
    dist = pdist(Z)
    med = float(np.median(dist))
    if med <= 0:
        pos = dist[dist > 0]
        if pos.size == 0:
            raise ValueError("all rows coincide: the bandwidth is zero")
        med = float(np.median(pos))
    return med


def centred_onehot(y):
    _, yi = np.unique(y, return_inverse=True)
    Y = np.eye(yi.max() + 1)[yi]
    return Y - Y.mean(0)


def phi0_start(X, y, q):
    """The papers' start: top-q eigenvectors of Phi_0 = X^T Gamma X, Gamma = H Y Y^T H."""
    A = X.T @ centred_onehot(y)
    _, vecs = np.linalg.eigh(A @ A.T)
    return vecs[:, ::-1][:, :q]


def moment_screen(X, y, *, raw=False):
    """Per-feature score from class moments, hard-thresholded in standard errors:

        s_j = sum_c p_c [ T1(mu_c - mu)_j^2 + sum_k T(S_c - S)_jk^2 ],

    mu_c, S_c the class mean and second moment (X standardised), se(mu) = 1/sqrt(n_c),
    se(S_jk) = sqrt((1 + S_jk^2)/n_c). Thresholds (Bonferroni-like): z1 = sqrt(2 log d) for the
    d means and the d variances (diagonal), z2 = sqrt(2 log d^2) for the d^2 covariances. Cost
    O(n d^2). s_j > 0: a class mean, variance or covariance involving feature j differs beyond
    noise. ``raw=True`` also returns the unthresholded score (sum of squared z-scores), used
    only to rank the features the screen drops."""
    n, d = X.shape
    classes, yi = np.unique(y, return_inverse=True)
    z1 = np.sqrt(2 * np.log(max(d, 2)))
    z2 = np.sqrt(2 * np.log(max(d * d, 2)))
    zc = np.full((d, d), z2)
    np.fill_diagonal(zc, z1)
    S = X.T @ X / n
    mu = X.mean(0)
    s = np.zeros(d)
    r = np.zeros(d)
    for c in range(len(classes)):
        Xc = X[yi == c]
        nc = Xc.shape[0]
        m = (Xc.mean(0) - mu) * np.sqrt(nc)                    # z-scores of the class means
        D = (Xc.T @ Xc / nc - S) / np.sqrt((1 + S * S) / nc)    # z-scores of the second moments
        r += nc / n * (m * m + np.sum(D * D, 1) / d)
        m = m * (np.abs(m) > z1) / np.sqrt(nc)
        D = D * (np.abs(D) > zc) * np.sqrt((1 + S * S) / nc)
        s += nc / n * (m * m + np.sum(D * D, 1))
    return (s, r) if raw else s


def _ism(X, y, sigma, q, **kw):
    gamma, _ = ikdr.supervised_gamma(y, target="labels")
    return ikdr.ism(X, gamma, Gaussian(sigma), q, warn=False, **kw)


def _imp(W, lam):
    w = np.abs(np.asarray(lam, float))
    if not np.all(np.isfinite(w)) or w.sum() <= 0:
        w = np.ones(W.shape[1])
    imp = (W * W) @ w
    return imp / imp.sum()


def default_q(X, y):
    return ikdr.ISM(sigma=1.0, max_iter=1).fit(X, y).components_.shape[1]


def ism_column(rule, X, y, q_default):
    d = X.shape[1]
    if rule == "ISM()":
        m = ikdr.ISM(random_state=0).fit(X, y)
        return m.feature_importances_
    if _continuous(y):
        raise RuntimeError("the emulated rules take class labels")
    q = max(q_default, 2) if rule.endswith("q>=2") or rule.startswith("screen") else q_default
    q = min(q, d)
    if rule == "median":
        r = _ism(X, y, median_distance(X), q)
    elif rule == "med*sqrt(q/d)":
        r = _ism(X, y, median_distance(X) * np.sqrt(q / d), q)
    elif rule.startswith("med(XW0)"):
        r = _ism(X, y, median_distance(X @ phi0_start(X, y, q)), q)
    elif rule == "screen+med(XW0)":
        s, raw = moment_screen(X, y, raw=True)
        keep = np.flatnonzero(s > 0)
        if keep.size < q:          # too few significant features: pad with the best-scored
            keep = np.sort(np.argsort(-s)[:max(q, 2 * keep.size)])
        Xs = X[:, keep]
        r = _ism(Xs, y, median_distance(Xs @ phi0_start(Xs, y, q)), q)
        imp = np.zeros(d)
        imp[keep] = _imp(r.components, r.eigenvalues)
        # dropped features: ranked after every kept one, by their raw screen score
        dropped = np.setdiff1d(np.arange(d), keep)
        imp[dropped] = 1e-12 * raw[dropped] / max(raw.max(), 1e-300)
        return imp
    else:
        raise KeyError(rule)
    return _imp(r.components, r.eigenvalues)


ISM_RULES = ["ISM()", "median", "med*sqrt(q/d)", "med(XW0)", "med(XW0),q>=2", "screen+med(XW0)"]

# --------------------------------------------------------------------------- peers

def _continuous(y):
    return np.asarray(y).dtype.kind == "f" and np.unique(y).shape[0] > 20


def _forest(y, trees, seed):
    from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
    cls = RandomForestRegressor if _continuous(y) else RandomForestClassifier
    return cls(trees, random_state=seed, n_jobs=1)


def peer_rf(X, y, q, seed):
    return _forest(y, 200, seed).fit(X, y).feature_importances_


def peer_permutation(X, y, q, seed):
    """Permutation importance of a 100-tree forest on a held-out 30% of the rows."""
    from sklearn.inspection import permutation_importance
    from sklearn.model_selection import train_test_split
    Xa, Xb, ya, yb = train_test_split(X, y, test_size=0.3, random_state=seed)
    forest = _forest(y, 100, seed).fit(Xa, ya)
    return permutation_importance(forest, Xb, yb, n_repeats=5, random_state=seed,
                                  n_jobs=1).importances_mean


def peer_nca(X, y, q, seed):
    from sklearn.neighbors import NeighborhoodComponentsAnalysis
    if X.shape[0] > 5000:           # O(n^2) memory and time per iteration
        raise RuntimeError("NCA skipped above 5,000 samples")
    if _continuous(y):              # classes from 10 quantile slices of the target
        y = np.digitize(y, np.quantile(y, np.linspace(0, 1, 11)[1:-1]))
    nca = NeighborhoodComponentsAnalysis(n_components=max(q, 2), random_state=seed, max_iter=50)
    return np.linalg.norm(nca.fit(X, y).components_, axis=0)


def peer_mi(X, y, q, seed):
    from sklearn.feature_selection import mutual_info_classif, mutual_info_regression
    fn = mutual_info_regression if _continuous(y) else mutual_info_classif
    return fn(X, y, random_state=seed)


def peer_hsiclasso(X, y, q, seed):
    from pyHSICLasso import HSICLasso
    h = HSICLasso()
    h.input(X, y)
    (h.regression if _continuous(y) else h.classification)(num_feat=min(50, X.shape[1]), B=20, M=3)
    imp = np.zeros(X.shape[1])
    idx = h.get_index()
    imp[idx] = np.abs(h.get_index_score()) + 1e-12
    return imp


PEERS = {"RF": peer_rf, "PI": peer_permutation, "NCA": peer_nca, "MI": peer_mi,
         "HSICLasso": peer_hsiclasso}


def available_peers():
    out = dict(PEERS)
    try:
        import pyHSICLasso  # noqa: F401
    except ImportError:
        out.pop("HSICLasso")
        print("# pyHSICLasso not installed: HSIC Lasso column skipped", file=sys.stderr)
    return out


def recall_at_k(imp, inf, seed=0):
    """Share of the informative features among the k top-ranked; exact ties (e.g. the zero
    importances of features a screen dropped) are broken at random (seeded), never by index."""
    k = len(inf)
    imp = np.asarray(imp, float)
    tiebreak = np.random.default_rng(seed).random(imp.shape[0])
    order = np.lexsort((tiebreak, -imp))
    return len(set(order[:k]) & set(inf)) / k


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--seeds", type=int, nargs="*")
    p.add_argument("--only", nargs="*", help="task name substrings")
    p.add_argument("--skip-peers", action="store_true")
    p.add_argument("--out", help="also write the markdown table here")
    a = p.parse_args(argv)
    ikdr.set_num_threads(1)
    seeds = a.seeds if a.seeds else ([0] if a.quick else [0, 1])
    peers = {} if a.skip_peers else available_peers()
    methods = ISM_RULES + list(peers)
    rows = []
    for key, (name, n, d, quick) in TASKS.items():
        if a.quick and not quick:
            continue
        if a.only and not any(s in key for s in a.only):
            continue
        scores = {m: [] for m in methods}
        times = {m: [] for m in methods}
        for seed in seeds:
            try:
                X, y, inf = make_task(name, seed=seed, n=n, d=d)
            except Exception as e:      # e.g. a data set that is absent
                print(f"# {key}: skipped ({type(e).__name__}: {e})", file=sys.stderr)
                break
            qd = default_q(X, y)
            for m in methods:
                t = time.perf_counter()
                try:
                    imp = ism_column(m, X, y, qd) if m in ISM_RULES else peers[m](X, y, qd, seed)
                except Exception as e:
                    print(f"# {key} {m}: {type(e).__name__}: {e}", file=sys.stderr)
                    continue
                times[m].append(time.perf_counter() - t)
                scores[m].append(recall_at_k(imp, inf))
        if not any(scores.values()):
            continue
        cells = [f"{np.mean(scores[m]):.2f} ({np.mean(times[m]):.2g} s)" if scores[m] else "-"
                 for m in methods]
        rows.append(f"| {key} | " + " | ".join(cells) + " |")
        print(rows[-1], flush=True)
    header = "| task (n x d) | " + " | ".join(methods) + " |\n|---|" + "---|" * len(methods)
    table = header + "\n" + "\n".join(rows)
    print(f"\nrecall@k (k = number of informative features), mean over seeds {seeds}; "
          f"time per fit on 1 thread in parentheses\n")
    print(table)
    if a.out:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from _peers import results_head

        with open(a.out, "w") as fh:
            fh.write("\n".join(results_head(
                "Which features matter: recall at k against a random forest, permutation "
                "importance, NCA and mutual information", "bench_feature_discovery.py", argv))
                     + f"\nRecall at k (k = the number of informative features), mean over seeds "
                     f"{seeds}; time per fit on one thread in parentheses. `ISM()` is the "
                     "library's defaults; the other ISM columns emulate bandwidth rules through "
                     "`sigma=<float>` (module docstring of the script).\n\n" + table + "\n")


if __name__ == "__main__":
    main()
