"""Search for a saddle that is a plain fixed point: the symmetric ring with the noise axis x2
scaled by a (not standardised), W0 = [e0, e2], criterion="eigenvalues", tol 1e-10."""
from saddle_constructed import *
X0, y = symmetric_ring()
for a in [0.02, 0.1, 0.3, 0.6]:
    for sigma in [0.3, 1.0, 3.0]:
        X = X0 * np.array([1, 1, a])
        r = fit_ism(X, y, sigma, 2, W0=np.eye(3)[:, [0, 2]], tol=1e-10); c = r.convergence
        rows = (r.components ** 2).sum(1).round(3)
        print(f"a={a} sigma={sigma}: conv={r.converged} rule={c.stopping_rule} its={r.n_iter} rows={rows} gap={c.eigengap:.3g} "
              f"hmax={c.hessian_max_eigenvalue:.4g} scale={c.hessian_scale:.3g} 2nd={c.second_order}", flush=True)

# the default criterion stops at the saddle (a = 0.3, sigma = 0.3): escape and resume
X = X0 * np.array([1, 1, 0.3]); sigma = 0.3; G = onehot_centred(y)
r = fit_ism(X, y, sigma, 2, W0=np.eye(3)[:, [0, 2]], tol=1e-10)
f = lambda W: objective(X, G, W, sigma)
H, E = riemannian_hessian_fd(f, r.components)
hmax, (fn, Wn, t) = escape(f, r.components, H, E, f(r.components))
print(f"\nsaddle: obj {r.objective:.6g}, fd Hessian eigs {np.round(np.linalg.eigvalsh(H), 1)}; step t={t} gain {(fn - f(r.components)) / abs(f(r.components)):.3e}")
r2 = fit_ism(X, y, sigma, 2, W0=Wn, tol=1e-10); c2 = r2.convergence
print(f"resumed: obj {r2.objective:.6g} conv={r2.converged} rule={c2.stopping_rule} rows={(r2.components ** 2).sum(1).round(3)} "
      f"hmax={c2.hessian_max_eigenvalue:.4g} 2nd={c2.second_order}")
r3 = fit_ism(X, y, sigma, 2, tol=1e-10)
print(f"Phi_0 start: obj {r3.objective:.6g} rows={(r3.components ** 2).sum(1).round(3)} 2nd={r3.convergence.second_order}")
