// Row-panel driver for kernel matrices and fused Laplacian products.
//
// Gradient weights. For an ISM kernel k = f(beta) with inner-product argument
// (linear, polynomial: beta = <z_i, z_j>) the weight a_ij = f'(beta) enters
// Phi as X^T (Gamma o a) X; with a squared-distance argument (gaussian,
// squared, multiquadric) b_ij = f'(beta) enters as 2 X^T L(Gamma o b) X
// (DESIGN.md section 2). Both fold into one panel product:
//   X^T [Gamma o (a - 2 b)] X + X^T diag(2 (Gamma o b) 1) X.
#include "ikdr/fused.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "ikdr/panel_ops.hpp"

#ifdef IKDR_HAVE_OPENMP
#include <omp.h>
#endif

namespace ikdr {

template <>
void gemm_row_major<double>(const Blas& blas, bool trans_a, bool trans_b, Index m, Index n,
                            Index k, double alpha, const double* a, Index lda, const double* b,
                            Index ldb, double beta, double* c, Index ldc) {
  if (m == 0 || n == 0) return;
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T.
  const char ta = trans_b ? 'T' : 'N', tb = trans_a ? 'T' : 'N';
  const int mm = int(n), nn = int(m), kk = int(k), la = int(ldb), lb = int(lda), lc = int(ldc);
  if (k == 0) {
    for (Index i = 0; i < m; ++i)
      for (Index j = 0; j < n; ++j) c[i * ldc + j] = beta == 0.0 ? 0.0 : beta * c[i * ldc + j];
    return;
  }
  blas.dgemm(&ta, &tb, &mm, &nn, &kk, &alpha, b, &la, a, &lb, &beta, c, &lc);
}

template <>
void gemm_row_major<float>(const Blas& blas, bool trans_a, bool trans_b, Index m, Index n, Index k,
                           float alpha, const float* a, Index lda, const float* b, Index ldb,
                           float beta, float* c, Index ldc) {
  if (m == 0 || n == 0) return;
  const char ta = trans_b ? 'T' : 'N', tb = trans_a ? 'T' : 'N';
  const int mm = int(n), nn = int(m), kk = int(k), la = int(ldb), lb = int(lda), lc = int(ldc);
  if (k == 0) {
    for (Index i = 0; i < m; ++i)
      for (Index j = 0; j < n; ++j) c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
    return;
  }
  blas.sgemm(&ta, &tb, &mm, &nn, &kk, &alpha, b, &la, a, &lb, &beta, c, &lc);
}

namespace {

// Row-major GEMM with the rows of C split over the OpenMP threads, each chunk
// a single-threaded BLAS call: the BLAS and OpenMP thread pools then never
// spin against each other on the same cores (the Python layer holds SciPy's
// BLAS at one thread during these calls).
//
// The row blocks have a fixed size, independent of the thread count: every row
// of C then comes from a BLAS call of the same shape at the same offset, so the
// result is bitwise the same for any number of threads (a BLAS may round rows
// differently depending on where they fall in its register blocking).
constexpr Index gemm_block_rows = 64;

template <class T>
void parallel_gemm_rows(const Blas& blas, int n_threads, bool trans_b, Index m, Index n, Index k,
                        const T* a, Index lda, const T* b, Index ldb, T* c, Index ldc) {
  const Index blocks = (m + gemm_block_rows - 1) / gemm_block_rows;
  const int threads = static_cast<int>(std::max<Index>(1, std::min<Index>(n_threads, blocks)));
#ifdef IKDR_HAVE_OPENMP
#pragma omp parallel for num_threads(threads) schedule(static)
#endif
  for (Index blk = 0; blk < blocks; ++blk) {
    const Index r0 = blk * gemm_block_rows, r1 = std::min(m, r0 + gemm_block_rows);
    gemm_row_major<T>(blas, false, trans_b, r1 - r0, n, k, T(1), a + r0 * lda, lda, b, ldb, T(0),
                      c + r0 * ldc, ldc);
  }
  (void)threads;
}

// C (m x n) = A B with the columns of B and C split over the threads.
template <class T>
void parallel_gemm_cols(const Blas& blas, int n_threads, Index m, Index n, Index k, const T* a,
                        Index lda, const T* b, Index ldb, T* c, Index ldc) {
  const int chunks = static_cast<int>(std::max<Index>(1, std::min<Index>(n_threads, n / 16)));
#ifdef IKDR_HAVE_OPENMP
#pragma omp parallel for num_threads(chunks) schedule(static, 1)
#endif
  for (int t = 0; t < chunks; ++t) {
    const Index c0 = n * t / chunks, c1 = n * (t + 1) / chunks;
    gemm_row_major<T>(blas, false, false, m, c1 - c0, k, T(1), a, lda, b + c0, ldb, T(0), c + c0,
                      ldc);
  }
}

// Right-hand sides at least this wide get tall panels (see fused_product)
constexpr Index wide_rhs_cols = 128;
constexpr Index wide_panel_bytes = Index(64) << 20;

// Up to this width, Gram rows (points) and Gamma rows (factor) are formed in
// cache by PanelOps::dot_row rather than by a panel-sized GEMM buffer.
constexpr Index thin_limit = 64;

template <class T>
bool needs_distance(const std::vector<Term<T>>& terms) {
  for (const auto& t : terms)
    if (t.kind == TermKind::gaussian || t.kind == TermKind::squared ||
        t.kind == TermKind::multiquadric)
      return true;
  return false;
}

template <class T>
bool needs_dot(const std::vector<Term<T>>& terms) {
  for (const auto& t : terms)
    if (t.kind == TermKind::linear || t.kind == TermKind::polynomial) return true;
  return false;
}

template <class T>
std::vector<T> squared_norms(const T* z, Index n, Index k) {
  std::vector<T> out(n);
  for (Index i = 0; i < n; ++i) {
    T s = 0;
    for (Index c = 0; c < k; ++c) s += z[i * k + c] * z[i * k + c];
    out[i] = s;
  }
  return out;
}

// Scratch panels for one block of rows, reused across blocks.
// Uninitialised scratch: every entry is written before it is read, so the
// O(panel) zero-fill (and its page faults) on every call is skipped.
template <class T>
class Scratch {
 public:
  void reset(Index n) { data_.reset(new T[static_cast<std::size_t>(n)]); }
  T* data() const { return data_.get(); }

