"""Timing of KDAC and ISMClustering, with a dense numpy peer in the same run.

Cases:
  * KDAC on Moon 400x4 (sigma 0.1, lambda 1, q 3) and Face 624x20 (sigma 3.1,
    lambda 1, q 17; and q by the eigengap), the thesis' hyperparameters
    (thesis Table 3.1: 0.58 s and 1.5 s on a Xeon). Read from ../shared/data
    when present, otherwise Moon is generated and Face skipped.
  * KDAC and ISMClustering on the generated Large Gaussian views
    (make_gaussian_views("large", n)), n from --sizes.

The peer is a lean dense numpy implementation of the same alternation (n x n
Gamma, kernel and U-step matrices, LAPACK eigh; no n x n centring matrix and no
O(n^3) product), run up to --peer-max-n samples; the script prints the time ratio and the largest principal angle
between the two W (same algorithm, so the subspaces should agree).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_clustering.py
    ... --sizes 1000 2000 5000 10000 20000 --peer-max-n 5000

Writes ``benchmarks/results/clustering.md`` (the table, with machine, date and
command) and ``clustering.json`` (the same records, for other scripts).
"""
from __future__ import annotations

import argparse
import os
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
import scipy.linalg

import ikdr
from _peers import timed  # noqa: E402
from ikdr.metrics import nmi

SHARED = Path(os.environ.get("IKDR_SHARED_DATA",
                             Path(__file__).resolve().parents[1].parent / "shared" / "data"))


def standardise(X):
    return (X - X.mean(0)) / X.std(0)


# -- dense numpy peer ---------------------------------------------------------

def _rbf(Z, sigma):
    sq = (Z * Z).sum(1)
    return np.exp(-np.maximum(sq[:, None] + sq[None, :] - 2 * Z @ Z.T, 0) / (2 * sigma ** 2))


def _top(M, k):
    n = M.shape[0]
    vals, vecs = scipy.linalg.eigh(M, subset_by_index=[n - k, n - 1])
    return vals[::-1], vecs[:, ::-1]


def _u_step(Z, sigma, k):
    K = _rbf(Z, sigma)
    deg = K.sum(1)
    s = 1 / np.sqrt(deg)
    M = s[:, None] * K * s[None, :]
    M -= M.mean(0, keepdims=True)
    M -= M.mean(1, keepdims=True)
    return _top(M, k)[1], deg


def laplacian_form(X, M):
    """``X^T L(M) X`` with ``L(M) = diag(M 1) - M``, without forming L(M): O(n^2 d)."""
    return X.T @ (M.sum(1)[:, None] * X) - X.T @ (M @ X)


def numpy_alternation(X, sigma, k, q, Y=None, lam=0.0, max_iter=20, tol=1e-3, inner=20):
    """Lean dense reference of the same algorithm (the papers' formulas, n x n matrices).

    Gamma = D^-1/2 H (U U^T - lam Y Y^T) H D^-1/2 is formed as
    D^-1/2 ((HU)(HU)^T - lam (HY)(HY)^T) D^-1/2 with HU = U - mean(U), so it
    costs O(n^2 k), not the O(n^3) of multiplying by the n x n centring matrix H;
    the Laplacian form X^T L(M) X never builds diag(M 1) - M. What remains n x n
    is what a dense implementation needs: Gamma, the kernel and Psi.
    """
    U, deg = _u_step(X, sigma, k)
    HY = None if Y is None else Y - Y.mean(0)
    W = None
    for outer in range(1, max_iter + 1):
        s = 1 / np.sqrt(deg)
        HU = (U - U.mean(0)) * s[:, None]
        gamma = HU @ HU.T
        if HY is not None:
            HYs = HY * s[:, None]
            gamma -= lam * (HYs @ HYs.T)
        if W is None:
            lam_w, W_new = _top(-(1 / sigma ** 2) * laplacian_form(X, gamma), q)
        else:
            W_new = W
            lam_w = None
        for _ in range(inner):
            psi = gamma * _rbf(X @ W_new, sigma)
            vals, W_next = _top(-(1 / sigma ** 2) * laplacian_form(X, psi), q)
            change = (np.inf if lam_w is None else
                      np.linalg.norm(vals - lam_w) / np.linalg.norm(vals))
            lam_w, W_new = vals, W_next
            if change < 0.01:
                break
        U_new, deg = _u_step(X @ W_new, sigma, k)
        dU = np.sqrt(max(0, 2 * k - 2 * np.linalg.norm(U.T @ U_new) ** 2) / k)
        dW = (np.inf if W is None else
              np.sqrt(max(0, 2 * q - 2 * np.linalg.norm(W.T @ W_new) ** 2) / q))
        U, W = U_new, W_new
        if dU < tol and dW < tol:
            break
    return W, U, outer


# -- cases ----------------------------------------------------------------------

