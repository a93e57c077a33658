"""Start study: ring + XOR (4 classes), n = 2,000, d = 784, 4 informative features."""
import sys
from common import *


def moment_start(X, y, q, z=None):
    """Thresholded first + second class moments (SIR/SAVE with entrywise hard thresholding).
    M = sum_c p_c [ T(mu_c) T(mu_c)^T + T(S_c - S)^2 ],  T(a) = a * (|a| > z * se(a))."""
    n, d = X.shape
    classes, yi = np.unique(y, return_inverse=True)
    z = z if z is not None else np.sqrt(2 * np.log(d * d))      # ~ max |N(0,1)| over d^2 entries
    S = X.T @ X / n; mu = X.mean(0)
    M = np.zeros((d, d))
    for c in range(len(classes)):
        Xc = X[yi == c]; nc = Xc.shape[0]; p = nc / n
        m = Xc.mean(0) - mu
        m = m * (np.abs(m) > z / np.sqrt(nc))
        D = Xc.T @ Xc / nc - S
        se = np.sqrt((1 + S * S) / nc)                      # ~ sd of a sample covariance entry
        D = D * (np.abs(D) > z * se)
        M += p * (np.outer(m, m) + D @ D)
    vals, vecs = np.linalg.eigh(M)
    return vecs[:, ::-1][:, :q], vals[::-1]


def full_kernel_phi_start(X, y, q, sigma):
    """Top-q eigenvectors of Phi(I) (Gaussian kernel on all d features): -X^T (D - Gamma o K) X."""
    G = onehot_centred(y)
    sq = np.sum(X * X, 1); K = np.exp(-np.maximum(sq[:, None] + sq[None] - 2 * X @ X.T, 0) / (2 * sigma ** 2))
    GK = (G @ G.T) * K
    Phi = -(X.T @ (GK.sum(1)[:, None] * X) - X.T @ GK @ X)
    vals, vecs = np.linalg.eigh(Phi)
    return vecs[:, ::-1][:, :q]


def feature_hsic_start(X, y, q, m=500, seed=0):
    """Per-feature HSIC screen (Gaussian kernel on each single feature, median bandwidth),
    on m subsampled rows: W0 = the q axis vectors of the highest-scoring features."""
    rng = np.random.default_rng(seed)
    idx = rng.choice(X.shape[0], min(m, X.shape[0]), replace=False)
    Xs, G = X[idx], onehot_centred(y[idx])
    score = np.empty(X.shape[1])
    for j in range(X.shape[1]):
        x = Xs[:, j]; D = (x[:, None] - x[None]) ** 2
        s2 = np.median(D[D > 0]) if np.any(D > 0) else 1.0
        K = np.exp(-D / s2)
        score[j] = np.sum((G.T @ K) * G.T)
    top = np.argsort(-score)[:q]
    return np.eye(X.shape[1])[:, top], score


def mass(W, inf):
    return float(np.sum(W[inf] ** 2) / W.shape[1])


if __name__ == "__main__":
    d = int(sys.argv[1]) if len(sys.argv) > 1 else 784
    seeds = [int(s) for s in sys.argv[2:]] or [0]
    for seed in seeds:
        X, y, inf = task("ringxor", seed=seed, d=d, n=2000)
        for q in [4, 3]:
            m = med(X)
            starts = {}
            t = time.time(); starts["Phi_0 (papers)"] = (phi0_start(X, y, q), time.time() - t)
            t = time.time(); starts["moments (thresholded)"] = (moment_start(X, y, q)[0], time.time() - t)
            t = time.time(); starts["per-feature HSIC"] = (feature_hsic_start(X, y, q)[0], time.time() - t)
            t = time.time(); starts["Phi(I), full-space kernel"] = (full_kernel_phi_start(X, y, q, m), time.time() - t)
            results = {}
            for name, (W0, ts) in starts.items():
                for rule in ["med(XW0)", "med*sqrt(q/d)"]:
                    sigma = med(X @ W0) if rule == "med(XW0)" else m * np.sqrt(q / d)
                    t = time.time()
                    r = fit_ism(X, y, sigma, q, W0=W0)
                    tf = time.time() - t
                    results[(name, rule)] = r
                    print(f"seed {seed} q={q} d={d} start={name:26s} sigma={rule:14s}({sigma:.2f}) start mass {mass(W0, inf):.3f} "
                          f"-> mass {mass(r.components, inf):.3f} recall {recall(importances(r), inf):.2f} "
                          f"obj {r.objective:.5g} it {r.n_iter} start {ts:.2f}s fit {tf:.1f}s", flush=True)


def screened_fit(X, y, q, score, m, rule="med(XW0)"):
    """Fit ISM on the m top-scoring features only; W is zero on the others."""
    keep = np.sort(np.argsort(-score)[:m])
    Xs = X[:, keep]
    W0 = phi0_start(Xs, y, q)
    sigma = med(Xs @ W0) if rule == "med(XW0)" else med(Xs) * np.sqrt(q / m)
    r = fit_ism(Xs, y, sigma, q)
    W = np.zeros((X.shape[1], q)); W[keep] = r.components
    return W, r, sigma


def moment_scores(X, y, z=None):
    """Per-feature score: sum_c p_c [T(mu_c)_j^2 + sum_k T(S_c - S)_jk^2] (the diagonal of M)."""
    n, d = X.shape
    classes, yi = np.unique(y, return_inverse=True)
    z = z if z is not None else np.sqrt(2 * np.log(d * d))
    S = X.T @ X / n; mu = X.mean(0); s = np.zeros(d)
    for c in range(len(classes)):
        Xc = X[yi == c]; nc = Xc.shape[0]; p = nc / n
        mc = Xc.mean(0) - mu; mc = mc * (np.abs(mc) > z / np.sqrt(nc))
        D = Xc.T @ Xc / nc - S; D = D * (np.abs(D) > z * np.sqrt((1 + S * S) / nc))
        s += p * (mc ** 2 + np.sum(D * D, 1))
    return s