 private:
  std::unique_ptr<T[]> data_;
};

template <class T>
struct Panel {
  Index rows = 0, cols = 0;
  Scratch<T> dot, dist, inner, diff, gamma;
  // Column points / Gamma factor transposed (k x m, r x m) when thin enough to
  // form rows of the Gram and Gamma blocks in cache (see thin_limit).
  std::vector<T> points_t, factor_t;
  std::vector<T> col_factor;  // per-column bandwidth factor of a relative Gaussian
};

// Accumulate the terms for row i of the panel into inner (a / value) and diff (b),
// over `cols` columns starting at column j0 (col_scales are indexed from j0).
template <class T>
void accumulate_row(const PanelOps<T>& ops, const std::vector<Term<T>>& terms, Mode mode,
                    Index i_global, Index j0, Index cols, const T* dot, const T* dist, T* inner,
                    T* diff, const std::vector<std::vector<T>>& col_scales) {
  for (std::size_t t = 0; t < terms.size(); ++t) {
    const Term<T>& term = terms[t];
    const T w = T(term.weight);
    switch (term.kind) {
      case TermKind::linear:
        if (mode == Mode::value) ops.add_scaled(inner, dot, w, cols);
        else ops.add_constant(inner, w, cols);
        break;
      case TermKind::polynomial:
        if (mode == Mode::value) ops.add_power(inner, dot, w, T(term.c), term.degree, cols);
        else ops.add_power(inner, dot, w * T(term.degree), T(term.c), term.degree - 1, cols);
        break;
      case TermKind::gaussian: {
        // k = exp(-dist * e_ij), e_ij = 1 / (2 s_i s_j); f'(beta) = -e_ij k.
        const T* v = col_scales[t].empty() ? nullptr : col_scales[t].data() + j0;
        const T u = term.scale_rows ? T(0.5) / term.scale_rows[i_global]
                                    : T(0.5 / (term.sigma * term.sigma));
        if (mode == Mode::value) ops.add_exp(inner, dist, w, u, v, 0, cols);
        else ops.add_exp(diff, dist, -w, u, v, 1, cols);
        break;
      }
      case TermKind::squared:
        if (mode == Mode::value) ops.add_scaled(inner, dist, -w, cols);
        else ops.add_constant(diff, -w, cols);
        break;
      case TermKind::multiquadric: {
        const T c2 = T(term.c * term.c);
        if (mode == Mode::value) ops.add_sqrt(inner, dist, -w, c2, 0, cols);
        else ops.add_sqrt(diff, dist, -w / T(2), c2, 1, cols);
        break;
      }
    }
  }
}

// Columns of one row handled together: every intermediate (Gram entries,
// distances, Gamma entries, kernel weights) of a chunk stays in L1, and only
// the combined Psi entry is written to the panel (one store per entry instead
// of a pass over each m-long scratch row).
constexpr Index column_chunk = 256;

// Evaluate rows [r0, r0 + rows) of Psi = Gamma o h into out (rows x m),
// with row sums of M and of 2 Gamma o b.
template <class T>
void evaluate_panel(const Blas& blas, const PointPair<T>& pts, const T* sq_a, const T* sq_b,
                    const GammaView<T>& gamma, const std::vector<Term<T>>& terms, Mode mode,
                    const std::vector<std::vector<T>>& col_scales, Index r0, Index rows,
                    Panel<T>& p, T* out, Index ld_out, T* sum_m, T* sum_b, int n_threads) {
  const PanelOps<T>& ops = panel_ops<T>();
  const Index m = pts.m, k = pts.k;
  const bool use_dist = needs_distance(terms);
  const bool has_diff = use_dist && mode == Mode::gradient;
  const bool self = pts.a == pts.b && pts.n == pts.m;  // same rows, not just a view at offset 0
  // Gram block: every ISM kernel is a function of <z_i, z_j> and the norms.
  // Thin points (k small, the projected XW of ISM) are multiplied chunk by
  // chunk in cache below; wide ones go through one BLAS GEMM per panel.
  const bool thin_points = !p.points_t.empty();
  if (!thin_points)
    parallel_gemm_rows<T>(blas, n_threads, true, rows, m, k, pts.a + r0 * k, k, pts.b, k,
                          p.dot.data(), m);
  const T* g_panel = nullptr;
  const bool thin_gamma = !p.factor_t.empty();
  if (gamma.dense != nullptr) {
    g_panel = gamma.dense + r0 * m;
  } else if (gamma.g_rows != nullptr && !thin_gamma) {
    // Gamma rows = (G_rows[r0:] diag(s)) G_cols^T; the factor is r wide.
    const Index r = gamma.rank;
    std::vector<T> scaled(rows * r);
    for (Index i = 0; i < rows; ++i)
      for (Index c = 0; c < r; ++c)
        scaled[i * r + c] = gamma.g_rows[(r0 + i) * r + c] * (gamma.s ? gamma.s[c] : T(1));
    parallel_gemm_rows<T>(blas, n_threads, true, rows, m, r, scaled.data(), r, gamma.g_cols, r,
                          p.gamma.data(), m);
    g_panel = p.gamma.data();
  }
  // Tiles of row_block rows x column_chunk columns: the column chunk of the
  // transposed points / Gamma factor (k x chunk, r x chunk) is reused from L1
  // by all rows of the block instead of being streamed from L2 once per row.
  constexpr Index row_block = 8;
  const Index n_blocks = (rows + row_block - 1) / row_block;
#ifdef IKDR_HAVE_OPENMP
#pragma omp parallel num_threads(n_threads)
#endif
  {
    // Per-thread chunk scratch (a few KB: stays in L1).
    T dot_buf[column_chunk], dist_buf[column_chunk], inner[column_chunk], diff[column_chunk],
        gbuf[column_chunk];
    T scaled[row_block][thin_limit];
    double sm[row_block], sb[row_block];  // rows of float32 panels sum in double
#ifdef IKDR_HAVE_OPENMP
#pragma omp for schedule(static)
#endif
    for (Index blk = 0; blk < n_blocks; ++blk) {
      const Index i0 = blk * row_block, i1 = std::min(rows, i0 + row_block);
      for (Index i = i0; i < i1; ++i) {
        sm[i - i0] = sb[i - i0] = 0.0;
        if (thin_gamma)
          for (Index c = 0; c < gamma.rank; ++c)
            scaled[i - i0][c] =
                gamma.g_rows[(r0 + i) * gamma.rank + c] * (gamma.s ? gamma.s[c] : T(1));
      }
      for (Index j0 = 0; j0 < m; j0 += column_chunk) {
        const Index len = std::min(column_chunk, m - j0);
        for (Index i = i0; i < i1; ++i) {
          const Index ig = r0 + i;
          T* dot;
          if (thin_points) {
            dot = dot_buf;
            ops.dot_row(dot, pts.a + ig * k, p.points_t.data() + j0, k, m, len);
          } else {
            dot = p.dot.data() + i * m + j0;
          }
          const T* g_row = g_panel ? g_panel + i * m + j0 : nullptr;
          if (thin_gamma) {
            ops.dot_row(gbuf, scaled[i - i0], p.factor_t.data() + j0, gamma.rank, m, len);
            g_row = gbuf;
          }
          T* dist = nullptr;
          if (use_dist) {
            dist = dist_buf;
            std::copy(dot, dot + len, dist);
            ops.squared_distance(dist, sq_b + j0, sq_a[ig], len);
            if (self && ig >= j0 && ig < j0 + len) dist[ig - j0] = T(0);
          }
          std::fill(inner, inner + len, T(0));
          if (has_diff) std::fill(diff, diff + len, T(0));
          accumulate_row(ops, terms, mode, ig, j0, len, dot, dist, inner,
                         has_diff ? diff : nullptr, col_scales);
          T csm = 0, csb = 0;
          ops.combine(out + i * ld_out + j0, inner, has_diff ? diff : nullptr, g_row, len, &csm,
                      &csb);
          sm[i - i0] += csm;
          sb[i - i0] += csb;
        }
      }
      for (Index i = i0; i < i1; ++i) {
        if (sum_m) sum_m[i] = T(sm[i - i0]);
        if (sum_b) sum_b[i] = T(sb[i - i0]);
      }
    }
  }
}

template <class T>
std::vector<std::vector<T>> column_scales(const std::vector<Term<T>>& terms, Index m) {
  // Relative Gaussian: e_ij = (1 / (2 s_i)) * (1 / s_j); store 1 / s_j.
  std::vector<std::vector<T>> out(terms.size());
  for (std::size_t t = 0; t < terms.size(); ++t) {
    if (terms[t].kind == TermKind::gaussian && terms[t].scale_cols != nullptr) {
      out[t].resize(m);
      for (Index j = 0; j < m; ++j) out[t][j] = T(1) / terms[t].scale_cols[j];
    }
  }
  return out;
}

Index panel_rows(Index n, Index m, Index target) {
  const Index rows = std::max<Index>(16, target / std::max<Index>(m, 1));
  return std::min(rows, std::max<Index>(n, 1));
}

template <class T>
std::vector<T> transposed(const T* a, Index rows, Index cols) {
  std::vector<T> t(rows * cols);
  for (Index i = 0; i < rows; ++i)
    for (Index c = 0; c < cols; ++c) t[c * rows + i] = a[i * cols + c];
  return t;
}

template <class T>
void allocate(Panel<T>& p, Index rows, Index m, const std::vector<Term<T>>& terms, Mode mode,
              bool factored, const PointPair<T>& pts, const GammaView<T>& gamma) {
  if (pts.k <= thin_limit) p.points_t = transposed(pts.b, pts.m, pts.k);
  if (factored && gamma.rank <= thin_limit) p.factor_t = transposed(gamma.g_cols, pts.m, gamma.rank);
  (void)terms;
  (void)mode;
  if (p.points_t.empty()) p.dot.reset(rows * m);  // wide points: Gram block by GEMM
  p.inner.reset(rows * m);                         // the Psi panel handed to the GEMM
  if (factored && p.factor_t.empty()) p.gamma.reset(rows * m);
}

void poll(const RunConfig& cfg) {
  if (cfg.check_interrupt && cfg.check_interrupt()) throw Interrupted();
}

}  // namespace

template <class T>
void kernel_matrix(const Blas& blas, const PointPair<T>& pts, const std::vector<Term<T>>& terms,
                   T* out, const RunConfig& cfg) {
  const std::vector<T> sq_a = squared_norms(pts.a, pts.n, pts.k);
  const std::vector<T> sq_b = pts.a == pts.b && pts.n == pts.m ? sq_a : squared_norms(pts.b, pts.m, pts.k);
  const auto col_scales = column_scales(terms, pts.m);
  const Index rows = panel_rows(pts.n, pts.m, cfg.panel_elements);
  Panel<T> p;
  allocate(p, rows, pts.m, terms, Mode::value, false, pts, GammaView<T>{});
  for (Index r0 = 0; r0 < pts.n; r0 += rows) {
    const Index len = std::min(rows, pts.n - r0);
    evaluate_panel(blas, pts, sq_a.data(), sq_b.data(), GammaView<T>{}, terms, Mode::value,
                   col_scales, r0, len, p, out + r0 * pts.m, pts.m, static_cast<T*>(nullptr), static_cast<T*>(nullptr),
                   cfg.n_threads);
    poll(cfg);
  }
}

template <class T>
void fused_product(const Blas& blas, const PointPair<T>& pts, const GammaView<T>& gamma,
                   const std::vector<Term<T>>& terms, Mode mode, const T* rhs, Index rhs_cols,
                   const T* rhs_rows, T* y, T* row_sum_m, T* row_sum_b, const RunConfig& cfg) {
  const std::vector<T> sq_a = squared_norms(pts.a, pts.n, pts.k);
  const std::vector<T> sq_b = pts.a == pts.b && pts.n == pts.m ? sq_a : squared_norms(pts.b, pts.m, pts.k);
  const auto col_scales = column_scales(terms, pts.m);
  // A wide right-hand side (forming Phi = X^T L(Psi) X passes X itself) is
  // streamed from memory once per panel, so its panels are taller: up to
  // wide_panel_bytes, at least 256 rows where that fits. Its GEMM is split
  // over the threads by right-hand-side columns (each thread reads the
  // shared panel and its own slice of rhs) instead of by panel rows (each
  // thread would stream all of rhs).
  const bool wide = rhs != nullptr && rhs_cols >= wide_rhs_cols;
  const Index target = wide ? std::max(cfg.panel_elements,
                                       std::min<Index>(256 * pts.m, wide_panel_bytes / Index(sizeof(T))))
                            : cfg.panel_elements;
  const Index rows = panel_rows(pts.n, pts.m, target);
  Panel<T> p;
  allocate(p, rows, pts.m, terms, mode, gamma.g_rows != nullptr, pts, gamma);
  std::vector<T> sm(rows), sb(rows);
  T* const m_panel = p.inner.data();  // combine() writes M over the inner weights
  for (Index r0 = 0; r0 < pts.n; r0 += rows) {
    const Index len = std::min(rows, pts.n - r0);
    evaluate_panel(blas, pts, sq_a.data(), sq_b.data(), gamma, terms, mode, col_scales, r0, len,
                   p, m_panel, pts.m, sm.data(), sb.data(), cfg.n_threads);
    if (row_sum_m) std::copy(sm.begin(), sm.begin() + len, row_sum_m + r0);
    if (row_sum_b) std::copy(sb.begin(), sb.begin() + len, row_sum_b + r0);
    if (rhs != nullptr && rhs_cols > 0) {
      T* y_rows = y + r0 * rhs_cols;
      if (wide)
        parallel_gemm_cols<T>(blas, cfg.n_threads, len, rhs_cols, pts.m, m_panel, pts.m, rhs,
                              rhs_cols, y_rows, rhs_cols);
      else
        parallel_gemm_rows<T>(blas, cfg.n_threads, false, len, rhs_cols, pts.m, m_panel, pts.m,
                              rhs, rhs_cols, y_rows, rhs_cols);
      if (mode == Mode::gradient) {
        // Laplacian diagonal: only rows of the same point set carry it.
        for (Index i = 0; i < len; ++i) {
          const T d = sb[i];
          if (d == T(0)) continue;
          const T* r_row = rhs_rows + (r0 + i) * rhs_cols;
          for (Index c = 0; c < rhs_cols; ++c) y_rows[i * rhs_cols + c] += d * r_row[c];
        }
      }
    }
    poll(cfg);
  }
}

namespace {

// Shared driver of the two shifted-Gaussian routines: squared distances of one
// row panel at a time (Gram block by GEMM), handed row by row to `row_fn`.
template <class T, class RowFn>
void for_each_distance_row(const Blas& blas, const PointPair<T>& pts, const RunConfig& cfg,
                           RowFn&& row_fn) {
  const PanelOps<T>& ops = panel_ops<T>();
  const std::vector<T> sq_a = squared_norms(pts.a, pts.n, pts.k);
  const bool self = pts.a == pts.b && pts.n == pts.m;
  const std::vector<T> sq_b = self ? sq_a : squared_norms(pts.b, pts.m, pts.k);
  const Index rows = panel_rows(pts.n, pts.m, cfg.panel_elements);
  std::vector<T> dist(rows * pts.m), work(rows * pts.m);
  for (Index r0 = 0; r0 < pts.n; r0 += rows) {
    const Index len = std::min(rows, pts.n - r0);
    gemm_row_major<T>(blas, false, true, len, pts.m, pts.k, T(1), pts.a + r0 * pts.k, pts.k,
                      pts.b, pts.k, T(0), dist.data(), pts.m);
#ifdef IKDR_HAVE_OPENMP
#pragma omp parallel for num_threads(cfg.n_threads) schedule(static)
#endif
    for (Index i = 0; i < len; ++i) {
      T* d = dist.data() + i * pts.m;
      ops.squared_distance(d, sq_b.data(), sq_a[r0 + i], pts.m);
      if (self) d[r0 + i] = T(0);
      row_fn(ops, r0 + i, d, work.data() + i * pts.m);
    }
    poll(cfg);
  }
}

}  // namespace

template <class T>
void gaussian_row_normalisers(const Blas& blas, const PointPair<T>& pts, double sigma, T* shift,
                              T* sums, const RunConfig& cfg) {
  const T u = T(0.5 / (sigma * sigma));
  const Index m = pts.m;
  for_each_distance_row(blas, pts, cfg, [&](const PanelOps<T>& ops, Index i, T* d, T* work) {
    T lo = m > 0 ? d[0] : T(0);
    for (Index j = 1; j < m; ++j) lo = std::min(lo, d[j]);
    for (Index j = 0; j < m; ++j) d[j] -= lo;  // log-sum-exp shift: the largest term is 1
    std::fill(work, work + m, T(0));
    ops.add_exp(work, d, T(1), u, nullptr, 0, m);
    T s = 0;
    for (Index j = 0; j < m; ++j) s += work[j];
    shift[i] = lo;
    sums[i] = s;
  });
}

template <class T>
void shifted_gaussian_matrix(const Blas& blas, const PointPair<T>& pts, double sigma,
                             const T* shift, const T* scale, T* out, const RunConfig& cfg) {
  const T u = T(0.5 / (sigma * sigma));
  const Index m = pts.m;
  for_each_distance_row(blas, pts, cfg, [&](const PanelOps<T>& ops, Index i, T* d, T*) {
    const T lo = shift[i];
    for (Index j = 0; j < m; ++j) d[j] -= lo;  // new columns may sit below the shift
    T* o = out + i * m;
    std::fill(o, o + m, T(0));
    ops.add_exp(o, d, T(1) / scale[i], u, nullptr, 0, m);
  });
}

template <class T>
void lowrank_plus_sparse(Index n, Index m, const T* dl, const T* u, const T* v,
                         const std::int64_t* indptr, const std::int64_t* indices, const T* data,
                         T* out, const RunConfig& cfg) {
  // ~64 MB of output per parallel region: few fork/joins, regular interrupt polls
  const Index block = std::max<Index>(64, (Index(1) << 23) / std::max<Index>(m, 1));
  for (Index r0 = 0; r0 < n; r0 += block) {
    const Index r1 = std::min(n, r0 + block);
#ifdef IKDR_HAVE_OPENMP
#pragma omp parallel for num_threads(cfg.n_threads) schedule(static)
#endif
    for (Index i = r0; i < r1; ++i) {
      T* o = out + i * m;
      const T a = dl[i] * u[i];
      for (Index j = 0; j < m; ++j) o[j] = a * v[j];
      for (std::int64_t p = indptr[i]; p < indptr[i + 1]; ++p) o[indices[p]] += dl[i] * data[p];
    }
    poll(cfg);
  }
}

#define IKDR_INSTANTIATE(T)                                                                     \
  template void kernel_matrix<T>(const Blas&, const PointPair<T>&, const std::vector<Term<T>>&, \
                                 T*, const RunConfig&);                                         \
  template void fused_product<T>(const Blas&, const PointPair<T>&, const GammaView<T>&,         \
                                 const std::vector<Term<T>>&, Mode, const T*, Index, const T*,  \
                                 T*, T*, T*, const RunConfig&);                                         \
  template void gaussian_row_normalisers<T>(const Blas&, const PointPair<T>&, double, T*, T*,  \
                                           const RunConfig&);                                   \
  template void shifted_gaussian_matrix<T>(const Blas&, const PointPair<T>&, double, const T*,   \
                                           const T*, T*, const RunConfig&);                     \
  template void lowrank_plus_sparse<T>(Index, Index, const T*, const T*, const T*,              \
                                       const std::int64_t*, const std::int64_t*, const T*, T*,    \
                                       const RunConfig&);
IKDR_INSTANTIATE(double)
IKDR_INSTANTIATE(float)

}  // namespace ikdr
