"""Sigma rules compared on the synthetic suite: recall@k of importances."""
import sys
from common import *

QTRUE = {"linear3": 2, "ring": 2, "xor": 2, "ringxor": 4, "ring200": 2, "cancer_noise": 1}


def rules(X, y, q):
    d = X.shape[1]; m = med(X)
    out = {}
    t = time.time(); r = fit_ism(X, y, m, q); out["median"] = (r, time.time() - t)
    s = m * np.sqrt(q / d)
    t = time.time(); r = fit_ism(X, y, s, q); out["med*sqrt(q/d)"] = (r, time.time() - t)
    t = time.time(); r = fit_ism(X, y, s / 2, q); out["0.5*med*sqrt(q/d)"] = (r, time.time() - t)
    t = time.time(); W0 = phi0_start(X, y, q); s0 = med(X @ W0)
    r = fit_ism(X, y, s0, q); out["med(XW0)"] = (r, time.time() - t)
    # re-estimate at each outer iteration
    t = time.time(); W = W0; s_prev = s0
    for it in range(4):
        r = fit_ism(X, y, s_prev, q, W0=W if it else None)
        W = r.components; s_new = med(X @ W)
        if abs(s_new - s_prev) < 0.05 * s_prev: break
        s_prev = s_new
    out["med(XW) outer"] = (r, time.time() - t)
    return out


if __name__ == "__main__":
    seeds = [int(s) for s in sys.argv[1:]] or [0, 1]
    res = {}
    for key in TASKS:
        for qmode in ["default", "true"]:
            for seed in seeds:
                X, y, inf = get(key, seed)
                if qmode == "default":
                    q = ikdr.ISM().fit(X, y).components_.shape[1]
                else:
                    q = QTRUE[key]
                for name, (r, t) in rules(X, y, q).items():
                    res.setdefault((key, qmode, name), []).append((recall(importances(r), inf), t, q))
            for name in ["median", "med*sqrt(q/d)", "0.5*med*sqrt(q/d)", "med(XW0)", "med(XW) outer"]:
                v = res[(key, qmode, name)]
                print(f"{key:13s} q={qmode:7s}({v[0][2]}) {name:18s} recall {np.mean([a for a,_,_ in v]):.2f} "
                      f"{[round(a,2) for a,_,_ in v]} t {np.mean([b for _,b,_ in v]):.2f}s", flush=True)
