// The driver of the ISM family's passes: prepares what every task reads
// (norms, transposed thin operands, the padded right-hand side), then runs
// the tasks (tiles/passes.cpp) on the call's threads (parallel.hpp), each
// worker with its own scratch (WorkerScratch).
#include "ikdr/ism_products.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#include "ikdr/parallel.hpp"
#include "ikdr/tile_kernels.hpp"

namespace ikdr {
namespace {

// A pass below this many kernel entries runs on the calling thread: waking an
// OpenMP team (microseconds) would cost more than it saves. Kept at the value
// measured for the per-call threads it replaced; not re-measured for OpenMP.
constexpr Index kSerialEntries = Index(1) << 16;
// Row tasks: small enough to balance two cores at n = 1,000, large enough
// that a tile's column operands are reused by many rows.
constexpr Index kTaskRows = 32;
// A right-hand side wider than kThinCols goes through the BLAS on panels of
// kWideTaskRows rows (tall enough for an efficient GEMM) and at most
// kPanelElements entries.
constexpr Index kWideTaskRows = 256;
constexpr Index kPanelElements = Index(1) << 21;
// Symmetric passes: about kSymmetricBlocks blocks of rows (64 to 512 rows
// each), and at most kSymmetricAccElements doubles of accumulated right-hand side.
constexpr Index kSymmetricBlocks = 8;
constexpr Index kSymmetricMaxBlockRows = 512;
constexpr Index kSymmetricAccElements = Index(1) << 25;
// A Gamma factor whose rows take few distinct values (the supervised Gamma
// of class labels: centred one-hot rows) is read from a table of its distinct
// rows times the column factor (classes x m entries, computed once) instead of
// a rank-r product per kernel entry: when there are at most this many, or at
// most rank + 1 (then the table is no larger than the transposed column
// factor the pass keeps anyway; c classes give rank c).
constexpr Index kMaxGammaClasses = 16;

template <class T>
std::vector<T> squared_norms(const T* z, Index n, Index k, Index n_pad) {
  std::vector<T> out(static_cast<std::size_t>(n_pad), T(0));
  for (Index i = 0; i < n; ++i) {
    T s = 0;
    for (Index c = 0; c < k; ++c) s += z[i * k + c] * z[i * k + c];
    out[i] = s;
  }
  return out;
}

// a (rows x cols) transposed into cols x ld, zero padded.
template <class T>
std::vector<T> transposed(const T* a, Index rows, Index cols, Index ld) {
  std::vector<T> t(static_cast<std::size_t>(cols * ld), T(0));
  // runs of rows: contiguous writes while the run's rows stay in L1 (row by
  // row, every write of a row went to another cache line: 45 us of serial
  // work a pass at n = 1,000, k = 20, before the parallel region)
  constexpr Index kRun = 64;
  for (Index i0 = 0; i0 < rows; i0 += kRun) {
    const Index i1 = std::min(rows, i0 + kRun);
    for (Index c = 0; c < cols; ++c) {
      T* out = t.data() + c * ld;
      for (Index i = i0; i < i1; ++i) out[i] = a[i * cols + c];
    }
  }
  return t;
}

// The distinct rows of f (n x r) when there are at most max_classes:
// the index of each one's first occurrence (reps) and every row's class (cls,
// n). Rows are the same class only when bitwise equal, so a class's table row
// is exactly what each of its rows would give. False when there are more.
template <class T>
bool factor_classes(const T* f, Index n, Index r, Index max_classes, std::vector<Index>& reps,
                    std::vector<std::int32_t>& cls) {
  const std::size_t bytes = static_cast<std::size_t>(r) * sizeof(T);
  std::vector<std::uint64_t> rep_hash;
  reps.clear();
  cls.resize(static_cast<std::size_t>(n));
  for (Index i = 0; i < n; ++i) {
    const T* row = f + i * r;
    // The row's 32-bit words, each times an odd constant of its position,
    // summed: independent products, where FNV's chain of dependent multiplies
    // was serial work before every pass's parallel region. Equal rows get
    // equal hashes; a match is confirmed by memcmp.
    std::uint64_t h = 0;
    for (std::size_t k = 0; k < bytes; k += 4) {
      std::uint32_t word;
      std::memcpy(&word, reinterpret_cast<const unsigned char*>(row) + k, 4);
      h += (std::uint64_t(word) + k) * ((0x9E3779B97F4A7C15ull ^ (std::uint64_t(k) << 33)) | 1ull);
    }
    std::size_t c = 0;
    while (c < reps.size() && !(rep_hash[c] == h && std::memcmp(f + reps[c] * r, row, bytes) == 0)) ++c;
    if (c == reps.size()) {
      if (static_cast<Index>(reps.size()) == max_classes) return false;
      reps.push_back(i);
      rep_hash.push_back(h);
    }
    cls[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(c);
  }
  return true;
}

}  // namespace

template <class T>
GammaTable<T> gamma_table(const GammaView<T>& gamma, Index n, Index m) {
  GammaTable<T> t;
  t.n = n;
  t.m = m;
  t.rank = gamma.rank;
  const Index m_pad = round_up(std::max<Index>(m, 1), kTileCols);
  const Index ld = transposed_ld<T>(m_pad);
  t.ld = ld;
  // the scale s folded into the row factor once, not per tile; at least one
  // element: a rank-0 factor (Gamma = 0) must still read as factored
  t.g_rows.resize(static_cast<std::size_t>(std::max<Index>(1, n * gamma.rank)));
  for (Index i = 0; i < n; ++i)
    for (Index c = 0; c < gamma.rank; ++c)
      t.g_rows[i * gamma.rank + c] = gamma.g_rows[i * gamma.rank + c] * (gamma.s ? gamma.s[c] : T(1));
  if (gamma.rank > kThinWidth) return t;
  t.g_cols_t = transposed(gamma.g_cols, m, gamma.rank, ld);
  std::vector<Index> reps;
  const Index max_classes = std::max<Index>(kMaxGammaClasses, gamma.rank + 1);
  if (factor_classes(t.g_rows.data(), n, gamma.rank, max_classes, reps, t.g_class)) {
    // table row l = (scaled factor row of class l) G_cols^T, summed over
    // the rank in order, as the tiles' products do
    t.classes = static_cast<Index>(reps.size());
    t.g_table.assign(reps.size() * static_cast<std::size_t>(ld), T(0));
    // the columns' classes: the rows' own when the columns are the unscaled rows
    const bool same = gamma.g_cols == gamma.g_rows && gamma.s == nullptr && m == n;
    std::vector<Index> col_reps;
    std::vector<std::int32_t> col_class;
    if (same) {
      col_reps = reps;
      col_class = t.g_class;
    }
    if (same || factor_classes(gamma.g_cols, m, gamma.rank, max_classes, col_reps, col_class)) {
      // the columns take few distinct rows too (a Gamma of the points with
      // themselves): each entry is one of classes x column classes products,
      // summed over the rank in the same order as below, made once and copied
      // to the columns of its class (21 classes, 2,000 points: the float32
      // table in 0.10 ms instead of 0.34)
      const std::size_t kc = col_reps.size();
      std::vector<T> inner(reps.size() * kc);
      for (std::size_t l = 0; l < reps.size(); ++l) {
        const T* row = t.g_rows.data() + reps[l] * gamma.rank;
        for (std::size_t k = 0; k < kc; ++k) {
          const T* col = gamma.g_cols + col_reps[k] * gamma.rank;
          T acc = T(0);
          for (Index c = 0; c < gamma.rank; ++c) acc += row[c] * col[c];
          inner[l * kc + k] = acc;
        }
        T* out = t.g_table.data() + l * static_cast<std::size_t>(ld);
        for (Index j = 0; j < m; ++j) out[j] = inner[l * kc + static_cast<std::size_t>(col_class[j])];
      }
    } else {
      for (std::size_t l = 0; l < reps.size(); ++l) {
        T* out = t.g_table.data() + l * static_cast<std::size_t>(ld);
        const T* row = t.g_rows.data() + reps[l] * gamma.rank;
        for (Index c = 0; c < gamma.rank; ++c)
          for (Index j = 0; j < m_pad; ++j) out[j] += row[c] * t.g_cols_t[c * ld + j];
      }
    }
  } else {
    t.g_class.clear();
  }
  return t;
}

namespace {

template <class T>
bool any_of_kind(const std::vector<Term<T>>& terms, std::initializer_list<TermKind> kinds) {
  for (const auto& t : terms)
    for (TermKind k : kinds)
      if (t.kind == k) return true;
  return false;
}

// What a pass needs that is not the points: the operands and outputs above,
// plus the storage behind the plan's pointers.
template <class T>
struct PreparedPass {
  PassPlan<T> plan;
  std::vector<T> sq_a, sq_b, scaled_sq_b, b_t;
  std::unique_ptr<T[]> rhs_pad;  // the copied rows of the padded right-hand side (PassPlan)
  GammaTable<T> gamma;  // made here unless the Gamma brings one for these points
  // the symmetric pass's accumulators: uninitialised here, zeroed block by
  // block by the tasks of its first round (pair_task), on the pass's threads
  std::unique_ptr<double[]> acc_all, value_all, lap_all;
  std::vector<std::vector<T>> inv_scales;
  std::vector<const T*> inv_scale_ptrs;
};

template <class T>
void prepare(PreparedPass<T>& pp, const Blas& blas, const PointPair<T>& pts,
             const GammaView<T>& gamma, const std::vector<Term<T>>& terms, Mode mode,
             const T* rhs, Index rhs_cols, const T* rhs_rows, bool products) {
  PassPlan<T>& p = pp.plan;
  p.blas = &blas;
  p.n = pts.n;
  p.m = pts.m;
  p.k = pts.k;
  p.m_pad = round_up(std::max<Index>(pts.m, 1), kTileCols);
  p.ld_t = transposed_ld<T>(p.m_pad);
  p.a = pts.a;
  p.b = pts.b;
  p.self = pts.a == pts.b && pts.n == pts.m;
  p.mode = mode;
  p.terms = terms.data();
  p.n_terms = static_cast<int>(terms.size());
  p.needs_dist = any_of_kind(terms, {TermKind::gaussian, TermKind::squared, TermKind::multiquadric});
  p.needs_dot = p.needs_dist || any_of_kind(terms, {TermKind::linear, TermKind::polynomial});
  if (p.needs_dot && pts.k <= kThinWidth) {
    pp.b_t = transposed(pts.b, pts.m, pts.k, p.ld_t);
    p.b_t = pp.b_t.data();
  }
  pp.sq_a = squared_norms(pts.a, pts.n, pts.k, pts.n);
  pp.sq_b = p.self ? squared_norms(pts.a, pts.n, pts.k, p.m_pad)
                   : squared_norms(pts.b, pts.m, pts.k, p.m_pad);
  p.sq_a = pp.sq_a.data();
  p.sq_b = pp.sq_b.data();
  // Gamma: the scale s is folded into the row factor once, not per tile.
  if (gamma.dense != nullptr) {
    p.g_dense = gamma.dense;
  } else if (gamma.g_rows != nullptr) {
    const GammaTable<T>* table = gamma.table;
    if (table == nullptr || !p.self || table->n != pts.n || table->rank != gamma.rank ||
        table->ld != p.ld_t) {
      pp.gamma = gamma_table(gamma, pts.n, pts.m);
      table = &pp.gamma;
    }
    p.rank = gamma.rank;
    p.g_rows = table->g_rows.data();
    p.g_cols = gamma.g_cols;
    if (!table->g_cols_t.empty()) p.g_cols_t = table->g_cols_t.data();
    if (!table->g_table.empty()) {
      p.g_table = table->g_table.data();
      p.g_class = table->g_class.data();
    }
  }
  // Relative Gaussian: e_ij = (1 / (2 s_i)) (1 / s_j); store 1 / s_j, padded with 1.
  pp.inv_scales.resize(terms.size());
  pp.inv_scale_ptrs.assign(terms.size(), nullptr);
  bool plain_gaussian = terms.size() == 1 && terms[0].kind == TermKind::gaussian;
  for (std::size_t t = 0; t < terms.size(); ++t) {
    if (terms[t].kind == TermKind::gaussian && terms[t].scale_cols != nullptr) {
      pp.inv_scales[t].assign(static_cast<std::size_t>(p.m_pad), T(1));
      for (Index j = 0; j < pts.m; ++j) pp.inv_scales[t][j] = T(1) / terms[t].scale_cols[j];
      pp.inv_scale_ptrs[t] = pp.inv_scales[t].data();
      plain_gaussian = false;
    }
  }
  p.col_inv_scale = pp.inv_scale_ptrs.data();
  p.single_gaussian = plain_gaussian;
  if (plain_gaussian) {
    const T u = T(0.5 / (terms[0].sigma * terms[0].sigma));
    // padded with -inf: a padding column's kernel value is exactly 0, so the
    // tiles' sums need no mask for the last, partial tile
    pp.scaled_sq_b.assign(pp.sq_b.size(), -std::numeric_limits<T>::infinity());
    for (Index j = 0; j < pts.m; ++j) pp.scaled_sq_b[j] = -u * pp.sq_b[j];
    p.scaled_sq_b = pp.scaled_sq_b.data();
  }
  // Right-hand side: thin ones are accumulated tile by tile from a padded copy.
  p.rhs = rhs;
  p.c = rhs != nullptr ? rhs_cols : 0;
  p.rhs_rows = rhs_rows;
  p.thin_rhs = rhs != nullptr && rhs_cols > 0 && rhs_cols <= kThinCols;
  if (p.thin_rhs) {
    // whole vectors of the instruction set in use (10 columns: 12 with AVX2)
    p.c_pad = round_up(rhs_cols, tile_kernels<T>().simd_width);
    // rows already c_pad long are read in place but for the last column
    // tile, whose rows past m must read as zeros (a 256 KB copy of X, serial
    // before every dense pass at n = 1,000, d = 32, avoided)
    const bool in_place = rhs_cols == p.c_pad;
    p.rhs_tail_row = in_place ? p.m_pad - kTileCols : p.m_pad;
    const Index copied = p.m_pad - (in_place ? p.rhs_tail_row : 0);
    pp.rhs_pad.reset(new T[static_cast<std::size_t>(copied * p.c_pad)]);
    T* pad = pp.rhs_pad.get();
    const Index first = p.m_pad - copied;  // the first row copied
    for (Index j = first; j < pts.m; ++j) {
      T* row = pad + (j - first) * p.c_pad;
      std::copy(rhs + j * rhs_cols, rhs + (j + 1) * rhs_cols, row);
      std::fill(row + rhs_cols, row + p.c_pad, T(0));
    }
    std::fill(pad + (std::max(pts.m, first) - first) * p.c_pad, pad + copied * p.c_pad, T(0));
    p.rhs_pad = in_place ? rhs : pad;
    p.rhs_tail = in_place ? pad : nullptr;
  }
  const bool wide = rhs != nullptr && rhs_cols > kThinCols;
  p.task_rows = wide ? kWideTaskRows : kTaskRows;
  p.col_block = std::min(p.m_pad, round_up(std::max<Index>(kPanelElements / p.task_rows, kTileCols),
                                           kTileCols));
  // Symmetric: Psi_ij = Psi_ji when the points meet themselves and Gamma is
  // G diag(s) G^T with one factor (every kernel term is symmetric in i, j).
  const bool symmetric_gamma = gamma.dense == nullptr &&
                               (gamma.g_rows == nullptr || (gamma.g_rows == gamma.g_cols && p.g_cols_t != nullptr));
  const Index block_rows = std::min(kSymmetricMaxBlockRows,
                                    round_up((pts.n + kSymmetricBlocks - 1) / kSymmetricBlocks, kTileCols));
  p.symmetric = products && p.self && symmetric_gamma && (!p.needs_dot || p.b_t != nullptr) && !wide &&
                pts.n > block_rows && p.m_pad * std::max<Index>(p.c_pad, 1) <= kSymmetricAccElements;
  if (p.symmetric) {
    p.block_rows = block_rows;
    const std::size_t rows = static_cast<std::size_t>(p.m_pad);
    if (p.thin_rhs) {
      pp.acc_all.reset(new double[rows * static_cast<std::size_t>(p.c_pad)]);
      p.acc_all = pp.acc_all.get();
    }
    pp.value_all.reset(new double[rows]);
    pp.lap_all.reset(new double[rows]);
    p.value_all = pp.value_all.get();
    p.lap_all = pp.lap_all.get();
  }
}

// One worker's PassScratch and the storage behind it, sized for the plan's
// tasks (pass_scratch_sizes) and zeroed once; made by each worker of the
// pass's team for itself (parallel.hpp's slots).
template <class T>
class WorkerScratch {
 public:
  explicit WorkerScratch(const PassPlan<T>& p) {
    const PassScratchSizes n = pass_scratch_sizes(p);
    const Index values = n.tile + n.dot_panel + n.gamma_panel + n.m_panel + n.col_acc +
                         n.col_value + n.col_lap;
    values_.assign(static_cast<std::size_t>(values), T(0));
    doubles_.assign(static_cast<std::size_t>(n.acc + n.value_sum + n.lap_sum), 0.0);
    T* v = values_.data();
    double* d = doubles_.data();
    auto take = [](auto*& at, Index count) {
      auto* start = count > 0 ? at : nullptr;
      at += count;
      return start;
    };
    view_.tile = take(v, n.tile);
    view_.dot_panel = take(v, n.dot_panel);
    view_.gamma_panel = take(v, n.gamma_panel);
    view_.m_panel = take(v, n.m_panel);
    view_.col_acc = take(v, n.col_acc);
    view_.col_value = take(v, n.col_value);
    view_.col_lap = take(v, n.col_lap);
    view_.acc = take(d, n.acc);
    view_.value_sum = take(d, n.value_sum);
    view_.lap_sum = take(d, n.lap_sum);
  }
  WorkerScratch(WorkerScratch&&) = default;  // the buffers move, the pointers stay valid

