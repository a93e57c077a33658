"""KSVD benchmarks: the paper's Table 4 side by side and end to end, and Table 3.

Table 4 (ICML 2024 asymmetric Nystrom paper): directed graphs generated with
the sizes of Cora (2,708), Citeseer (3,312) and PubMed (19,717)
(``ikdr.graph.directed_sbm``), SNE kernel between adjacency rows (out-links)
and columns (in-links), r = 20, gamma = k sqrt(M var(A)) (k = 1, 1, 0.5 as in
the paper's App. C.2). Accuracy of a solution: the paper's eta (weights
lambda_i) and the normalised eta (weights lambda_i / sum lambda), against the
exact SVD (ikdr ARPACK on the matrix-free sparse operator, machine precision).
For each target eps in {1e-1, 1e-2} a method's knob is raised until it meets
the target (RSVD: oversamples; Nystrom: landmarks) and that run's time is
reported.

(a) solver alone, given the dense G (built once):
    TSVD  scipy.sparse.linalg.svds(G, 20) to machine precision
    RSVD  sklearn.utils.extmath.randomized_svd(G, 20, n_oversamples=p)
    SymNy symmetric Nystrom on G G^T and G^T G (landmarks L: G G[L]^T, Lanczos)
    ikdr  ikdr.asymmetric_nystrom(G, 20, n)
(b) end to end from the sparse adjacency (building what each method needs):
    numpy G (dense build with numpy) + TSVD / RSVD / SymNy
    ikdr KernelSVD(kernel="sne", solver="nystrom", n_landmarks=n).fit(A)
    ikdr KernelSVD(kernel="sne", solver="arpack").fit(A)  (exact, matrix-free)
    and the dense SNE build alone: numpy versus ikdr.

Table 3: features of KSVD (RBF, SNE; compat a1 "pca" and a2 "random") versus
KernelPCA (RBF), same number of components and median-heuristic bandwidth, for
a logistic regression, 5-fold CV accuracy on wine, breast_cancer and digits.

Run:  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_ksvd.py [--full]
Default: Cora-sized graph only and Table 3; --full adds Citeseer and PubMed.
"""
from __future__ import annotations

import argparse
import gc
import time

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import eigsh, svds

import ikdr
from ikdr import KernelSVD, asymmetric_nystrom
from ikdr.graph import directed_sbm
from ikdr.metrics import singular_alignment

R = 20
EPS = (1e-1, 1e-2)
K_FACTOR = {"cora": 1.0, "citeseer": 1.0, "pubmed": 0.5}


def timed(fn, *args, **kw):
    t = time.perf_counter()
    out = fn(*args, **kw)
    return time.perf_counter() - t, out


def numpy_sne(A, gamma):
    """Dense SNE matrix the way a numpy user builds it (in place: one N x M array)."""
    r = np.asarray(A.multiply(A).sum(1)).ravel()
    c = np.asarray(A.multiply(A).sum(0)).ravel()
    G = (A @ A).toarray()  # <x_i, z_j> = (A A)_ij
    G *= -2.0
    G += r[:, None]
    G += c[None, :]
    np.maximum(G, 0.0, out=G)
    G -= G.min(axis=1, keepdims=True)
    G *= -1.0 / gamma ** 2
    np.exp(G, out=G)
    G /= G.sum(axis=1, keepdims=True)
    return G


def rsvd(G, p, seed=0):
    from sklearn.utils.extmath import randomized_svd

    U, s, Vt = randomized_svd(G, R, n_oversamples=p, random_state=seed)
    return U, s, Vt.T


def sym_nystrom(G, m, seed=0):
    """Symmetric Nystrom (Williams-Seeger) on G G^T (left) and G^T G (right), Lanczos at rank r."""
    rng = np.random.default_rng(seed)
    N, M = G.shape
    out = []
    for mat, n in ((G, N), (G.T, M)):
        L = np.sort(rng.choice(n, m, replace=False))
        C = mat @ mat[L].T  # (G G^T)[:, L], n x m
        if m > 4 * R:
            lam, u = eigsh(C[L], k=R, which="LA")
        else:
            lam, u = np.linalg.eigh(C[L])
            lam, u = lam[-R:], u[:, -R:]
        order = np.argsort(lam)[::-1]
        lam, u = lam[order], u[:, order]
        Ut = C @ (u / lam)
        out.append(Ut / np.linalg.norm(Ut, axis=0))
        out.append(np.sqrt(np.maximum(lam, 0) * n / m))
    return out[0], out[1], out[2]


