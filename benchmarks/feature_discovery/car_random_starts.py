from car_saddle import *
from car_scan import car_like2
import io, contextlib
found = 0
for thr in [(9.0, 11.5), None]:
    X, y = car_like2(thr) if thr else car_like()
    m = med(X)
    rng = np.random.default_rng(0)
    for f in [0.5, 1.0]:
        for trial in range(15):
            W0 = np.linalg.qr(rng.standard_normal((6, 3)))[0]
            r = fit_ism(X, y, m * f, 3, W0=W0, tol=1e-10); c = r.convergence
            if c.second_order is False or not r.converged:
                found += 1
                print(thr, f, trial, f"conv={r.converged} rule={c.stopping_rule} obj={r.objective:.8g} hmax={c.hessian_max_eigenvalue:.4g} "
                      f"res={c.hessian_residual:.3g} scale={c.hessian_scale:.4g} gap={c.eigengap:.4g} 2nd={c.second_order}", flush=True)
print("saddles/unconverged found:", found)
