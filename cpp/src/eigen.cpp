#include "ikdr/eigen.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>

namespace ikdr {

template <class T>
void jacobi_eigen(std::vector<T>& a, Index p, std::vector<T>& values, std::vector<T>& vectors) {
  // Cyclic Jacobi with a relative stopping rule; p is a block size (tens), so
  // O(p^3) per sweep is negligible next to the d x d products around it.
  vectors.assign(p * p, T(0));
  for (Index i = 0; i < p; ++i) vectors[i * p + i] = T(1);
  T total = 0;
  for (T v : a) total += v * v;
  for (int sweep = 0; sweep < 100; ++sweep) {
    T off = 0;
    for (Index i = 0; i < p; ++i)
      for (Index j = i + 1; j < p; ++j) off += a[i * p + j] * a[i * p + j];
    if (off <= total * std::numeric_limits<T>::epsilon() * std::numeric_limits<T>::epsilon())
      break;
    for (Index i = 0; i < p; ++i) {
      for (Index j = i + 1; j < p; ++j) {
        const T aij = a[i * p + j];
        if (aij == T(0)) continue;
        const T theta = (a[j * p + j] - a[i * p + i]) / (T(2) * aij);
        const T t = (theta >= 0 ? T(1) : T(-1)) / (std::abs(theta) + std::sqrt(theta * theta + 1));
        const T c = T(1) / std::sqrt(t * t + 1), s = t * c;
        for (Index k = 0; k < p; ++k) {  // columns i, j
          const T aki = a[k * p + i], akj = a[k * p + j];
          a[k * p + i] = c * aki - s * akj;
          a[k * p + j] = s * aki + c * akj;
        }
        for (Index k = 0; k < p; ++k) {  // rows i, j
          const T aik = a[i * p + k], ajk = a[j * p + k];
          a[i * p + k] = c * aik - s * ajk;
          a[j * p + k] = s * aik + c * ajk;
        }
        for (Index k = 0; k < p; ++k) {
          const T vki = vectors[k * p + i], vkj = vectors[k * p + j];
          vectors[k * p + i] = c * vki - s * vkj;
          vectors[k * p + j] = s * vki + c * vkj;
        }
      }
    }
  }
  std::vector<Index> order(p);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](Index x, Index y) { return a[x * p + x] > a[y * p + y]; });
  values.resize(p);
  std::vector<T> sorted(p * p);
  for (Index c = 0; c < p; ++c) {
    values[c] = a[order[c] * p + order[c]];
    for (Index r = 0; r < p; ++r) sorted[r * p + c] = vectors[r * p + order[c]];
  }
  vectors.swap(sorted);
}

template <class T>
void orthonormalise(std::vector<T>& v, Index d, Index p) {
  for (Index c = 0; c < p; ++c) {
    for (Index attempt = 0; attempt <= d; ++attempt) {
      T before = 0;
      for (Index r = 0; r < d; ++r) before += v[r * p + c] * v[r * p + c];
      for (int pass = 0; pass < 2; ++pass)
        for (Index prev = 0; prev < c; ++prev) {
          T dot = 0;
          for (Index r = 0; r < d; ++r) dot += v[r * p + c] * v[r * p + prev];
          for (Index r = 0; r < d; ++r) v[r * p + c] -= dot * v[r * p + prev];
        }
      T norm = 0;
      for (Index r = 0; r < d; ++r) norm += v[r * p + c] * v[r * p + c];
      if (norm > T(1e-20) * before && norm > T(0)) {
        norm = std::sqrt(norm);
        for (Index r = 0; r < d; ++r) v[r * p + c] /= norm;
        break;
      }
      for (Index r = 0; r < d; ++r) v[r * p + c] = (r == (c + attempt) % d) ? T(1) : T(0);
    }
  }
}

template <class T>
T ritz_residual(const std::vector<T>& av, const std::vector<T>& v, const std::vector<T>& vals,
                Index d, Index p, Index q, T fro) {
  T worst = 0;
  for (Index c = 0; c < q; ++c) {
    T r2 = 0;
    for (Index r = 0; r < d; ++r) {
      const T e = av[r * p + c] - vals[c] * v[r * p + c];
      r2 += e * e;
    }
    worst = std::max(worst, std::sqrt(r2) / fro);
  }
  return worst;
}

template <class T>
std::vector<T> start_block(Index d, Index p, const T* v0, Index q, Lcg& rng) {
  std::vector<T> v(static_cast<std::size_t>(d * p));
  for (Index r = 0; r < d; ++r)
    for (Index c = 0; c < p; ++c)
      v[r * p + c] = (v0 != nullptr && c < q) ? v0[r * q + c] : rng.uniform<T>();
  orthonormalise(v, d, p);
  return v;
}

template <class T>
T spectrum_lower_bound(const Blas& blas, const T* a, Index d, Lcg& rng, T& fro) {
  T gersh = std::numeric_limits<T>::max();
  fro = 0;
  for (Index i = 0; i < d; ++i) {
    T radius = 0;
    for (Index j = 0; j < d; ++j) {
      fro += a[i * d + j] * a[i * d + j];
      if (j != i) radius += std::abs(a[i * d + j]);
    }
    gersh = std::min(gersh, a[i * d + i] - radius);
  }
  fro = std::sqrt(fro);
  // the spectral radius from a short power iteration with a 10% margin,
  // unless Gershgorin is tighter (both bound the spectrum from below)
  std::vector<T> pv(d), pw(d);
  for (Index r = 0; r < d; ++r) pv[r] = rng.uniform<T>();
  T rho = 0;
  for (int it = 0; it < 30; ++it) {
    T nv = 0;
    for (T x : pv) nv += x * x;
    nv = std::sqrt(nv);
    if (nv == T(0)) break;
    for (T& x : pv) x /= nv;
    gemm_row_major<T>(blas, false, false, d, 1, d, T(1), a, d, pv.data(), 1, T(0), pw.data(), 1);
    T nw = 0;
    for (T x : pw) nw += x * x;
    rho = std::sqrt(nw);
    pv.swap(pw);
  }
  return std::max(gersh, T(-1.1) * rho);
}