def accuracy(ref, U, V):
    Ue, se, Ve = ref
    return (singular_alignment(Ue, Ve, se, U, V),
            singular_alignment(Ue, Ve, se, U, V, normalize=True))


def sweep(run, knobs, ref):
    """Raise the knob until both etas meet every eps; returns {(kind, eps): (knob, time, eta)}."""
    found, trials = {}, []
    for k in knobs:
        t, (U, s, V) = run(k)
        eta_p, eta_n = accuracy(ref, U, V)
        trials.append((k, t, eta_p, eta_n))
        for eps in EPS:
            for kind, eta in (("paper", eta_p), ("norm", eta_n)):
                if (kind, eps) not in found and eta < eps:
                    found[(kind, eps)] = (k, t, eta)
        if len(found) == 2 * len(EPS):
            break
    return found, trials


def fmt(found, kind, eps):
    if (kind, eps) not in found:
        return "     not met"
    k, t, _ = found[(kind, eps)]
    return f"{t:8.3f}s({k})"


def table4(name):
    A, _ = directed_sbm(name, random_state=0)
    N = A.shape[0]
    dens = A.nnz / N ** 2
    gamma = K_FACTOR[name] * np.sqrt(N * dens * (1 - dens))
    print(f"\n=== {name}: N = {N}, edges = {A.nnz}, SNE gamma = {gamma:.3f}, r = {R} ===")
    t_ref, exact = timed(lambda: KernelSVD(R, kernel="sne", gamma=gamma, solver="arpack",
                                           random_state=0).fit(A))
    ref = (exact.left_vectors_, exact.singular_values_, exact.right_vectors_)
    s = exact.singular_values_
    print(f"singular values: {s[0]:.4f}, {s[1]:.4f}, ..., {s[-1]:.4f}")

    # On this VM the first touch of fresh memory is very slow (3.1 GB: 32 s, then
    # 1.9 s right after a free) and freed pages soon go back to the host: each
    # build runs twice in a row and the second (warm) time is reported.
    def twice(fn):
        out = fn()
        del out
        return timed(fn)

    t_np, G = twice(lambda: numpy_sne(A, gamma))
    G_ik = None
    t_ik, G_ik = twice(lambda: exact._blocks.block())
    err = np.abs(G - G_ik).max()
    del G_ik
    gc.collect()
    print(f"dense SNE build: numpy {t_np:.2f} s, ikdr {t_ik:.2f} s ({t_np / t_ik:.1f}x), "
          f"max |diff| {err:.1e}, rows sum to 1 within {np.abs(G.sum(1) - 1).max():.1e}")

    land = [k for k in (20, 40, 80, 160, 320, 640, 1280, 2560) if k <= N]
    results = {}
    # (a) solvers given G
    t_tsvd, (U, sv, Vt) = timed(svds, G, k=R, tol=0, random_state=0)
    results["TSVD"] = {(kind, e): ("-", t_tsvd, 0.0) for kind in ("paper", "norm") for e in EPS}
    results["RSVD"], _ = sweep(lambda p: timed(rsvd, G, p), (0, 10, 20, 40, 80, 160, 320), ref)
    results["SymNy"], _ = sweep(lambda m: timed(sym_nystrom, G, m), land, ref)
    results["ikdr"], trials = sweep(
        lambda n: timed(lambda: asymmetric_nystrom(G, R, n, random_state=0)[:3]), land, ref)
    print("\n(a) solver alone given G       eta(paper)<1e-1  eta(paper)<1e-2   eta(norm)<1e-1   eta(norm)<1e-2")
    for meth, found in results.items():
        print(f"  {meth:28s}" + "".join(f"{fmt(found, k, e):>17s}" for k in ("paper", "norm") for e in EPS))
    print("  ikdr Nystrom trials (landmarks, s, eta paper, eta norm): "
          + ", ".join(f"({k}, {t:.3f}, {a:.1e}, {b:.1e})" for k, t, a, b in trials))

    # (b) end to end: build + solve
    e2e = {name_: {key: (k, t + t_np, eta) for key, (k, t, eta) in found.items()}
           for name_, found in results.items() if name_ != "ikdr"}
    del G
    gc.collect()

    def ikdr_fit(n):
        t, m = timed(lambda: KernelSVD(R, kernel="sne", gamma=gamma, solver="nystrom",
                                       n_landmarks=n, random_state=0).fit(A))
        return t, (m.left_vectors_, m.singular_values_, m.right_vectors_)

    e2e["ikdr Nystrom (sparse A)"], _ = sweep(ikdr_fit, land, ref)
    e2e["ikdr ARPACK (sparse A, exact)"] = {(kind, e): ("-", t_ref, 0.0)
                                           for kind in ("paper", "norm") for e in EPS}
    print("\n(b) end to end from sparse A   eta(paper)<1e-1  eta(paper)<1e-2   eta(norm)<1e-1   eta(norm)<1e-2")
    for meth, found in e2e.items():
        label = meth if meth.startswith("ikdr") else "numpy G + " + meth
        print(f"  {label:28s}" + "".join(f"{fmt(found, k, e):>17s}" for k in ("paper", "norm") for e in EPS))
    ours, peer = e2e["ikdr Nystrom (sparse A)"].get(("norm", 1e-2)), e2e["RSVD"].get(("norm", 1e-2))
    if ours and peer:
        print(f"  end to end at normalised eta 1e-2: numpy G + RSVD {peer[1]:.2f} s, ikdr "
              f"{ours[1]:.3f} s: {peer[1] / ours[1]:.0f}x")


