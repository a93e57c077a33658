import sys
from starts import *
for seed in [0, 1]:
    X, y, inf = task("ringxor", seed=seed, d=784, n=2000)
    t = time.time(); s = moment_scores(X, y); ts = time.time() - t
    nz = int(np.sum(s > 0))
    print(f"seed {seed}: moment screen {ts:.2f}s, {nz} features with a significant moment, top-8 {np.argsort(-s)[:8]}")
    t = time.time(); _, hs = feature_hsic_start(X, y, 4); th = time.time() - t
    print(f"seed {seed}: per-feature HSIC {th:.2f}s top-8 {np.argsort(-hs)[:8]}")
    for q in [4, 3]:
        for m in [max(nz, q), 4 * q, 50]:
            for rule in ["med(XW0)", "med*sqrt(q/m)"]:
                t = time.time(); W, r, sig = screened_fit(X, y, q, s, m, rule)
                print(f"  q={q} screened m={m:3d} sigma {rule:13s}({sig:.2f}) mass {mass(W, inf):.3f} recall "
                      f"{recall(importances(type('R', (), dict(components=W, eigenvalues=r.eigenvalues))), inf):.2f} {time.time()-t:.1f}s", flush=True)
