"""(a) a task the moment screen cannot see (3-way XOR: no class-dependent 1st or 2nd moment);
(b) how often the certificate flags a point over the suite (what converged_ would say)."""
import sys, os
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from common import *
from bench_feature_discovery import make_task, moment_screen, phi0_start, TASKS
from sklearn.ensemble import RandomForestClassifier
for seed in [0, 1]:
    rng = np.random.default_rng(seed); X = rng.standard_normal((1000, 20))
    y = (X[:, 0] * X[:, 1] * X[:, 2] > 0).astype(int); X = std(X); inf = np.arange(3)
    s = moment_screen(X, y); keep = np.flatnonzero(s > 0)
    row = [f"screen keeps {keep.size}"]
    for q in [2, 3]:
        W0 = phi0_start(X, y, q); r = fit_ism(X, y, med(X @ W0), q)
        row.append(f"ISM med(XW0) q={q} (all features) {recall(importances(r), inf):.2f}")
    row.append(f"RF {recall(RandomForestClassifier(200, random_state=seed, n_jobs=1).fit(X, y).feature_importances_, inf):.2f}")
    print(f"3-way XOR 1000x20 seed {seed}: " + " | ".join(row), flush=True)
print()
for key, (name, n, d, quick) in TASKS.items():
    if not quick: continue
    X, y, inf = make_task(name, 0, n, d)
    s = moment_screen(X, y); keep = np.flatnonzero(s > 0); Xs = X[:, keep]
    q = min(max(ikdr.ISM(sigma=1.0, max_iter=1).fit(Xs, y).components_.shape[1], 2), Xs.shape[1])
    r = fit_ism(Xs, y, med(Xs @ phi0_start(Xs, y, q)), q); c = r.convergence
    print(f"{key:28s} kept {keep.size:3d} q={q} converged={r.converged} rule={c.stopping_rule} relgrad={c.relative_gradient_norm:.1e} "
          f"hmax/scale={c.hessian_max_eigenvalue / max(c.hessian_scale, 1e-300):.1e} res/scale={c.hessian_residual / max(c.hessian_scale, 1e-300):.1e} "
          f"hess_conv={c.hessian_converged} 2nd={c.second_order}", flush=True)