def run_case(name, X, k, sigma, q, y_existing=None, lam=1.0, truth=None, peer=True):
    """Fit ikdr (after an untimed warm-up fit) and, with ``peer``, the dense numpy
    alternation; print one line and return the measurements as a dict."""
    def make():
        if y_existing is None:
            return ikdr.ISMClustering(n_clusters=k, n_components=q, sigma=sigma, random_state=0)
        return ikdr.KDAC(n_clusters=k, n_components=q, sigma=sigma, lam=lam, random_state=0)

    def fit(model):
        return model.fit(X) if y_existing is None else model.fit(X, y_existing)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit(make())  # warm-up: first-call costs (imports, thread pools) are not ikdr's fit
        model = make()
        _, t = timed(lambda: fit(model))
    rec = {"case": name, "n": int(X.shape[0]), "d": int(X.shape[1]),
           "q": int(model.components_.shape[1]), "ikdr_s": t, "outer": int(model.n_iter_),
           "nmi": None if truth is None else float(nmi(truth, model.labels_)),
           "novelty": None if y_existing is None else float(model.novelty_),
           "numpy_s": None, "numpy_outer": None, "sin_angle": None}
    if peer:
        Y = None if y_existing is None else ikdr.gamma.one_hot(y_existing)[0]
        (W, _, outer), tp = timed(lambda: numpy_alternation(
            X, model.sigma_, k, rec["q"], Y=Y, lam=lam))
        rec.update(numpy_s=tp, numpy_outer=int(outer),
                   sin_angle=float(np.sin(ikdr.principal_angle(W, model.components_))))
    print(row(rec), flush=True)
    return rec


HEADER = ("| case | n | d | q | ikdr (s) | outer | NMI | novelty | lean dense numpy (s) | "
          "numpy / ikdr | numpy outer | sin(largest angle) between the W |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|---|")


def row(r):
    def f(value, spec):
        return "-" if value is None else format(value, spec)

    ratio = None if r["numpy_s"] is None else r["numpy_s"] / r["ikdr_s"]
    return (f"| {r['case']} | {r['n']} | {r['d']} | {r['q']} | {r['ikdr_s']:.3f} | {r['outer']} | "
            f"{f(r['nmi'], '.3f')} | {f(r['novelty'], '.3f')} | {f(r['numpy_s'], '.3f')} | "
            f"{f(ratio, '.1f')} | {f(r['numpy_outer'], 'd')} | {f(r['sin_angle'], '.1e')} |")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[1000, 2000],
                        help="n for the generated cases (default: 1000 2000)")
    parser.add_argument("--peer-max-n", type=int, default=3000,
                        help="run the dense numpy peer up to this n (memory ~ 5 n^2 doubles)")
    parser.add_argument("--threads", type=int, default=None,
                        help="threads of ikdr, the BLAS and OpenMP (k-means); on a loaded "
                             "machine 1 avoids oversubscription")
    parser.add_argument("--skip-paper", action="store_true", help="skip Moon and Face")
    parser.add_argument("--out", default=None, help="results directory (default benchmarks/results)")
    parser.add_argument("--name", default="clustering", help="results file stem (default clustering)")
    args = parser.parse_args(argv)
    args.argv = argv
    if args.threads:
        from threadpoolctl import threadpool_limits

        ikdr.set_num_threads(args.threads)
        with threadpool_limits(limits=args.threads):
            return run(args)
    return run(args)


def run(args):
    from _peers import run_conditions, write_results

    conditions = run_conditions("bench_clustering.py", args.argv)
    print(conditions["machine"], flush=True)
    print(HEADER, flush=True)
    records = []
    if not args.skip_paper:
        if (SHARED / "moon_400x4.csv").exists():
            X = standardise(np.loadtxt(SHARED / "moon_400x4.csv", delimiter=","))
            yo = np.loadtxt(SHARED / "moon_400x4_original_label.csv", delimiter=",")
            ya = np.loadtxt(SHARED / "moon_400x4_alt_label.csv", delimiter=",")
            name = "KDAC Moon 400x4 (thesis 0.58 s)"
        else:
            X, yo, ya = ikdr.datasets.make_moon_gaussians(400, random_state=0)
            X = standardise(X)
            name = "KDAC Moon 400x4 generated"
        records.append(run_case(name, X, 2, 0.1, 3, y_existing=yo, lam=1.0, truth=ya))
        if (SHARED / "face_624x20.csv").exists():
            X = np.loadtxt(SHARED / "face_624x20.csv", delimiter=",")
            ident = np.loadtxt(SHARED / "face_624x20_identity_label.csv", delimiter=",")
            pose = np.loadtxt(SHARED / "face_624x20_pose_label.csv", delimiter=",")
            # Thesis Table 3.1's Face row: the existing clustering is the pose, 4
            # alternative clusters scored against the identity (the authors' code,
            # neu-spiral/ISM tests/face.py; docs/clustering_defaults.md)
            records.append(run_case("KDAC Face 624x20 pose -> identity q=17 (thesis 1.5 s)",
                                    X, 4, 3.1, 17, y_existing=pose, lam=1.0, truth=ident))
            records.append(run_case("KDAC Face 624x20 pose -> identity q=eigengap", X, 4, 3.1,
                                    None, y_existing=pose, lam=1.0, truth=ident))

    for n in args.sizes:
        X, yo, ya = ikdr.datasets.make_gaussian_views("large", n, random_state=0)
        X = standardise(X)
        peer = n <= args.peer_max_n
        records.append(run_case("KDAC Large Gaussian", X, 2, "median", 3, y_existing=yo,
                                lam=1.0, truth=ya, peer=peer))
        records.append(run_case("ISMClustering Large Gaussian", X, 4, "median", 3,
                                truth=2 * yo + ya, peer=peer))
    body = ["Each ikdr time is one fit after an untimed warm-up fit of the same case; the "
            "peer is the lean dense numpy alternation in this script (n x n Gamma, kernel and "
            f"U-step matrices, LAPACK eigh), run up to n = {args.peer_max_n}.", "",
            HEADER, *map(row, records)]
    path = write_results(args.name, "KDAC and ISMClustering against a lean dense numpy peer",
                         conditions, body, records, out_dir=args.out)
    print(f"table: {path}")
    return records


if __name__ == "__main__":
    main()