  PassScratch<T>& view() { return view_; }

 private:
  std::vector<T> values_;
  std::vector<double> doubles_;
  PassScratch<T> view_;
};

// A symmetric pass: the diagonal blocks (each first zeroes its block's
// accumulators, so no serial memset precedes the region), then the off-diagonal pairs in the
// rounds of a round-robin schedule (circle method), in which no block appears
// twice, so each task writes its two blocks alone and every row receives its
// parts in the same order for any number of threads. Then the rows are
// written out.
template <class T>
void run_symmetric(const PassPlan<T>& p, const RunConfig& cfg) {
  const TileKernels<T>& kernels = tile_kernels<T>();
  const Index blocks = (p.n + p.block_rows - 1) / p.block_rows;
  // round 0: the diagonal blocks; rounds 1 .. even - 1: the circle method's
  // pairings. With pair products the diagonal blocks come last instead: each
  // is then the last task of its rows, whose Laplacian sums are complete, and
  // adds diag(lap) R_I to its rows before R_I^T times them (no serial
  // R^T diag(lap) R after the region); the sums are zeroed here.
  const bool diagonal_last = p.block_products != nullptr;
  if (diagonal_last) {
    std::fill(p.value_all, p.value_all + p.m_pad, 0.0);
    std::fill(p.lap_all, p.lap_all + p.m_pad, 0.0);
  }
  const Index even = blocks + (blocks & 1);  // a dummy block pads an odd count
  std::vector<std::vector<std::pair<Index, Index>>> rounds(static_cast<std::size_t>(even));
  const std::size_t diagonal_round = diagonal_last ? static_cast<std::size_t>(even - 1) : 0;
  const std::size_t first_pairing = diagonal_last ? 0 : 1;
  for (Index b = 0; b < blocks; ++b) rounds[diagonal_round].emplace_back(b, b);
  for (Index round = 0; round + 1 < even; ++round) {
    auto& pairs = rounds[static_cast<std::size_t>(round) + first_pairing];
    auto add = [&](Index a, Index b) {
      if (a < blocks && b < blocks) pairs.emplace_back(std::min(a, b), std::max(a, b));
    };
    add(even - 1, round);
    for (Index k = 1; k < even / 2; ++k)
      add((round + k) % (even - 1), (round - k + even - 1) % (even - 1));
  }
  parallel_rounds(
      even, [&](Index r) { return static_cast<Index>(rounds[static_cast<std::size_t>(r)].size()); },
      cfg, [&p](int) { return WorkerScratch<T>(p); },
      [&](Index r, Index t, WorkerScratch<T>& scratch) {
        const auto& pr = rounds[static_cast<std::size_t>(r)][static_cast<std::size_t>(t)];
        kernels.pair_task(p, pr.first, pr.second, scratch.view());
      });
  for (Index i = 0; i < p.n; ++i) {
    if (p.y != nullptr && p.c > 0) {
      T* yr = p.y + i * p.c;
      const double* acc = p.acc_all + i * p.c_pad;
      for (Index c = 0; c < p.c; ++c) yr[c] = T(acc[c]);
      if (p.mode == Mode::gradient && p.rhs_rows != nullptr && p.lap_all[i] != 0.0) {
        // Laplacian diagonal: diag(2 (Gamma o b) 1) times the rows' own right-hand side
        const T d = T(p.lap_all[i]);
        const T* rr = p.rhs_rows + i * p.c;
        for (Index c = 0; c < p.c; ++c) yr[c] += d * rr[c];
      }
    }
    if (p.value_sums != nullptr) p.value_sums[i] = T(p.value_all[i]);
  }
}

template <class T>
void run(const PreparedPass<T>& pp, const RunConfig& cfg) {
  const PassPlan<T>& p = pp.plan;
  const Index tasks = (p.n + p.task_rows - 1) / p.task_rows;
  RunConfig run_cfg = cfg;
  if (p.n * p.m < kSerialEntries) run_cfg.n_threads = 1;
  if (p.symmetric) {
    run_symmetric(p, run_cfg);
    return;
  }
  const TileKernels<T>& kernels = tile_kernels<T>();
  parallel_for(
      tasks, run_cfg, [&p](int) { return WorkerScratch<T>(p); },
      [&](Index t, WorkerScratch<T>& scratch) { kernels.pass_task(p, t, scratch.view()); });
}

template <class T>
bool all_positive_finite(const T* v, Index n) {
  for (Index i = 0; i < n; ++i)
    if (!(v[i] > 0) || !std::isfinite(v[i])) return false;
  return true;
}

}  // namespace

template <class T>
void check_terms(const std::vector<Term<T>>& terms, Index n_rows, Index n_cols) {
  auto fail = [](const char* why) { throw std::invalid_argument(why); };
  for (const Term<T>& t : terms) {
    if (t.kind == TermKind::polynomial && t.degree < 1) fail("polynomial degree must be >= 1");
    if (!std::isfinite(t.weight) || !std::isfinite(t.c)) fail("kernel term weight and c must be finite");
    if (t.kind == TermKind::gaussian && !(t.sigma > 0 && std::isfinite(t.sigma)))
      fail("Gaussian sigma must be positive and finite");
    if ((t.scale_rows == nullptr) != (t.scale_cols == nullptr))
      fail("per-point kernel scales need both row_scales and col_scales");
    if (t.scale_rows == nullptr) continue;
    if (t.kind != TermKind::gaussian) fail("per-point kernel scales apply to the Gaussian term only");
    if (t.n_scale_rows != n_rows || t.n_scale_cols != n_cols)
      fail("per-point kernel scales have the wrong length");
    if (!all_positive_finite(t.scale_rows, t.n_scale_rows) || !all_positive_finite(t.scale_cols, t.n_scale_cols))
      fail("per-point kernel scales must be positive and finite");
  }
}

template <class T>
void kernel_matrix(const Blas& blas, const PointPair<T>& pts, const std::vector<Term<T>>& terms,
                   T* out, const RunConfig& cfg) {
  check_terms(terms, pts.n, pts.m);
  PreparedPass<T> pp;
  prepare(pp, blas, pts, GammaView<T>{}, terms, Mode::value, static_cast<const T*>(nullptr), 0,
          static_cast<const T*>(nullptr), /*products=*/false);
  pp.plan.matrix_out = out;
  run(pp, cfg);
}

template <class T>
void fused_product(const Blas& blas, const PointPair<T>& pts, const GammaView<T>& gamma,
                   const std::vector<Term<T>>& terms, Mode mode, const T* rhs, Index rhs_cols,
                   const T* rhs_rows, T* y, T* value_sums, const RunConfig& cfg) {
  check_terms(terms, pts.n, pts.m);
  PreparedPass<T> pp;
  prepare(pp, blas, pts, gamma, terms, mode, rhs, rhs_cols, rhs_rows, /*products=*/true);
  pp.plan.y = rhs != nullptr ? y : nullptr;
  pp.plan.value_sums = value_sums;
  run(pp, cfg);
}

namespace {

// Pair products (PassPlan::block_products) save work where a block's rows
// outnumber the right-hand side's columns: b c^2 < b^2 c.
template <class T>
bool use_pair_products(const PassPlan<T>& p) {
  return p.symmetric && p.thin_rhs && p.mode == Mode::gradient && p.rhs_rows == p.rhs &&
         p.c_pad < p.block_rows;
}

// The dense Phi (c x c) from a pass run with pair products: S + S^T for S the
// sum of the blocks' slots, in the order of the blocks.
template <class T>
void sum_block_products(const PassPlan<T>& p, T* out) {
  const Index c = p.c, cp = p.c_pad, blocks = (p.n + p.block_rows - 1) / p.block_rows;
  std::vector<double> sum(static_cast<std::size_t>(c * cp), 0.0);
  for (Index I = 0; I < blocks; ++I) {
    const double* slot = p.block_products + I * c * cp;
    for (Index e = 0; e < c * cp; ++e) sum[static_cast<std::size_t>(e)] += slot[e];
  }
  for (Index a = 0; a < c; ++a)
    for (Index b = 0; b < c; ++b)
      out[a * c + b] = T(sum[static_cast<std::size_t>(a * cp + b)] +
                         sum[static_cast<std::size_t>(b * cp + a)]);
}

// The dense Phi (d x d) by a pass run with pair products, when the plan has
// them: X^T Psi X formed block pair by block pair, no n x d rows. False (nothing
// run) when it has not.
template <class T>
bool dense_phi_by_pair_products(PreparedPass<T>& pp, Index n, T* out, const RunConfig& cfg) {
  PassPlan<T>& p = pp.plan;
  if (!use_pair_products(p)) return false;
  const Index blocks = (n + p.block_rows - 1) / p.block_rows;
  std::vector<double> slots(static_cast<std::size_t>(blocks * p.c * p.c_pad), 0.0);
  p.block_products = slots.data();
  pp.acc_all.reset();
  p.acc_all = nullptr;
  run(pp, cfg);
  sum_block_products(p, out);
  return true;
}

}  // namespace

template <class T>
void phi_product(const Blas& blas, const T* x, Index n, Index d, const T* w, Index q, const T* v,
                 Index k, const GammaView<T>& gamma, const std::vector<Term<T>>& terms, T* out,
                 T* value_sums, const RunConfig& cfg) {
  // products' outputs, every entry written before it is read (no zeroing first)
  std::unique_ptr<T[]> z(new T[static_cast<std::size_t>(n * q)]);
  matmul<T>(blas, false, n, q, d, x, w, z.get(), cfg);
  const PointPair<T> points{z.get(), n, z.get(), n, q};
  check_terms(terms, n, n);
  // A thin V of at least d/2 columns: the dense Phi by pair products, then Phi V,
  // costs less than the thin pass. Per entry of an off-diagonal block (each
  // formed once) a pair-product pass makes d multiply-adds (Psi_IJ X_J; X_I^T of
  // it adds d^2 per row of the block), the thin one 2k (Psi_IJ R_J and
  // Psi_IJ^T R_I): measured at 2,000 x 32, k = 20, float32 2.3 ms against 3.0 ms.
  if (v == nullptr || 2 * k >= d) {
    PreparedPass<T> pp;
    prepare(pp, blas, points, gamma, terms, Mode::gradient, x, d, x, /*products=*/true);
    pp.plan.value_sums = value_sums;
    if (v == nullptr) {
      if (dense_phi_by_pair_products(pp, n, out, cfg)) return;
      std::unique_ptr<T[]> gr(new T[static_cast<std::size_t>(n * d)]);
      pp.plan.y = gr.get();
      run(pp, cfg);
      matmul<T>(blas, true, d, d, n, x, gr.get(), out, cfg);
      return;
    }
    std::unique_ptr<T[]> phi(new T[static_cast<std::size_t>(d * d)]);
    if (dense_phi_by_pair_products(pp, n, phi.get(), cfg)) {
      matmul<T>(blas, false, d, k, d, phi.get(), v, out, cfg);
      return;
    }
  }
  std::unique_ptr<T[]> xv(new T[static_cast<std::size_t>(n * k)]);
  matmul<T>(blas, false, n, k, d, x, v, xv.get(), cfg);
  PreparedPass<T> pp;
  prepare(pp, blas, points, gamma, terms, Mode::gradient, xv.get(), k, xv.get(), /*products=*/true);
  PassPlan<T>& p = pp.plan;
  p.value_sums = value_sums;
  std::unique_ptr<T[]> gr(new T[static_cast<std::size_t>(n * k)]);
  p.y = gr.get();
  run(pp, cfg);
  matmul<T>(blas, true, d, k, n, x, gr.get(), out, cfg);
}

#define IKDR_INSTANTIATE(T)                                                                     \
  template void check_terms<T>(const std::vector<Term<T>>&, Index, Index);                      \
  template void kernel_matrix<T>(const Blas&, const PointPair<T>&, const std::vector<Term<T>>&, \
                                 T*, const RunConfig&);                                         \
  template void fused_product<T>(const Blas&, const PointPair<T>&, const GammaView<T>&,         \
                                 const std::vector<Term<T>>&, Mode, const T*, Index, const T*,  \
                                 T*, T*, const RunConfig&);                                 \
  template void phi_product<T>(const Blas&, const T*, Index, Index, const T*, Index, const T*,  \
                               Index, const GammaView<T>&, const std::vector<Term<T>>&, T*, T*, \
                               const RunConfig&);                                            \
  template GammaTable<T> gamma_table<T>(const GammaView<T>&, Index, Index);
IKDR_INSTANTIATE(double)
IKDR_INSTANTIATE(float)

}  // namespace ikdr
