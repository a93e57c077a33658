"""
Run time against n
==================

Supervised ISM's cost is dominated by passes over the :math:`n \\times n` kernel,
so its time grows like :math:`n^2` once those passes dominate the fixed
:math:`O(nd^2 + d^3)` work and the per-fit overheads (the held-out choice of
features, the certificate). This example times ``ikdr.ISM`` on a 10-class
Gaussian mixture for n from 500 to 4,000 on the machine that builds the
documentation. Below about n = 500 a fit takes a few hundredths of a second and
the overheads, which differ from one data set to the next (one fit needs more
Hessian products for its certificate than another), hide the growth in n: a
smaller n can then take longer. Every size is therefore fitted once untimed
(first-call costs: thread start-up, allocations) and then timed five times; the
median wall-clock time is plotted, which a busy build machine disturbs less
than one run or the best of two. The printed line per size gives the spread of
the five times and the work of the fit (iterations, passes). At these sizes
the log-log slope is still below 2; the measured tables at larger n are on the
benchmark pages (``bench_scaling.py``).
"""
import time

import matplotlib.pyplot as plt
import numpy as np

import ikdr


def mixture(n, d=20, classes=10, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, n)
    X = rng.standard_normal((classes, d))[y] * 1.5 + rng.standard_normal((n, d)) * 3.0
    return (X - X.mean(0)) / X.std(0), y


sizes = [500, 1000, 2000, 4000]
REPEATS = 5
times = []
for n in sizes:
    X, y = mixture(n)
    ikdr.ISM(n_components=5, approximation=None).fit(X, y)   # warm-up at this size, not timed
    runs = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        model = ikdr.ISM(n_components=5, approximation=None).fit(X, y)
        runs.append(time.perf_counter() - t0)
    times.append(float(np.median(runs)))
    passes = model.convergence_.phi_evaluations + model.convergence_.hessian_products
    print(f"n = {n:5d}: median {times[-1]:.3f} s (of {REPEATS}: {min(runs):.3f}-{max(runs):.3f} s), "
          f"{model.n_iter_} iterations, {passes} passes")
slope = np.polyfit(np.log(sizes), np.log(times), 1)[0]
print(f"log-log slope {slope:.2f} (2 = quadratic)")

fig, ax = plt.subplots(figsize=(5.5, 4))
ax.loglog(sizes, times, "o-", label=f"ikdr.ISM (median of {REPEATS}), slope {slope:.2f}")
ref = times[-1] * (np.array(sizes) / sizes[-1]) ** 2
ax.loglog(sizes, ref, "--", color="gray", label="n^2 through the last point")
ax.set_xlabel("n (samples), d = 20, q = 5")
ax.set_ylabel("time (s), median")
ax.set_title("Supervised ISM run time against n")
ax.legend(frameon=False)
fig.tight_layout()
plt.show()
