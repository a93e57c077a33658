"""The car-evaluation saddle: a car-evaluation-like data set (full factorial 4x4x4x3x3x3 = 1,728 rows,
6 standardised ordinal features, 3 imbalanced classes), q = 3, tol 1e-10."""
import itertools, sys
from common import *


def car_like():
    levels = [4, 4, 4, 3, 3, 3]   # buying, maint, doors, persons, lug_boot, safety
    X = np.array(list(itertools.product(*[range(l) for l in levels])), float)
    buying, maint, doors, persons, lug, safety = X.T
    price = (3 - buying) + (3 - maint)             # 0..6, cheap is good
    comfort = doors / 3 + persons + lug             # 0..5
    score = price + comfort + 2 * safety
    y = np.where((persons == 0) | (safety == 0), 0, np.where(score < 10, 0, np.where(score < 12.5, 1, 2)))
    return std(X), y


def objective(X, G, W, sigma):
    Z = X @ W
    sq = np.sum(Z * Z, 1); D = np.maximum(sq[:, None] + sq[None] - 2 * Z @ Z.T, 0)
    K = np.exp(-D / (2 * sigma ** 2))
    return float(np.sum((G.T @ K) * G.T))     # Tr(G^T K G) = Tr(Gamma K)


def retract(W, Z):
    Q, R = np.linalg.qr(W + Z); return Q * np.sign(np.diag(R))


def tangent_basis(W):
    d, q = W.shape
    Wp = np.linalg.svd(np.eye(d) - W @ W.T)[0][:, :d - q]
    basis = []
    for i in range(d - q):
        for j in range(q):
            B = np.zeros((d - q, q)); B[i, j] = 1; basis.append(Wp @ B)
    return basis


def riemannian_hessian_fd(f, W, h=1e-3):
    """Hessian of f(retract(W, sum t_k E_k)) at t = 0 by central differences (small d only)."""
    E = tangent_basis(W); m = len(E); H = np.zeros((m, m)); f0 = f(W)
    for a in range(m):
        for b in range(a, m):
            if a == b:
                H[a, a] = (f(retract(W, h * E[a])) - 2 * f0 + f(retract(W, -h * E[a]))) / h ** 2
            else:
                pp = f(retract(W, h * (E[a] + E[b]))); pm = f(retract(W, h * (E[a] - E[b])))
                mp = f(retract(W, h * (-E[a] + E[b]))); mm = f(retract(W, -h * (E[a] + E[b])))
                H[a, b] = H[b, a] = (pp - pm - mp + mm) / (4 * h * h)
    return H, E


def escape(f, W, H, E, fW):
    """Step along the top Hessian eigenvector: geodesic-ish line search on the angle."""
    vals, vecs = np.linalg.eigh(H); v = vecs[:, -1]
    Z = sum(c * e for c, e in zip(v, E))          # unit tangent direction
    best = (fW, None, 0.0)
    for t in [0.01, 0.02, 0.05, 0.1, 0.2, 0.4, 0.8]:
        for s in (+1, -1):
            Wn = retract(W, s * t * Z); fn = f(Wn)
            if fn > best[0]: best = (fn, Wn, s * t)
    return vals[-1], best


if __name__ == "__main__":
    X, y = car_like()
    print("classes", np.bincount(y))
    G = onehot_centred(y)
    for sig_name, sigma in [("median", med(X)), ("med*sqrt(q/d)", med(X) * np.sqrt(3 / 6))]:
        r = fit_ism(X, y, sigma, 3, tol=1e-10)
        c = r.convergence
        print(f"\n[{sig_name} sigma={sigma:.3f}] converged={r.converged} rule={c.stopping_rule} obj={r.objective:.8g} "
              f"relgrad={c.relative_gradient_norm:.2e} hmax={c.hessian_max_eigenvalue:.4g} "
              f"hres={c.hessian_residual:.3g} hscale={c.hessian_scale:.4g} 2nd={c.second_order} gap={c.eigengap:.4g}")
        f = lambda W: objective(X, G, W, sigma)
        W = r.components
        print("  numpy f / ikdr objective", f(W) / r.objective)
        for rnd in range(5):
            fW = f(W)
            H, E = riemannian_hessian_fd(f, W)
            hmax, (fn, Wn, t) = escape(f, W, H, E, fW)
            print(f"  round {rnd}: fd Hessian max eig {hmax:.4g} (scale-relative {hmax / c.hessian_scale:.2e}); "
                  f"best step t={t} gain {(fn - fW) / abs(fW):.3e}")
            if Wn is None or hmax <= 1e-6 * c.hessian_scale: break
            r2 = fit_ism(X, y, sigma, 3, W0=Wn, tol=1e-10)
            c2 = r2.convergence
            print(f"   resumed: obj {r2.objective:.8g} (rel gain vs saddle {(r2.objective - r.objective) / abs(r.objective):.3e}) "
                  f"conv={r2.converged} hmax={c2.hessian_max_eigenvalue:.4g} 2nd={c2.second_order} "
                  f"sin(angle to saddle W)={np.sin(ikdr.principal_angle(r.components, r2.components)):.3f}")
            W = r2.components; r_last = r2
            if c2.second_order: break
