"""A constructed saddle: a ring data set closed under the reflections of each axis, so every
axis-aligned W is a critical point; W0 = [e_0, e_2] (one ring axis, the noise axis) is a saddle."""
from car_saddle import *


def symmetric_ring(m=100, seed=0):
    rng = np.random.default_rng(seed)
    P = np.abs(rng.standard_normal((m, 3)))
    signs = np.array(list(itertools.product([1, -1], repeat=3)), float)
    X = (P[:, None, :] * signs[None]).reshape(-1, 3)
    r2 = X[:, 0] ** 2 + X[:, 1] ** 2
    y = (r2 > np.median(r2)).astype(int)
    return X, y      # not re-standardised: exact symmetry kept (mean 0 exactly)

if __name__ == "__main__":
    X, y = symmetric_ring()
    G = onehot_centred(y); sigma = 1.0; q = 2
    W0 = np.eye(3)[:, [0, 2]]
    f = lambda W: objective(X, G, W, sigma)
    for crit in ["gradient", "eigenvalues"]:
        r = fit_ism(X, y, sigma, q, W0=W0, tol=1e-10, criterion=crit); c = r.convergence
        if crit == "gradient": r_saddle = r
        print(f"[{crit}] from W0=[e0,e2]: converged={r.converged} rule={c.stopping_rule} obj={r.objective:.6g} "
              f"relgrad={c.relative_gradient_norm:.1e} hmax={c.hessian_max_eigenvalue:.4g} scale={c.hessian_scale:.4g} "
              f"2nd={c.second_order} |W|^2 rows={np.round((r.components**2).sum(1),3)}")
    W = r_saddle.components
    H, E = riemannian_hessian_fd(f, W)
    hmax, (fn, Wn, t) = escape(f, W, H, E, f(W))
    print(f"fd Hessian eigs {np.round(np.linalg.eigvalsh(H),3)}; escape step t={t} gain {(fn-f(W))/abs(f(W)):.3e}")
    r2 = fit_ism(X, y, sigma, q, W0=Wn, tol=1e-10); c2 = r2.convergence
    print(f"resumed: obj {r2.objective:.6g} conv={r2.converged} hmax={c2.hessian_max_eigenvalue:.4g} 2nd={c2.second_order} "
          f"|W|^2 rows={np.round((r2.components**2).sum(1),3)}")
    r3 = fit_ism(X, y, sigma, q, tol=1e-10); print("Phi_0 start:", r3.objective, (r3.components**2).sum(1).round(3), r3.convergence.second_order)
