// The coordinate-wise power method, block form (cpm.hpp).
#include "ikdr/cpm.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "ikdr/eigen.hpp"

namespace ikdr {
namespace {

// In place: the lower Cholesky factor L of the symmetric positive definite
// p x p matrix m (row-major), then L^{-1} in its place. False when m is not
// numerically positive definite.
template <class T>
bool cholesky_inverse_factor(std::vector<T>& m, Index p) {
  for (Index j = 0; j < p; ++j) {
    T s = m[j * p + j];
    for (Index k = 0; k < j; ++k) s -= m[j * p + k] * m[j * p + k];
    if (!(s > T(0)) || !std::isfinite(s)) return false;
    const T l = std::sqrt(s);
    m[j * p + j] = l;
    for (Index i = j + 1; i < p; ++i) {
      T t = m[i * p + j];
      for (Index k = 0; k < j; ++k) t -= m[i * p + k] * m[j * p + k];
      m[i * p + j] = t / l;
    }
    for (Index k = j + 1; k < p; ++k) m[j * p + k] = T(0);
  }
  // L^{-1} by forward substitution, column by column
  std::vector<T> inv(static_cast<std::size_t>(p * p), T(0));
  for (Index c = 0; c < p; ++c) {
    for (Index i = c; i < p; ++i) {
      T t = i == c ? T(1) : T(0);
      for (Index k = c; k < i; ++k) t -= m[i * p + k] * inv[k * p + c];
      inv[i * p + c] = t / m[i * p + i];
    }
  }
  m.swap(inv);
  return true;
}

// out (d x p) = in (d x p) times the p x p matrix r (row-major).
template <class T>
void times(const Blas& blas, const std::vector<T>& in, Index d, Index p, const std::vector<T>& r,
           std::vector<T>& out) {
  gemm_row_major<T>(blas, false, false, d, p, p, T(1), in.data(), p, r.data(), p, T(0), out.data(), p);
}

}  // namespace

template <class T>
CpmResult<T> cpm_top_eigenpairs(const Blas& blas, const T* a, Index d, Index q, const T* v0,
                                const CpmOptions& opt, const RunConfig& cfg) {
  CpmResult<T> res;
  const Index p = std::min<Index>(d, q + 1);
  const Index active = std::min<Index>(
      d, std::max<Index>(p, opt.active > 0 ? opt.active : (d + 9) / 10));
  Lcg rng;
  std::vector<T> x = start_block(d, p, v0, q, rng);
  T fro = 0;
  const T lower = spectrum_lower_bound(blas, a, d, rng, fro);
  auto finish = [&](const std::vector<T>& vals, const std::vector<T>& vecs, T shift) {
    std::vector<T> xv(static_cast<std::size_t>(d * p));
    times(blas, x, d, p, vecs, xv);
    res.values.resize(static_cast<std::size_t>(q));
    res.vectors.resize(static_cast<std::size_t>(d * q));
    for (Index j = 0; j < q; ++j) res.values[j] = vals[j] - shift;
    for (Index r = 0; r < d; ++r)
      for (Index j = 0; j < q; ++j) res.vectors[r * q + j] = xv[r * p + j];
    res.gap = p > q ? vals[q - 1] - vals[q] : T(0);
  };
  if (fro == T(0)) {
    std::vector<T> vals(static_cast<std::size_t>(p), T(0)), eye(static_cast<std::size_t>(p * p), T(0));
    for (Index j = 0; j < p; ++j) eye[j * p + j] = T(1);
    finish(vals, eye, T(0));
    res.converged = true;
    return res;
  }
  // B = A + shift I is positive definite (a margin of 1% of ||A||_F above the
  // bound), so its largest eigenvalues in magnitude are A's largest algebraic ones
  const T shift = std::max(T(0), -lower) + T(0.01) * fro;
  std::vector<T> z(static_cast<std::size_t>(d * p)), m(static_cast<std::size_t>(p * p)),
      y(static_cast<std::size_t>(d * p)),
      tmp(static_cast<std::size_t>(d * p)), vals, vecs;
  auto refresh = [&] {  // z = B x exactly
    gemm_row_major<T>(blas, false, false, d, p, d, T(1), a, d, x.data(), p, T(0), z.data(), p);
    for (Index i = 0; i < d * p; ++i) z[i] += shift * x[i];
  };
  refresh();
  bool fresh = true;  // z was recomputed since the last update
  const double max_updates = std::max(1.0, opt.max_sweeps) * double(d);
  double updates = 0;
  Index since_refresh = 0;
  std::vector<double> score(static_cast<std::size_t>(d));
  std::vector<Index> order(static_cast<std::size_t>(d));
  std::vector<T> rows(static_cast<std::size_t>(active * d)), delta(static_cast<std::size_t>(active * p));
  using clock = std::chrono::steady_clock;
  auto last_poll = clock::now();
  for (int it = 0;; ++it) {
    // Rayleigh-Ritz on the block: M = X^T B X = V diag(theta) V^T, and the
    // block turned to the Ritz vectors (X <- X V, Z <- Z V), so that column j
    // is the j-th Ritz vector and its power step is z_j / theta_j
    gemm_row_major<T>(blas, true, false, p, p, d, T(1), x.data(), p, z.data(), p, T(0), m.data(), p);
    for (Index i = 0; i < p; ++i)
      for (Index j = i + 1; j < p; ++j) m[i * p + j] = m[j * p + i] = T(0.5) * (m[i * p + j] + m[j * p + i]);
    jacobi_eigen(m, p, vals, vecs);
    times(blas, z, d, p, vecs, tmp);
    z.swap(tmp);
    times(blas, x, d, p, vecs, tmp);
    x.swap(tmp);
    vecs.assign(static_cast<std::size_t>(p * p), T(0));
    for (Index j = 0; j < p; ++j) vecs[j * p + j] = T(1);  // the block is its own Ritz basis now
    const T worst = ritz_residual(z, x, vals, d, p, q, fro);
    res.residual = worst;
    res.iterations = it;
    if (worst <= T(opt.tol)) {
      if (fresh) {
        res.converged = true;
        break;
      }
      refresh();  // confirm on an exact B X: the updates of Z drift by rounding
      fresh = true;
      since_refresh = 0;
      continue;
    }
    if (updates >= max_updates) break;
    if (cfg.check_interrupt && clock::now() - last_poll > std::chrono::milliseconds(20)) {
      last_poll = clock::now();
      if (cfg.check_interrupt()) throw Interrupted();
    }
    if (!(vals[p - 1] > T(0))) break;  // B X lost rank: report no convergence
    // the power step of every row, Y = Z diag(theta)^{-1}, and how far each
    // row of the top q Ritz vectors is from it
    for (Index r = 0; r < d; ++r) {
      double s = 0;
      for (Index j = 0; j < p; ++j) {
        y[r * p + j] = z[r * p + j] / vals[j];
        if (j < q) {
          const double e = double(y[r * p + j]) - double(x[r * p + j]);
          s += e * e;
        }
      }
      score[r] = s;
    }
    // greedy: the `active` rows furthest from their power step (ties: lower index)
    std::iota(order.begin(), order.end(), Index(0));
    auto further = [&](Index u, Index v) { return score[u] > score[v] || (score[u] == score[v] && u < v); };
    std::nth_element(order.begin(), order.begin() + (active - 1), order.end(), further);
    std::sort(order.begin(), order.begin() + active);
    for (Index s = 0; s < active; ++s) {
      const Index i = order[s];
      std::copy(a + i * d, a + (i + 1) * d, rows.begin() + s * d);  // column i of the symmetric A
      for (Index j = 0; j < p; ++j) delta[s * p + j] = y[i * p + j] - x[i * p + j];
    }
    // Z += B[:, Omega] delta, X_Omega += delta
    gemm_row_major<T>(blas, true, false, d, p, active, T(1), rows.data(), d, delta.data(), p, T(1),
                      z.data(), p);
    for (Index s = 0; s < active; ++s) {
      const Index i = order[s];
      for (Index j = 0; j < p; ++j) {
        z[i * p + j] += shift * delta[s * p + j];
        x[i * p + j] += delta[s * p + j];
      }
    }
    updates += double(active);
    since_refresh += active;
    fresh = false;
    // orthonormal again: X^T X = L L^T, X <- X L^{-T}, Z <- Z L^{-T}
    gemm_row_major<T>(blas, true, false, p, p, d, T(1), x.data(), p, x.data(), p, T(0), m.data(), p);
    if (cholesky_inverse_factor(m, p)) {
      for (Index i = 0; i < p; ++i)  // transpose L^{-1} into L^{-T}
        for (Index j = i + 1; j < p; ++j) std::swap(m[i * p + j], m[j * p + i]);
      times(blas, x, d, p, m, tmp);
      x.swap(tmp);
      times(blas, z, d, p, m, tmp);
      z.swap(tmp);
    } else {
      orthonormalise(x, d, p);
      since_refresh = d;
    }
    if (since_refresh >= d) {
      refresh();
      fresh = true;
      since_refresh = 0;
    }
  }
  res.sweeps = updates / double(d);
  finish(vals, vecs, shift);
  return res;
}

template CpmResult<double> cpm_top_eigenpairs<double>(const Blas&, const double*, Index, Index,
                                                      const double*, const CpmOptions&,
                                                      const RunConfig&);
template CpmResult<float> cpm_top_eigenpairs<float>(const Blas&, const float*, Index, Index,
                                                    const float*, const CpmOptions&,
                                                    const RunConfig&);

}  // namespace ikdr
