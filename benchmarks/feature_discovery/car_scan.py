from car_saddle import *
import itertools
def car_like2(thr=(9.0, 11.5)):
    levels = [4, 4, 4, 3, 3, 3]
    X = np.array(list(itertools.product(*[range(l) for l in levels])), float)
    buying, maint, doors, persons, lug, safety = X.T
    score = (3 - buying) + (3 - maint) + doors / 3 + persons + lug + 2 * safety
    y = np.where((persons == 0) | (safety == 0), 0, np.where(score < thr[0], 0, np.where(score < thr[1], 1, 2)))
    return std(X), y
if __name__ == "__main__":
  for thr in [(9.0, 11.5), (8.5, 11.0), (9.5, 12.0)]:
    X, y = car_like2(thr)
    m = med(X)
    for f in [0.25, 0.35, 0.5, 0.7, 1.0, 1.4]:
        for q in [2, 3]:
            r = fit_ism(X, y, m * f, q, tol=1e-10); c = r.convergence
            flag = "SADDLE" if (c.second_order is False) else ""
            print(thr, np.bincount(y), f"sig={m*f:.3f} q={q} conv={r.converged} hmax/scale={c.hessian_max_eigenvalue/c.hessian_scale:.2e} 2nd={c.second_order} {flag}", flush=True)
