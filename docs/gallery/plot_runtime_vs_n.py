"""
Run time against n
==================

Supervised ISM's cost is dominated by passes over the :math:`n \\times n` kernel,
so its time grows like :math:`n^2` once those passes dominate the fixed
:math:`O(nd^2 + d^3)` work. This example times ``ikdr.ISM`` on a 10-class
Gaussian mixture for a few small n (so the pages build quickly) on the machine
that builds the documentation (wall-clock, best of two: a busy build machine
distorts them), and fits the log-log slope. The measured tables
at larger n are on the benchmark pages (``bench_scaling.py``).
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


sizes = [200, 400, 800, 1600]
times = []
ikdr.ISM(n_components=5).fit(*mixture(200))          # warm-up, not timed
for n in sizes:
    X, y = mixture(n)
    best = np.inf
    for _ in range(2):                                # best of two wall-clock times
        t0 = time.perf_counter()
        ikdr.ISM(n_components=5).fit(X, y)
        best = min(best, time.perf_counter() - t0)
    times.append(best)
    print(f"n = {n:5d}: {best:.3f} s")
slope = np.polyfit(np.log(sizes), np.log(times), 1)[0]
print(f"log-log slope {slope:.2f} (2 = quadratic)")

fig, ax = plt.subplots(figsize=(5.5, 4))
ax.loglog(sizes, times, "o-", label=f"ikdr.ISM, slope {slope:.2f}")
ref = times[-1] * (np.array(sizes) / sizes[-1]) ** 2
ax.loglog(sizes, ref, "--", color="gray", label="n^2 through the last point")
ax.set_xlabel("n (samples), d = 20, q = 5")
ax.set_ylabel("time (s)")
ax.set_title("Supervised ISM run time against n")
ax.legend(frameon=False)
fig.tight_layout()
plt.show()