template <class T>
EigenResult<T> top_eigenpairs(const Blas& blas, const T* a, Index d, Index q, const T* v0,
                              int max_iter, double tol, int oversample) {
  // Chebyshev-filtered subspace iteration (Zhou & Saad 2007): between
  // Rayleigh-Ritz steps, a degree-m Chebyshev polynomial of A damps the
  // unwanted interval [lower, theta_p] and amplifies the top of the spectrum,
  // converging far faster than plain (shifted) block power on indefinite Phi.
  EigenResult<T> res;
  const Index p = std::min<Index>(d, q + std::max(oversample, 0));
  const int degree = 8;
  // the start block first, then the spectrum's bounds: one pseudo-random sequence
  Lcg rng;
  std::vector<T> v = start_block(d, p, v0, q, rng);
  std::vector<T> av(d * p), t(p * p), vals, vecs, tmp(d * p), y(d * p), ynew(d * p);
  T fro = 0;
  const T lower = spectrum_lower_bound(blas, a, d, rng, fro);
  if (fro == T(0)) {
    res.values.assign(q, T(0));
    res.vectors.resize(d * q);
    for (Index r = 0; r < d; ++r)
      for (Index c = 0; c < q; ++c) res.vectors[r * q + c] = v[r * p + c];
    res.converged = true;
    return res;
  }

  auto apply = [&](const std::vector<T>& in, std::vector<T>& out) {
    gemm_row_major<T>(blas, false, false, d, p, d, T(1), a, d, in.data(), p, T(0), out.data(), p);
  };
  for (int it = 1; it <= max_iter; ++it) {
    res.iterations = it;
    apply(v, av);
    gemm_row_major<T>(blas, true, false, p, p, d, T(1), v.data(), p, av.data(), p, T(0),
                      t.data(), p);
    for (Index i = 0; i < p; ++i)
      for (Index j = i + 1; j < p; ++j)
        t[i * p + j] = t[j * p + i] = T(0.5) * (t[i * p + j] + t[j * p + i]);
    jacobi_eigen(t, p, vals, vecs);
    gemm_row_major<T>(blas, false, false, d, p, p, T(1), v.data(), p, vecs.data(), p, T(0),
                      tmp.data(), p);
    v.swap(tmp);
    gemm_row_major<T>(blas, false, false, d, p, p, T(1), av.data(), p, vecs.data(), p, T(0),
                      tmp.data(), p);
    av.swap(tmp);
    const T worst = ritz_residual(av, v, vals, d, p, q, fro);
    res.residual = worst;
    if (worst <= T(tol)) {
      res.converged = true;
      break;
    }
    // Chebyshev filter on [lower, upper]; upper = the smallest Ritz value of the block.
    const T upper = std::max(vals[p - 1], lower + T(1e-12) * fro);
    const T top = vals[0];
    if (top <= upper || p == d) {
      for (Index i = 0; i < d * p; ++i) v[i] = av[i] - lower * v[i];
    } else {
      const T e = (upper - lower) / 2, c = (upper + lower) / 2;
      T sigma = e / (top - c);
      const T tau = 2 / sigma;
      // y = (A - c) v * sigma / e, reusing av = A v
      for (Index i = 0; i < d * p; ++i) y[i] = (av[i] - c * v[i]) * (sigma / e);
      for (int k = 2; k <= degree; ++k) {
        const T sigma_new = 1 / (tau - sigma);
        apply(y, ynew);
        for (Index i = 0; i < d * p; ++i)
          ynew[i] = (ynew[i] - c * y[i]) * (2 * sigma_new / e) - sigma * sigma_new * v[i];
        v.swap(y);
        y.swap(ynew);
        sigma = sigma_new;
      }
      v.swap(y);
    }
    orthonormalise(v, d, p);
  }
  if (static_cast<Index>(vals.size()) < q) vals.assign(p, T(0));  // max_iter < 1: no Ritz values
  res.values.assign(vals.begin(), vals.begin() + q);
  res.vectors.resize(d * q);
  for (Index r = 0; r < d; ++r)
    for (Index c = 0; c < q; ++c) res.vectors[r * q + c] = v[r * p + c];
  return res;
}

#define IKDR_INSTANTIATE(T)                                                            \
  template std::vector<T> start_block<T>(Index, Index, const T*, Index, Lcg&);         \
  template void orthonormalise<T>(std::vector<T>&, Index, Index);                      \
  template T spectrum_lower_bound<T>(const Blas&, const T*, Index, Lcg&, T&);           \
  template T ritz_residual<T>(const std::vector<T>&, const std::vector<T>&,              \
                              const std::vector<T>&, Index, Index, Index, T);
IKDR_INSTANTIATE(double)
IKDR_INSTANTIATE(float)

template EigenResult<double> top_eigenpairs<double>(const Blas&, const double*, Index, Index,
                                                    const double*, int, double, int);
template EigenResult<float> top_eigenpairs<float>(const Blas&, const float*, Index, Index,
                                                  const float*, int, double, int);
template void jacobi_eigen<double>(std::vector<double>&, Index, std::vector<double>&,
                                   std::vector<double>&);
template void jacobi_eigen<float>(std::vector<float>&, Index, std::vector<float>&,
                                  std::vector<float>&);

}  // namespace ikdr
