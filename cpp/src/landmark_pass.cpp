// The landmark passes (landmark_pass.hpp): row blocks in order, the work of a
// block split into tasks fixed by its shapes, block sums added in block order.
#include "ikdr/landmark_pass.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "ikdr/parallel.hpp"

namespace ikdr {
namespace {

// Rows per task where a block is cut by rows (projections, kernel rows,
// second-sweep weights): tall enough for an efficient GEMM of q or m columns.
constexpr Index kRowTask = 256;
// Output rows per task of the d x m, d x d and d x k products (X^T ...):
// 128 rows of a GEMM with a few hundred columns and a few hundred to a few
// thousand inner rows runs near the BLAS's peak.
constexpr Index kDimTask = 128;
// Landmark columns per task of the m x r products of the general form.
constexpr Index kColTask = 128;
// The d x m products of a block (one per class or rank-one term of Gamma) are
// cut into about this many tasks: whole products where Gamma has many groups
// (10 classes: 784 x 256 x 535 per class ran at the BLAS's full rate, 40%
// faster than in 128-row pieces, which repack C_c each), pieces otherwise.
constexpr Index kProductTasks = 16;

Index n_chunks(Index n, Index chunk) { return (n + chunk - 1) / chunk; }

// Per-worker scratch: worker w owns scratch[w] (parallel.hpp: workers are
// numbered 0 .. n_threads - 1), grown on first use.
template <class T>
struct Scratch {
  explicit Scratch(int workers) : bufs(static_cast<std::size_t>(std::max(1, workers))) {}
  T* get(int worker, Index size) {
    auto& b = bufs[static_cast<std::size_t>(worker)];
    if (static_cast<Index>(b.size()) < size) b.resize(static_cast<std::size_t>(size));
    return b.data();
  }
  std::vector<std::vector<T>> bufs;
};

// One row block as the sweeps read it: its rows (gathered by class in the
// class form), Z and R of those rows and the factors' kernel rows C_f.
template <class T>
struct Block {
  Index start = 0, b = 0;
  const T* x = nullptr;              // b x d, in class order (classes) or in place
  const T* g = nullptr;              // general form: the factor's b x rank rows
  std::vector<Index> offsets;        // classes: rows of class c are [offsets[c], offsets[c+1])
  std::vector<T> gathered, z, r;
  std::vector<std::vector<T>> c;     // per factor, b x m_f (empty when not needed)
};

template <class T>
void check_rows(const LandmarkRows<T>& rows) {
  if (rows.n < 0 || rows.d < 1 || rows.q < 1) throw std::invalid_argument("X and W must be non-empty");
  if (rows.block_rows < 1) throw std::invalid_argument("block_rows must be positive");
  const auto& g = rows.gamma;
  if (g.classes() ? (g.n_classes < 1 || g.proportions == nullptr) : (g.factor == nullptr || g.rank < 1))
    throw std::invalid_argument("Gamma needs class codes with proportions, or a factor");
  for (const auto& f : rows.factors) {
    if (f.landmarks == nullptr || f.m < 1) throw std::invalid_argument("a factor needs landmarks");
    check_terms(f.terms, Index(1), f.m);
  }
}

// Gathers the block's rows by class (stable) and forms Z, R and the kernel
// rows of the factors `need` selects.
template <class T, class Need>
void prepare_block(const Blas& blas, const LandmarkRows<T>& rows, Index start, Index b,
                   bool with_r, Need&& need, Block<T>& blk, const RunConfig& cfg) {
  const Index d = rows.d, q = rows.q, k = rows.k;
  const auto& gm = rows.gamma;
  blk.start = start;
  blk.b = b;
  const T* x0 = rows.x + start * d;
  if (gm.classes()) {
    const Index nc = gm.n_classes;
    blk.offsets.assign(static_cast<std::size_t>(nc + 1), 0);
    const std::int64_t* codes = gm.codes + start;
    for (Index i = 0; i < b; ++i) {
      if (codes[i] < 0 || codes[i] >= nc)
        throw std::invalid_argument("class code " + std::to_string(codes[i]) + " of row " +
                                    std::to_string(start + i) + " is outside [0, " +
                                    std::to_string(nc) + ")");
      ++blk.offsets[static_cast<std::size_t>(codes[i] + 1)];
    }
    for (Index c = 0; c < nc; ++c) blk.offsets[c + 1] += blk.offsets[c];
    std::vector<Index> order(static_cast<std::size_t>(b));
    std::vector<Index> next(blk.offsets.begin(), blk.offsets.end() - 1);
    for (Index i = 0; i < b; ++i) order[next[codes[i]]++] = i;
    blk.gathered.resize(static_cast<std::size_t>(b * d));
    T* dst = blk.gathered.data();
    parallel_for(n_chunks(b, kRowTask), cfg, [&](Index t, int) {
      for (Index i = t * kRowTask; i < std::min(b, (t + 1) * kRowTask); ++i)
        std::memcpy(dst + i * d, x0 + order[i] * d, sizeof(T) * static_cast<std::size_t>(d));
    });
    blk.x = dst;
  } else {
    blk.x = x0;
    blk.g = gm.factor + start * gm.rank;
  }
  blk.z.resize(static_cast<std::size_t>(b * q));
  blk.r.resize(static_cast<std::size_t>(with_r ? b * k : 0));
  blk.c.resize(rows.factors.size());
  for (std::size_t f = 0; f < rows.factors.size(); ++f)
    blk.c[f].resize(static_cast<std::size_t>(need(f) ? b * rows.factors[f].m : 0));
  RunConfig one;  // a task's kernel rows: on its own thread, polled by the team
  parallel_for(n_chunks(b, kRowTask), cfg, [&](Index t, int) {
    const Index i0 = t * kRowTask, nr = std::min(kRowTask, b - i0);
    const T* xs = blk.x + i0 * d;
    T* z = blk.z.data() + i0 * q;
    gemm_row_major<T>(blas, false, false, nr, q, d, T(1), xs, d, rows.w, q, T(0), z, q);
    if (with_r)
      gemm_row_major<T>(blas, false, false, nr, k, d, T(1), xs, d, rows.v, k, T(0),
                        blk.r.data() + i0 * k, k);
    for (std::size_t f = 0; f < rows.factors.size(); ++f) {
      if (blk.c[f].empty()) continue;
      const auto& fac = rows.factors[f];
      T* c = blk.c[f].data() + i0 * fac.m;
      kernel_matrix<T>(blas, PointPair<T>{z, nr, fac.landmarks, fac.m, q}, fac.terms, c, one);
      if (fac.negative_reciprocal)
        for (Index e = 0; e < nr * fac.m; ++e) c[e] = T(-1) / c[e];
    }
  });
}

// The block order of the rows: slices of block_rows.
template <class T, class Body>
void for_blocks(const LandmarkRows<T>& rows, Body&& body) {
  for (Index s = 0; s < rows.n; s += rows.block_rows) body(s, std::min(rows.block_rows, rows.n - s));
}

template <class T>
void add_into(double* acc, const T* v, Index n) {
  for (Index i = 0; i < n; ++i) acc[i] += static_cast<double>(v[i]);
}

}  // namespace

template <class T>
void landmark_first_sweep(const Blas& blas, const LandmarkRows<T>& rows,
                          const std::vector<FirstSweepOut>& out, const RunConfig& cfg) {
  check_rows(rows);
  if (out.size() != rows.factors.size()) throw std::invalid_argument("one output per factor");
  const Index d = rows.d, k = rows.k;
  const auto& gm = rows.gamma;
  const Index groups = gm.groups(), pc = gm.p_columns();
  const bool classes = gm.classes(), with_r = rows.v != nullptr;
  const std::size_t nf = rows.factors.size();
  Scratch<T> scratch(cfg.n_threads);
  Scratch<double> sums(cfg.n_threads);
  Block<T> blk;
  std::vector<T> stacked;  // general form with V: g_j o R, b x (rank k)
  for_blocks(rows, [&](Index start, Index b) {
    prepare_block(blas, rows, start, b, with_r, [](std::size_t) { return true; }, blk, cfg);
    // P: per factor and chunk of landmark columns
    std::vector<Index> col_tasks(nf + 1, 0);
    for (std::size_t f = 0; f < nf; ++f) col_tasks[f + 1] = col_tasks[f] + n_chunks(rows.factors[f].m, kColTask);
    parallel_for(col_tasks[nf], cfg, [&](Index t, int worker) {
      const std::size_t f = static_cast<std::size_t>(
          std::upper_bound(col_tasks.begin(), col_tasks.end(), t) - col_tasks.begin() - 1);
      const Index m = rows.factors[f].m, j0 = (t - col_tasks[f]) * kColTask;
      const Index mc = std::min(kColTask, m - j0);
      const T* c = blk.c[f].data();
      double* p = out[f].p;
      if (classes) {
        double* acc = sums.get(worker, mc);
        for (Index cl = 0; cl < gm.n_classes; ++cl) {
          std::fill(acc, acc + mc, 0.0);
          for (Index i = blk.offsets[cl]; i < blk.offsets[cl + 1]; ++i)
            add_into(acc, c + i * m + j0, mc);
          for (Index j = 0; j < mc; ++j) {
            p[(j0 + j) * pc + cl] += acc[j];
            p[(j0 + j) * pc + gm.n_classes] += acc[j];
            p[(j0 + j) * pc + gm.n_classes + 1] += gm.proportions[cl] * acc[j];
          }
        }
      } else {
        T* tmp = scratch.get(worker, mc * pc);
        gemm_row_major<T>(blas, true, false, mc, pc, b, T(1), c + j0, m, blk.g, pc, T(0), tmp, pc);
        add_into(p + j0 * pc, tmp, mc * pc);
      }
    });
    // A: per factor with products, group and chunk of the d rows
    const Index pieces = n_chunks(kProductTasks, groups);
    const Index a_rows = std::max<Index>(64, (n_chunks(d, pieces) + 15) / 16 * 16);
    const Index dchunks = n_chunks(d, a_rows);
    std::vector<std::size_t> with_a, with_q;
    for (std::size_t f = 0; f < nf; ++f) {
      if (out[f].a) with_a.push_back(f);
      if (out[f].q && with_r) with_q.push_back(f);
    }
    parallel_for(static_cast<Index>(with_a.size()) * groups * dchunks, cfg, [&](Index t, int worker) {
      const std::size_t f = with_a[static_cast<std::size_t>(t / (groups * dchunks))];
      const Index g = (t / dchunks) % groups, d0 = (t % dchunks) * a_rows;
      const Index dc = std::min(a_rows, d - d0), m = rows.factors[f].m;
      const T* c = blk.c[f].data();
      T* tmp = scratch.get(worker, dc * m + (classes ? 0 : b * dc));
      if (classes) {
        const Index i0 = blk.offsets[g], bc = blk.offsets[g + 1] - i0;
        gemm_row_major<T>(blas, true, false, dc, m, bc, T(1), blk.x + i0 * d + d0, d,
                          c + i0 * m, m, T(0), tmp, m);
        add_into(out[f].a + (g * d + d0) * m, tmp, dc * m);
      } else {
        // X^T diag(g_j) C: the d0 columns of X scaled by g_j (b x dc), then one GEMM
        T* xs = tmp + dc * m;
        for (Index i = 0; i < b; ++i) {
          const T gi = blk.g[i * gm.rank + g];
          for (Index e = 0; e < dc; ++e) xs[i * dc + e] = gi * blk.x[i * d + d0 + e];
        }
        gemm_row_major<T>(blas, true, false, dc, m, b, T(1), xs, dc, c, m, T(0), tmp, m);
        // A is d x rank x m: row d0 + e, group g
        for (Index e = 0; e < dc; ++e) add_into(out[f].a + ((d0 + e) * gm.rank + g) * m, tmp + e * m, m);
      }
    });
    if (with_q.empty()) return;
    if (classes) {
      parallel_for(static_cast<Index>(with_q.size()) * groups, cfg, [&](Index t, int worker) {
        const std::size_t f = with_q[static_cast<std::size_t>(t / groups)];
        const Index g = t % groups, m = rows.factors[f].m;
        const Index i0 = blk.offsets[g], bc = blk.offsets[g + 1] - i0;
        T* tmp = scratch.get(worker, m * k);
        gemm_row_major<T>(blas, true, false, m, k, bc, T(1), blk.c[f].data() + i0 * m, m,
                          blk.r.data() + i0 * k, k, T(0), tmp, k);
        add_into(out[f].q + g * m * k, tmp, m * k);
      });
      return;
    }
    const Index rk = gm.rank * k;
    stacked.resize(static_cast<std::size_t>(b * rk));
    for (Index i = 0; i < b; ++i)
      for (Index j = 0; j < gm.rank; ++j)
        for (Index e = 0; e < k; ++e) stacked[i * rk + j * k + e] = blk.g[i * gm.rank + j] * blk.r[i * k + e];
    std::vector<Index> q_tasks(with_q.size() + 1, 0);
    for (std::size_t u = 0; u < with_q.size(); ++u)
      q_tasks[u + 1] = q_tasks[u] + n_chunks(rows.factors[with_q[u]].m, kColTask);
    parallel_for(q_tasks.back(), cfg, [&](Index t, int worker) {
      const std::size_t u = static_cast<std::size_t>(
          std::upper_bound(q_tasks.begin(), q_tasks.end(), t) - q_tasks.begin() - 1);
      const std::size_t f = with_q[u];
      const Index m = rows.factors[f].m, j0 = (t - q_tasks[u]) * kColTask;
      const Index mc = std::min(kColTask, m - j0);
      T* tmp = scratch.get(worker, mc * rk);
      gemm_row_major<T>(blas, true, false, mc, rk, b, T(1), blk.c[f].data() + j0, m,
                        stacked.data(), rk, T(0), tmp, rk);
      add_into(out[f].q + j0 * rk, tmp, mc * rk);
    });
  });
}

template <class T>
void landmark_second_sweep(const Blas& blas, const LandmarkRows<T>& rows,
                           const std::vector<const T*>& h, double* phi, double* pv,
                           const RunConfig& cfg) {
  check_rows(rows);
  if (h.size() != rows.factors.size()) throw std::invalid_argument("one right-hand side per factor");
  const Index d = rows.d, k = rows.k, w = 1 + k;
  const auto& gm = rows.gamma;
  const bool classes = gm.classes(), with_r = rows.v != nullptr;
  if (pv != nullptr && !with_r) throw std::invalid_argument("Phi V needs V");
  const std::size_t nf = rows.factors.size();
  Scratch<T> scratch(cfg.n_threads);
  Block<T> blk;
  std::vector<T> o, xs;                 // b x w weights; b x d rows scaled by the degrees
  std::vector<double> upper;            // the d x d degree term, upper triangle
  if (phi != nullptr) upper.assign(static_cast<std::size_t>(d * d), 0.0);
  const Index dchunks = n_chunks(d, kDimTask);
  for_blocks(rows, [&](Index start, Index b) {
    prepare_block(blas, rows, start, b, with_r, [&](std::size_t f) { return h[f] != nullptr; },
                  blk, cfg);
    o.assign(static_cast<std::size_t>(b * w), T(0));
    if (phi != nullptr) xs.resize(static_cast<std::size_t>(b * d));
    parallel_for(n_chunks(b, kRowTask), cfg, [&](Index t, int worker) {
      const Index i0 = t * kRowTask, i1 = std::min(b, i0 + kRowTask);
      T* ot = o.data() + i0 * w;
      for (std::size_t f = 0; f < nf; ++f) {
        if (h[f] == nullptr) continue;
        const Index m = rows.factors[f].m;
        const T* c = blk.c[f].data();
        if (classes) {
          // the rows of each class met by the task, times that class's H
          for (Index cl = 0; cl < gm.n_classes; ++cl) {
            const Index a0 = std::max(i0, blk.offsets[cl]), a1 = std::min(i1, blk.offsets[cl + 1]);
            if (a1 <= a0) continue;
            gemm_row_major<T>(blas, false, false, a1 - a0, w, m, T(1), c + a0 * m, m,
                              h[f] + cl * m * w, w, T(1), o.data() + a0 * w, w);
          }
        } else {
          const Index rw = gm.rank * w;
          T* tmp = scratch.get(worker, (i1 - i0) * rw);
          gemm_row_major<T>(blas, false, false, i1 - i0, rw, m, T(1), c + i0 * m, m, h[f], rw,
                            T(0), tmp, rw);
          for (Index i = i0; i < i1; ++i)
            for (Index j = 0; j < gm.rank; ++j) {
              const T gij = blk.g[i * gm.rank + j];
              for (Index e = 0; e < w; ++e) o[i * w + e] += gij * tmp[(i - i0) * rw + j * w + e];
            }
        }
      }
      // O = o[:, 1:] + deg R (in place: column 0 keeps the degrees)
      for (Index i = i0; i < i1; ++i) {
        const T deg = ot[(i - i0) * w];
        if (with_r)
          for (Index e = 0; e < k; ++e) o[i * w + 1 + e] += deg * blk.r[i * k + e];
        if (phi != nullptr)
          for (Index e = 0; e < d; ++e) xs[i * d + e] = deg * blk.x[i * d + e];
      }
    });
    // phi (upper triangle, rows d0.., columns d0..) and pv, per chunk of the d rows
    const Index tasks = (phi != nullptr ? dchunks : 0) + (pv != nullptr ? dchunks : 0);
    parallel_for(tasks, cfg, [&](Index t, int worker) {
      const bool deg_task = phi != nullptr && t < dchunks;
      const Index d0 = (t % dchunks) * kDimTask, dc = std::min(kDimTask, d - d0);
      if (deg_task) {
        const Index cols = d - d0;
        T* tmp = scratch.get(worker, dc * cols);
        gemm_row_major<T>(blas, true, false, dc, cols, b, T(1), xs.data() + d0, d, blk.x + d0, d,
                          T(0), tmp, cols);
        for (Index e = 0; e < dc; ++e) add_into(upper.data() + (d0 + e) * d + d0, tmp + e * cols, cols);
      } else {
        T* tmp = scratch.get(worker, dc * k);
        gemm_row_major<T>(blas, true, false, dc, k, b, T(1), blk.x + d0, d, o.data() + 1, w, T(0),
                          tmp, k);
        add_into(pv + d0 * k, tmp, dc * k);
      }
    });
  });
  if (phi != nullptr)
    for (Index i = 0; i < d; ++i)
      for (Index j = 0; j < d; ++j) phi[i * d + j] += j >= i ? upper[i * d + j] : upper[j * d + i];
}

#define IKDR_INSTANTIATE_LANDMARK(T)                                                            \
  template void landmark_first_sweep<T>(const Blas&, const LandmarkRows<T>&,                    \
                                        const std::vector<FirstSweepOut>&, const RunConfig&);    \
  template void landmark_second_sweep<T>(const Blas&, const LandmarkRows<T>&,                   \
                                         const std::vector<const T*>&, double*, double*,         \
                                         const RunConfig&);
IKDR_INSTANTIATE_LANDMARK(double)
IKDR_INSTANTIATE_LANDMARK(float)

}  // namespace ikdr
