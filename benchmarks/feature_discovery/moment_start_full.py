"""Moment start without restricting W's support: does the full-d fit keep the structure?"""
from starts import *
for key, (name, n, d, q) in {"ringxor 2000x50": ("ringxor", 2000, 50, 4), "ring 2000x200": ("ring", 2000, 200, 2),
                             "xor 1000x50": ("xor", 1000, 50, 2), "ringxor 2000x200": ("ringxor", 2000, 200, 4)}.items():
    for seed in [0, 1]:
        X, y, inf = task(name, seed=seed, n=n, d=d)
        row = []
        for sname in ["Phi_0", "moments"]:
            W0 = phi0_start(X, y, q) if sname == "Phi_0" else moment_start(X, y, q)[0]
            s = med(X @ W0)
            r = fit_ism(X, y, s, q, W0=W0)
            row.append(f"{sname}: start mass {mass(W0, inf):.2f} -> {mass(r.components, inf):.2f} rec {recall(importances(r), inf):.2f} obj {r.objective:.4g}")
        print(f"{key:18s} seed {seed} q={q} | " + " | ".join(row), flush=True)