def table3(n_components=4, folds=5):
    from sklearn.datasets import load_breast_cancer, load_digits, load_wine
    from sklearn.decomposition import KernelPCA
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    print(f"\n=== Table 3: {n_components} features -> logistic regression, "
          f"{folds}-fold CV accuracy (mean +- sd) ===")
    loaders = {"wine": load_wine, "breast_cancer": load_breast_cancer, "digits": load_digits}
    methods = {
        "KernelPCA rbf": lambda g: KernelPCA(n_components, kernel="rbf", gamma=1.0 / g ** 2),
        "KSVD rbf a0 (pinv)": lambda g: KernelSVD(n_components, kernel="rbf", gamma=g, compat="pinv"),
        "KSVD rbf a1 (pca)": lambda g: KernelSVD(n_components, kernel="rbf", gamma=g, compat="pca"),
        "KSVD rbf a2 (random)": lambda g: KernelSVD(n_components, kernel="rbf", gamma=g,
                                                    compat="random", random_state=0),
        "KSVD sne a0 (pinv)": lambda g: KernelSVD(n_components, kernel="sne", gamma=g, compat="pinv"),
        "KSVD sne a1 (pca)": lambda g: KernelSVD(n_components, kernel="sne", gamma=g, compat="pca"),
        "KSVD sne a2 (random)": lambda g: KernelSVD(n_components, kernel="sne", gamma=g,
                                                    compat="random", random_state=0),
    }
    print(f"  {'method':24s}" + "".join(f"{d:>16s}" for d in loaders))
    rows = {m: [] for m in methods}
    for dname, load in loaders.items():
        X, y = load(return_X_y=True)
        Xs = StandardScaler().fit_transform(X)
        g = ikdr.median_sigma(Xs, random_state=0)
        cv = StratifiedKFold(folds, shuffle=True, random_state=0)
        for mname, make in methods.items():
            pipe = make_pipeline(StandardScaler(), make(g), StandardScaler(),
                                 LogisticRegression(max_iter=5000))
            sc = cross_val_score(pipe, X, y, cv=cv)
            rows[mname].append(f"{sc.mean():.3f}+-{sc.std():.3f}")
    for mname, vals in rows.items():
        print(f"  {mname:24s}" + "".join(f"{v:>16s}" for v in vals))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--full", action="store_true", help="also Citeseer and PubMed sizes")
    ap.add_argument("--skip-table3", action="store_true")
    ap.add_argument("--only", choices=sorted(K_FACTOR), help="a single graph size")
    ap.add_argument("--threads", type=int, default=1,
                    help="threads for ikdr and the BLAS, every method alike (default 1)")
    args = ap.parse_args()
    names = [args.only] if args.only else (["cora", "citeseer", "pubmed"] if args.full else ["cora"])
    with ikdr.num_threads(args.threads):
        print(f"ikdr {ikdr.__version__}, {args.threads} thread(s) for ikdr and the BLAS")
        for name in names:
            table4(name)
        if not args.skip_table3:
            table3()


if __name__ == "__main__":
    main()
