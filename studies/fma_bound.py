"""How close the exact fused pass comes to the core's FMA peak: the Gram tiles and the exp.

The exact objective pass (``kernel.product(Z, None, gamma)``: a Gaussian kernel,
the factored supervised Gamma of 10 classes, no right-hand side) on one thread,
n = 10,000 points Z of q columns (``--q``, at most 64: the tiles' own products),
in float32 and float64, with each instruction set the core can use on this CPU
(a child process with ``IKDR_SIMD=avx2`` gives the AVX2 rows on an AVX-512 CPU).

Per kernel entry the pass makes q multiply-adds in the Gram tile
(``product_tile`` in ``cpp/src/tiles/tile_ops.hpp``), one exp and a few
operations around it (``gaussian_tile``): its time is ``a + b q`` per entry, and
the fit of the measured times over ``--q`` gives both parts:

- ``Gram``: 1 / b multiply-adds per second, against the FMA peak;
- ``exp and the rest``: a per entry, and the FMA-pipe share of it: the exp's
  FMA and multiply instructions (12 per element in float32, 16 in float64:
  ``exp_kernel`` and ``exp_polynomial`` in ``cpp/src/tiles/simd.hpp``) plus the
  tile's 3 (the exponent's FMA, the two multiplies by Gamma and the
  coefficient) at the FMA peak, over a.

The FMA peak is one thread's multiply-add rate of NumPy's BLAS on a 192 x 192
GEMM that stays in cache, measured in the same run (a BLAS kernel is within a
few per cent of the hardware's rate; the hardware's own is not readable from
Python). The pass evaluates n (n + b) / 2 entries, b = 512 rows a block: each
off-diagonal block of the symmetric pass once, the diagonal blocks whole.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_NUM_THREADS=1 \\
        python studies/fma_bound.py --out studies/results/fma_bound.md

Timings need a quiet machine (one thread, but a neighbour on the same core halves it).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "benchmarks"))  # _peers

#: FMA and multiply instructions per element of the exp (simd.hpp) and around it in
#: the single-Gaussian tile (tile_ops.hpp, gaussian_tile)
EXP_FMA_OPS = {"float32": 12, "float64": 16}
TILE_FMA_OPS = 3
#: rows of a symmetric pass's blocks at n = 10,000 (ism_products.cpp)
BLOCK_ROWS = 512


def entries(n):
    return n * (n + BLOCK_ROWS) / 2.0


def fma_peak(dtype, repeat):
    """Multiply-adds per second of one thread's in-cache GEMM (192 x 192, 50 products per
    timed call): the FMA peak, half its flop rate."""
    from _peers import gemm_rate

    return gemm_rate(192, dtype=dtype, repeat=repeat, threads=1, calls=50) / 2.0


def measure(args):
    """The rows of this process's instruction set (a dict per dtype)."""
    import ikdr
    from _peers import best_times, mixture
    from ikdr.kernels import Gaussian

    isa = ikdr.build_info().get("simd", "?")
    out = []
    for dtype_name in args.dtype:
        dtype = np.dtype(dtype_name)
        X, y = mixture(args.n, 64)
        gamma, _ = ikdr.supervised_gamma(y)
        calls, qs = [], sorted(args.q)
        for q in qs:
            W = np.linalg.qr(np.random.default_rng(q).standard_normal((64, q)))[0]
            Z = np.ascontiguousarray(X @ W, dtype=dtype)
            kernel = Gaussian(ikdr.median_sigma(Z, random_state=0))
            calls.append(lambda Z=Z, kernel=kernel: kernel.product(Z, None, gamma, n_threads=1))
        for fn in calls:
            fn()  # warm-up
        times = best_times(calls, args.repeat)
        e = entries(args.n)
        per_entry = np.array(times) / e
        slope, intercept = np.polyfit(qs, per_entry, 1)
        peak = fma_peak(dtype, args.repeat)
        out.append(dict(isa=isa, dtype=dtype.name, q=qs, seconds=[float(t) for t in times],
                        gram_rate=1.0 / slope, rest_ns=intercept * 1e9, peak=peak,
                        gram_fraction=(1.0 / slope) / peak,
                        rest_fraction=(EXP_FMA_OPS[dtype.name] + TILE_FMA_OPS) / peak / intercept))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10000)
    parser.add_argument("--q", type=int, nargs="+", default=[8, 16, 32, 64])
    parser.add_argument("--dtype", nargs="+", default=["float32", "float64"])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", help="also write the table (markdown) to this file")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args)))
        return

    import ikdr
    from _peers import emit, results_head

    rows = measure(args)
    if ikdr.build_info().get("simd") == "avx512":
        # the AVX2 copy of the same tiles, chosen at import by IKDR_SIMD
        argv = [sys.executable, os.path.abspath(__file__), "--child", "--n", str(args.n),
                "--repeat", str(args.repeat), "--q", *map(str, args.q), "--dtype", *args.dtype]
        env = dict(os.environ, IKDR_SIMD="avx2")
        rows += json.loads(subprocess.run(argv, env=env, check=True, capture_output=True,
                                          text=True).stdout.splitlines()[-1])
    lines = ["| SIMD | dtype | seconds at q = " + ", ".join(map(str, rows[0]["q"])) +
             " | Gram: multiply-adds/s | FMA peak (in-cache GEMM) | Gram / peak | "
             "exp and the rest: ns/entry | their FMA-pipe share of the peak |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['isa']} | {r['dtype']} | {', '.join(f'{t:.3f}' for t in r['seconds'])} | "
                     f"{r['gram_rate'] / 1e9:.1f} G | {r['peak'] / 1e9:.1f} G | "
                     f"{r['gram_fraction']:.2f} | {r['rest_ns']:.3f} | {r['rest_fraction']:.2f} |")
        print(lines[-1], flush=True)
    text = "\n".join([*results_head("The exact pass against the FMA peak", "studies/fma_bound.py",
                                    details=[f"n = {args.n}, one thread, Gaussian kernel, "
                                             "factored supervised Gamma (10 classes), objective "
                                             "pass (no right-hand side)"]), *lines]) + "\n"
    emit(text, args.out)


if __name__ == "__main__":
    main()
