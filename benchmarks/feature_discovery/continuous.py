import sys; sys.path.insert(0, __import__("os").path.join(__import__("os").path.dirname(__file__), ".."))
from common import *
from bench_feature_discovery import moment_screen, phi0_start, median_distance, recall_at_k
from sklearn.ensemble import RandomForestRegressor
for seed in [0, 1]:
    rng = np.random.default_rng(seed); n, d = 1000, 50
    X = rng.standard_normal((n, d)); y = np.sin(2 * X[:, 0]) + X[:, 1] ** 2 + 0.1 * rng.standard_normal(n)
    X = std(X); inf = np.arange(2)
    ys = np.digitize(y, np.quantile(y, np.linspace(0, 1, 11)[1:-1]))     # 10 slices (SIR-style)
    gamma, _ = ikdr.supervised_gamma(y, target="continuous")
    out = {}
    m = ikdr.ISM().fit(X, y); out["ISM()"] = m.feature_importances_
    for name, q in [("med(XW0 sliced), q=2", 2)]:
        s = med(X @ phi0_start(X, ys, q))
        r = ikdr.ism(X, gamma, Gaussian(s), q, warn=False); out[name] = importances(r)
    sc = moment_screen(X, ys); keep = np.flatnonzero(sc > 0)
    if keep.size < 2: keep = np.sort(np.argsort(-sc)[:2])
    Xs = X[:, keep]; s = med(Xs @ phi0_start(Xs, ys, 2))
    r = ikdr.ism(Xs, gamma, Gaussian(s), 2, warn=False); imp = np.zeros(d); imp[keep] = importances(r)
    out[f"screen(sliced, kept {keep.size})+med(XW0)"] = imp
    out["RF regressor"] = RandomForestRegressor(200, random_state=seed, n_jobs=1).fit(X, y).feature_importances_
    print(f"seed {seed} q_default={m.components_.shape[1]}: " + " | ".join(f"{k} {recall_at_k(v, inf):.2f}" for k, v in out.items()), flush=True)
