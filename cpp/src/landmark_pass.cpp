// The landmark passes (landmark_pass.hpp): row blocks in rounds over a fixed
// number of lanes, each lane's sums its own, the lanes' sums added in order.
#include "ikdr/landmark_pass.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <mutex>
#include <type_traits>
#include <stdexcept>
#include <string>
#include <vector>

#include "ikdr/parallel.hpp"
#include "ikdr/tile_kernels.hpp"

namespace ikdr {
namespace {

// Blocks are processed in rounds of at most kMaxLanes, block i of a round by
// lane i, which adds into its own float64 partial sums; the lanes' sums are
// added in lane order at the end. Which lane sums which block depends on the
// shapes only, so the result does not depend on the thread count, and a round
// is one barrier (the per-block tasks of a first version, 5 barriers a block,
// scaled 1.2x on two busy cores against the BLAS's 1.9x).
constexpr Index kMaxLanes = 4;
// The lanes' partial sums together stay below this many bytes (fewer lanes
// for wide problems: 10 classes x 4,096 x 256 doubles is 84 MB a lane).
constexpr Index kLaneBytes = Index(1) << 28;
// The wide products of a lane (A: classes x d x m; the d x d degree term) are
// summed by the GEMMs themselves (beta = 1) in the compute precision over this
// many of its blocks, then added to its float64 sums: a conversion of 10 x 784
// x 256 products per block of 2,048 rows is memory-bound (measured 10-15% of
// the first sweep at 20,000 x 784); every eighth block it is not.
constexpr Index kFlushBlocks = 8;
// Rows copied from a block before a BLAS call reads them (the class products'
// gathered rows, the degree term's scaled rows) go a stage of about this many
// bytes at a time: a stage stays in L2 from its writing to the BLAS's packing
// (100,000 x 784 float32, m = 256: the degree term's sweep 0.82 s with the
// block's rows scaled at once, 0.745 s in stages of 256 KB to 1 MB).
constexpr Index kStageBytes = Index(1) << 19;

template <class T>
Index stage_rows(Index d) {
  return std::max<Index>(64, kStageBytes / (Index(sizeof(T)) * d));
}

Index n_chunks(Index n, Index chunk) { return (n + chunk - 1) / chunk; }

template <class T>
T* grow(std::vector<T>& v, Index size) {
  if (static_cast<Index>(v.size()) < size) v.resize(static_cast<std::size_t>(size));
  return v.data();
}

template <class T>
void add_into(double* acc, const T* v, Index n) {
  for (Index i = 0; i < n; ++i) acc[i] += static_cast<double>(v[i]);
}

// What a worker thread needs for the block it works on (reused from block to
// block: per worker, not per lane, so that two threads touch two sets).
template <class T>
struct Work {
  const T* xin = nullptr;             // b x d, the block's rows in their order
  const T* g = nullptr;               // general form: the factor's b x rank rows
  std::vector<Index> offsets;         // classes: rows of class c are [offsets[c], offsets[c+1])
  std::vector<Index> perm;            // classes: row perm[i] of the block is the i-th in class order
  std::vector<Index> place;           // classes: row j of the block is the place[j]-th in class order
  std::vector<T> converted, z, r, zr, o, xs, tmp, stacked;
  std::vector<std::vector<T>> c;      // per factor, b x m_f (empty when not needed)
  std::vector<double> sums;
};

// One lane: its partial sums.
template <class T>
struct Lane {
  std::vector<double> acc;            // the sums before the wide products
  std::vector<T> wide;                // the wide products since the last flush
  std::vector<double> wide_acc;       // their earlier flushes (valid once `flushed`)
  bool flushed = false;
  Index pending = 0;                  // blocks in `wide`
  Index wide_size = 0;
};

// The memory of one sweep: its lanes, one Work per worker, the lanes' total.
template <class T>
struct Buffers {
  std::vector<Lane<T>> lanes;
  std::vector<Work<T>> works;
  std::vector<double> total;
};

}  // namespace

struct SweepWorkspace::Impl {
  std::mutex busy;
  Buffers<float> f32;
  Buffers<double> f64;
};

SweepWorkspace::SweepWorkspace() : impl_(new Impl) {}
SweepWorkspace::~SweepWorkspace() = default;

namespace {

// The buffers a sweep runs on: the workspace's, when one is given and no other
// call holds it (its buffers of the other precision are dropped), else the
// sweep's own.
template <class T>
class Scratch {
 public:
  explicit Scratch(SweepWorkspace* workspace) {
    if (workspace == nullptr) return;
    SweepWorkspace::Impl& impl = workspace->impl();
    lock_ = std::unique_lock<std::mutex>(impl.busy, std::try_to_lock);
    if (!lock_.owns_lock()) return;
    if constexpr (std::is_same_v<T, float>) {
      impl.f64 = Buffers<double>();
      buffers_ = &impl.f32;
    } else {
      impl.f32 = Buffers<float>();
      buffers_ = &impl.f64;
    }
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  Buffers<T>& buffers() { return *buffers_; }

 private:
  std::unique_lock<std::mutex> lock_;
  Buffers<T> own_;
  Buffers<T>* buffers_ = &own_;
};

// The lane's wide products: beta for the next block's GEMMs (0: the buffer
// starts over), after which `done` counts the block and flushes when due.
template <class T>
T wide_beta(const Lane<T>& lane) { return lane.pending == 0 ? T(0) : T(1); }

// Mid-sweep only (a lane with more than kFlushBlocks blocks): the last
// products stay in `wide` until the lanes are summed.
template <class T>
void flush_wide(Lane<T>& lane) {
  if (!lane.flushed) {
    lane.wide_acc.assign(static_cast<std::size_t>(lane.wide_size), 0.0);
    lane.flushed = true;
  }
  add_into(lane.wide_acc.data(), lane.wide.data(), lane.wide_size);
  lane.pending = 0;
}

template <class T>
void wide_done(Lane<T>& lane) {
  if (++lane.pending == kFlushBlocks) flush_wide(lane);
}

// The matrices a sweep projects its rows by, [W V] (d x (q + k)), transposed
// and zero padded for the core's thin products (TileKernels::thin_product),
// when they are thin enough (at most kThinCols columns); else the BLAS.
template <class T>
struct Projection {
  bool thin = false;
  Index cols = 0, ld = 0;
  std::vector<T> mt;  // cols x ld
};

template <class T>
Projection<T> projection(const LandmarkRows<T>& rows, bool with_r) {
  Projection<T> p;
  p.cols = rows.q + (with_r ? rows.k : 0);
  p.thin = p.cols <= kThinCols;
  if (!p.thin) return p;
  p.ld = round_up(rows.d, tile_kernels<T>().simd_width);
  p.mt.assign(static_cast<std::size_t>(p.cols * p.ld), T(0));
  for (Index e = 0; e < rows.d; ++e) {
    for (Index c = 0; c < rows.q; ++c) p.mt[c * p.ld + e] = rows.w[e * rows.q + c];
    if (with_r)
      for (Index c = 0; c < rows.k; ++c) p.mt[(rows.q + c) * p.ld + e] = rows.v[e * rows.k + c];
  }
  return p;
}

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

// The block [start, start + b) of the rows, read in place (converted when
// float32 rows feed a float64 pass), with its Z, R and the kernel rows of the
// factors `need` selects, on the calling thread. The class form orders the
// block by class (a stable counting sort of its codes, checked here: `perm`,
// `offsets`): Z, R and C in class order, X read in place (its rows in class
// order are `perm`).
template <class T, class Need>
void prepare_block(const Blas& blas, const LandmarkRows<T>& rows, const Projection<T>& proj,
                   Index start, Index b, bool with_r, Need&& need, Work<T>& work) {
  const Index d = rows.d, q = rows.q, k = rows.k;
  const auto& gm = rows.gamma;
  if (rows.x32 != nullptr) {
    T* dst = grow(work.converted, b * d);
    const float* src = rows.x32 + start * d;
    for (Index e = 0; e < b * d; ++e) dst[e] = static_cast<T>(src[e]);
    work.xin = dst;
  } else {
    work.xin = rows.x + start * d;
  }
  work.perm.clear();
  // Z (and R) of rows `src` (b x d, in the order Z is wanted), or of the rows in
  // place, then moved into class order
  auto project = [&](const T* src, const T* m, Index cols, std::vector<T>& out) {
    T* o = grow(out, b * cols);
    if (src != nullptr) {
      gemm_row_major<T>(blas, false, false, b, cols, d, T(1), src, d, m, cols, T(0), o, cols);
      return;
    }
    T* t = grow(work.tmp, b * cols);
    gemm_row_major<T>(blas, false, false, b, cols, d, T(1), work.xin, d, m, cols, T(0), t, cols);
    for (Index i = 0; i < b; ++i)
      std::memcpy(o + i * cols, t + work.perm[i] * cols, sizeof(T) * static_cast<std::size_t>(cols));
  };
  const T* ordered = work.xin;
  if (gm.classes()) {
    const Index nc = gm.n_classes;
    const std::int64_t* codes = gm.codes + start;
    work.offsets.assign(static_cast<std::size_t>(nc + 1), 0);
    for (Index i = 0; i < b; ++i) {
      if (codes[i] < 0 || codes[i] >= nc)
        throw std::invalid_argument("class code " + std::to_string(codes[i]) + " of row " +
                                    std::to_string(start + i) + " is outside [0, " +
                                    std::to_string(nc) + ")");
      ++work.offsets[static_cast<std::size_t>(codes[i] + 1)];
    }
    for (Index c = 0; c < nc; ++c) work.offsets[c + 1] += work.offsets[c];
    Index* perm = grow(work.perm, b);
    work.perm.resize(static_cast<std::size_t>(b));
    std::vector<Index> next(work.offsets.begin(), work.offsets.end() - 1);
    Index* place = grow(work.place, b);
    for (Index i = 0; i < b; ++i) {
      place[i] = next[codes[i]]++;
      perm[place[i]] = i;
    }
    ordered = nullptr;  // Z and R are moved into class order instead
  } else {
    work.g = gm.factor + start * gm.rank;
  }
  if (proj.thin) {
    // Z and R in one read of the rows, in their order (read in class order,
    // rows of a block apart defeat the hardware's prefetch: measured 3x
    // slower), then split into class order
    const Index cols = proj.cols;
    T* zr = grow(work.zr, b * cols);
    const bool moved = ordered == nullptr && !work.perm.empty();
    tile_kernels<T>().thin_product(ordered != nullptr ? ordered : work.xin, d, b, d, proj.mt.data(),
                                   proj.ld, cols, zr, cols);
    T* z = grow(work.z, b * q);
    T* r = with_r ? grow(work.r, b * k) : nullptr;
    for (Index i = 0; i < b; ++i) {
      const T* src = zr + (moved ? work.perm[i] : i) * cols;
      std::memcpy(z + i * q, src, sizeof(T) * static_cast<std::size_t>(q));
      if (with_r) std::memcpy(r + i * k, src + q, sizeof(T) * static_cast<std::size_t>(k));
    }
  } else {
    project(ordered, rows.w, q, work.z);
    if (with_r) project(ordered, rows.v, k, work.r);
  }
  const T* z = work.z.data();
  work.c.resize(rows.factors.size());
  RunConfig one;  // the kernel rows on the lane's thread (the team polls interrupts)
  for (std::size_t f = 0; f < rows.factors.size(); ++f) {
    if (!need(f)) continue;
    const auto& fac = rows.factors[f];
    T* c = grow(work.c[f], b * fac.m);
    kernel_matrix<T>(blas, PointPair<T>{z, b, fac.landmarks, fac.m, q}, fac.terms, c, one);
    if (fac.negative_reciprocal)
      for (Index e = 0; e < b * fac.m; ++e) c[e] = T(-1) / c[e];
  }
}

// Runs block(lane, work, start, rows) for every row block, in rounds of
// `lanes` blocks (block j of a round on lane j), then adds the lanes' partial
// sums (`size` doubles each) in lane order into `buf.total` (size doubles,
// zeroed first), which it returns. [wide_at, wide_at + wide_size) of the sums
// is the lane's wide products (wide_done).
template <class T, class Body>
const double* lane_sweep(const LandmarkRows<T>& rows, Index size, Buffers<T>& buf,
                         const RunConfig& cfg, Index wide_at, Index wide_size, bool zero_wide,
                         Body&& block) {
  const Index n_blocks = n_chunks(rows.n, rows.block_rows);
  Index lanes = std::min<Index>(kMaxLanes, std::max<Index>(1, n_blocks));
  lanes = std::max<Index>(1, std::min<Index>(lanes, kLaneBytes / std::max<Index>(1, size * 8)));
  if (static_cast<Index>(buf.lanes.size()) < lanes)
    buf.lanes.resize(static_cast<std::size_t>(lanes));
  for (Index t = 0; t < lanes; ++t) {
    Lane<T>& lane = buf.lanes[static_cast<std::size_t>(t)];
    lane.acc.assign(static_cast<std::size_t>(wide_at), 0.0);
    lane.wide_size = wide_size;
    lane.pending = 0;
    lane.flushed = false;
    // every block's GEMMs write what they cover (beta = 0 after a flush);
    // zero_wide: they do not cover it all (the degree term's upper triangle)
    grow(lane.wide, std::max<Index>(1, wide_size));
    if (zero_wide) std::fill(lane.wide.begin(), lane.wide.begin() + wide_size, T(0));
  }
  const int workers = team_size(lanes, cfg);
  // one Work per worker of the team, kept with the lanes from sweep to sweep
  if (static_cast<int>(buf.works.size()) < workers)
    buf.works.resize(static_cast<std::size_t>(workers));
  parallel_rounds(
      n_chunks(n_blocks, lanes), [&](Index r) { return std::min(lanes, n_blocks - r * lanes); }, cfg,
      [&](int worker) { return &buf.works.at(static_cast<std::size_t>(worker)); },
      [&](Index r, Index t, Work<T>* work) {
        const Index start = (r * lanes + t) * rows.block_rows;
        block(buf.lanes[static_cast<std::size_t>(t)], *work, start,
              std::min(rows.block_rows, rows.n - start));
      });
  buf.total.assign(static_cast<std::size_t>(size), 0.0);
  double* total = buf.total.data();
  for (Index t = 0; t < lanes; ++t)
    add_into(total, buf.lanes[static_cast<std::size_t>(t)].acc.data(), wide_at);
  // the wide products a chunk at a time, every lane's in lane order: each sum
  // is added in the same order as lane by lane, and the chunk of the totals
  // stays in cache (lane by lane, 10 x 784 x 256 products read and wrote the
  // float64 totals four times: 10-15 ms a sweep)
  constexpr Index kChunk = 2048;
  for (Index e0 = 0; e0 < wide_size; e0 += kChunk) {
    const Index len = std::min(kChunk, wide_size - e0);
    double* out = total + wide_at + e0;
    for (Index t = 0; t < lanes; ++t) {
      const Lane<T>& lane = buf.lanes[static_cast<std::size_t>(t)];
      if (lane.flushed) add_into(out, lane.wide_acc.data() + e0, len);
      if (lane.pending > 0) add_into(out, lane.wide.data() + e0, len);
    }
  }
  return total;
}

}  // namespace

template <class T>
void landmark_first_sweep(const Blas& blas, const LandmarkRows<T>& rows,
                          const std::vector<FirstSweepOut>& out, const RunConfig& cfg,
                          SweepWorkspace* workspace) {
  check_rows(rows);
  if (out.size() != rows.factors.size()) throw std::invalid_argument("one output per factor");
  const Index d = rows.d, k = rows.k;
  const auto& gm = rows.gamma;
  const Index groups = gm.groups(), pc = gm.p_columns(), nc = gm.n_classes, rank = gm.rank;
  const bool classes = gm.classes(), with_r = rows.v != nullptr;
  const std::size_t nf = rows.factors.size();
  // the partial sums of a lane: per factor P, then A and Q where asked
  struct Part { Index p, a, q; };
  std::vector<Part> at(nf);
  Index size = 0;
  for (std::size_t f = 0; f < nf; ++f) {
    const Index m = rows.factors[f].m;
    at[f].p = size;
    size += m * pc;
    at[f].q = out[f].q && with_r ? size : -1;
    size += out[f].q && with_r ? groups * m * k : 0;
  }
  const Index wide_at = size;  // the A products last: the lane's wide products
  for (std::size_t f = 0; f < nf; ++f) {
    at[f].a = out[f].a ? size : -1;
    size += out[f].a ? groups * d * rows.factors[f].m : 0;
  }
  const Projection<T> proj = projection(rows, with_r);
  const TileKernels<T>& kernels = tile_kernels<T>();
  Scratch<T> scratch(workspace);
  const double* total = lane_sweep(
      rows, size, scratch.buffers(), cfg, wide_at, size - wide_at, false,
      [&](Lane<T>& lane, Work<T>& work, Index start, Index b) {
    const T beta = wide_beta(lane);
    prepare_block(blas, rows, proj, start, b, with_r, [](std::size_t) { return true; }, work);
    if (!classes && with_r) {
      // g_j o R, b x (rank k): the right-hand side of C^T diag(g_j) R for every j at once
      T* st = grow(work.stacked, b * rank * k);
      for (Index i = 0; i < b; ++i)
        for (Index j = 0; j < rank; ++j)
          for (Index e = 0; e < k; ++e) st[(i * rank + j) * k + e] = work.g[i * rank + j] * work.r[i * k + e];
    }
    for (std::size_t f = 0; f < nf; ++f) {
      const Index m = rows.factors[f].m;
      const T* c = work.c[f].data();
      double* p = lane.acc.data() + at[f].p;
      if (classes) {
        double* s = grow(work.sums, m);
        for (Index cl = 0; cl < nc; ++cl) {
          std::fill(s, s + m, 0.0);
          const Index i0 = work.offsets[cl];
          kernels.column_sums(c + i0 * m, m, work.offsets[cl + 1] - i0, m, s);
          for (Index j = 0; j < m; ++j) {
            p[j * pc + cl] += s[j];
            p[j * pc + nc] += s[j];
            p[j * pc + nc + 1] += gm.proportions[cl] * s[j];
          }
        }
      } else {
        T* tmp = grow(work.tmp, m * pc);
        gemm_row_major<T>(blas, true, false, m, pc, b, T(1), c, m, work.g, pc, T(0), tmp, pc);
        add_into(p, tmp, m * pc);
      }
      if (at[f].a >= 0) {
        T* a = lane.wide.data() + (at[f].a - wide_at);
        if (classes) {
          // X_c^T C_c, d x m per class (classes x d x m): the class's rows
          // gathered a stage at a time, which the GEMM packs while it is in L2
          // (a whole block gathered at once was written to and read back from
          // memory: 2,016 x 784 float32 rows)
          const Index stage = std::min(b, stage_rows<T>(d));
          T* xs = grow(work.xs, stage * d);
          const Index* perm = work.perm.data();
          for (Index cl = 0; cl < nc; ++cl) {
            const Index i1 = work.offsets[cl + 1];
            // a class without rows in the block still sets its products (beta C)
            Index i0 = work.offsets[cl];
            T class_beta = beta;
            do {
              const Index len = std::min(stage, i1 - i0);
              for (Index i = 0; i < len; ++i)
                std::memcpy(xs + i * d, work.xin + perm[i0 + i] * d,
                            sizeof(T) * static_cast<std::size_t>(d));
              gemm_row_major<T>(blas, true, false, d, m, len, T(1), xs, d, c + i0 * m, m,
                                class_beta, a + cl * d * m, m);
              class_beta = T(1);
              i0 += len;
            } while (i0 < i1);
          }
        } else {
          // X^T diag(g_j) C into the (d, rank, m) layout: the rows of X scaled by g_j, one GEMM each
          T* xs = grow(work.xs, b * d);
          for (Index j = 0; j < rank; ++j) {
            for (Index i = 0; i < b; ++i) {
              const T gi = work.g[i * rank + j];
              for (Index e = 0; e < d; ++e) xs[i * d + e] = gi * work.xin[i * d + e];
            }
            gemm_row_major<T>(blas, true, false, d, m, b, T(1), xs, d, c, m, beta, a + j * m, rank * m);
          }
        }
      }
      if (at[f].q >= 0) {
        // C_c^T R_c per class (m x k each) or C^T [g_j o R] (m x rank k), as
        // their transposes (the core's thin products: C read once, in place)
        double* qs = lane.acc.data() + at[f].q;
        const Index width = groups * k;  // columns of one row of Q: classes x k, or rank x k
        const Index ld = round_up(m, kernels.simd_width);
        T* tmp = grow(work.tmp, width * ld);
        if (classes) {
          for (Index cl = 0; cl < nc; ++cl) {
            const Index i0 = work.offsets[cl], bc = work.offsets[cl + 1] - i0;
            kernels.thin_product_transposed(c + i0 * m, m, bc, m, work.r.data() + i0 * k, k, nullptr,
                                            k, tmp + cl * k * ld, ld);
          }
          // tmp: per class k x m; qs: per class m x k
          for (Index cl = 0; cl < nc; ++cl)
            for (Index j = 0; j < m; ++j)
              for (Index e = 0; e < k; ++e)
                qs[(cl * m + j) * k + e] += static_cast<double>(tmp[(cl * k + e) * ld + j]);
        } else {
          kernels.thin_product_transposed(c, m, b, m, work.stacked.data(), rank * k, nullptr,
                                          rank * k, tmp, ld);
          // tmp: (rank k) x m; qs: m x (rank k)
          for (Index j = 0; j < m; ++j)
            for (Index e = 0; e < width; ++e)
              qs[j * width + e] += static_cast<double>(tmp[e * ld + j]);
        }
      }
    }
    if (wide_at < size) wide_done(lane);
  });
  for (std::size_t f = 0; f < nf; ++f) {
    const Index m = rows.factors[f].m;
    add_into(out[f].p, total + at[f].p, m * pc);
    if (at[f].a >= 0) add_into(out[f].a, total + at[f].a, groups * d * m);
    if (at[f].q >= 0) add_into(out[f].q, total + at[f].q, groups * m * k);
  }
}

template <class T>
void landmark_second_sweep(const Blas& blas, const LandmarkRows<T>& rows,
                           const std::vector<const T*>& h, double* phi, double* pv,
                           const RunConfig& cfg, SweepWorkspace* workspace) {
  check_rows(rows);
  if (h.size() != rows.factors.size()) throw std::invalid_argument("one right-hand side per factor");
  const Index d = rows.d, k = rows.k, w = 1 + k;
  const auto& gm = rows.gamma;
  const Index nc = gm.n_classes, rank = gm.rank;
  const bool classes = gm.classes(), with_r = rows.v != nullptr;
  if (pv != nullptr && !with_r) throw std::invalid_argument("Phi V needs V");
  const std::size_t nf = rows.factors.size();
  // a lane's partial sums: X^T O (d x k), then the upper triangle of the degree term (d x d)
  const Index pv_size = pv != nullptr ? d * k : 0, size = pv_size + (phi != nullptr ? d * d : 0);
  const Projection<T> proj = projection(rows, with_r);
  const TileKernels<T>& kernels = tile_kernels<T>();
  Scratch<T> scratch(workspace);
  const double* total = lane_sweep(
      rows, size, scratch.buffers(), cfg, pv_size, size - pv_size, true,
      [&](Lane<T>& lane, Work<T>& work, Index start, Index b) {
    prepare_block(blas, rows, proj, start, b, with_r, [&](std::size_t f) { return h[f] != nullptr; },
                  work);
    T* o = grow(work.o, b * w);
    std::fill(o, o + b * w, T(0));
    for (std::size_t f = 0; f < nf; ++f) {
      if (h[f] == nullptr) continue;
      const Index m = rows.factors[f].m;
      const T* c = work.c[f].data();
      if (classes) {
        // the rows of class c times that class's H
        for (Index cl = 0; cl < nc; ++cl) {
          const Index i0 = work.offsets[cl], bc = work.offsets[cl + 1] - i0;
          gemm_row_major<T>(blas, false, false, bc, w, m, T(1), c + i0 * m, m, h[f] + cl * m * w, w,
                            T(1), o + i0 * w, w);
        }
      } else {
        const Index rw = rank * w;
        T* tmp = grow(work.tmp, b * rw);
        gemm_row_major<T>(blas, false, false, b, rw, m, T(1), c, m, h[f], rw, T(0), tmp, rw);
        for (Index i = 0; i < b; ++i)
          for (Index j = 0; j < rank; ++j) {
            const T gij = work.g[i * rank + j];
            for (Index e = 0; e < w; ++e) o[i * w + e] += gij * tmp[i * rw + j * w + e];
          }
      }
    }
    // O = o[:, 1:] + deg R (column 0 keeps the degrees)
    if (with_r)
      for (Index i = 0; i < b; ++i)
        for (Index e = 0; e < k; ++e) o[i * w + 1 + e] += o[i * w] * work.r[i * k + e];
    if (phi != nullptr) {
      // X^T diag(deg) X = Xp^T Xp - Xn^T Xn with the rows sqrt(|deg_i|) x_i of the
      // non-negative (Xp) and negative (Xn) degrees, the upper triangle only (the
      // rest of the wide buffer is never written, nor read: phi below takes the
      // upper triangle). The scaled rows are staged per sign, stage_rows at a
      // time (kStageBytes), each stage handed to ?syrk when full: it stays in L2
      // from its writing to the BLAS's packing.
      const Index stage = std::min(b, stage_rows<T>(d));
      T* xs = grow(work.xs, 2 * stage * d);
      T* staged[2] = {xs, xs + stage * d};
      Index count[2] = {0, 0};
      T beta = wide_beta(lane);
      auto flush = [&](int sign) {
        syrk_upper_row_major<T>(blas, d, count[sign], sign == 0 ? T(1) : T(-1), staged[sign], d,
                                beta, lane.wide.data(), d);
        beta = T(1);
        count[sign] = 0;
      };
      // the rows in their order (their degrees in class order)
      const Index* place = work.perm.empty() ? nullptr : work.place.data();
      for (Index i = 0; i < b; ++i) {
        const T deg = o[(place != nullptr ? place[i] : i) * w];
        const int sign = deg >= T(0) ? 0 : 1;
        T* dst = staged[sign] + count[sign] * d;
        const T scale = std::sqrt(std::abs(deg));
        const T* src = work.xin + i * d;
        for (Index e = 0; e < d; ++e) dst[e] = scale * src[e];
        if (++count[sign] == stage) flush(sign);
      }
      for (int sign = 0; sign < 2; ++sign)
        if (count[sign] > 0) flush(sign);
      wide_done(lane);
    }
    if (pv != nullptr) {
      // X^T O with X in place, read in its order (O's rows, in class order,
      // at their places), as its transpose O^T X (k x d)
      const Index ld = round_up(d, kernels.simd_width);
      T* tmp = grow(work.tmp, k * ld);
      kernels.thin_product_transposed(work.xin, d, b, d, o + 1, w,
                                      work.perm.empty() ? nullptr : work.place.data(), k, tmp, ld);
      double* acc = lane.acc.data();
      for (Index e = 0; e < d; ++e)
        for (Index c = 0; c < k; ++c) acc[e * k + c] += static_cast<double>(tmp[c * ld + e]);
    }
  });
  if (phi != nullptr) {
    const double* upper = total + pv_size;
    for (Index i = 0; i < d; ++i)
      for (Index j = 0; j < d; ++j) phi[i * d + j] += j >= i ? upper[i * d + j] : upper[j * d + i];
  }
  if (pv != nullptr) add_into(pv, total, d * k);
}

#define IKDR_INSTANTIATE_LANDMARK(T)                                                            \
  template void landmark_first_sweep<T>(const Blas&, const LandmarkRows<T>&,                    \
                                        const std::vector<FirstSweepOut>&, const RunConfig&,     \
                                        SweepWorkspace*);                                        \
  template void landmark_second_sweep<T>(const Blas&, const LandmarkRows<T>&,                   \
                                         const std::vector<const T*>&, double*, double*,         \
                                         const RunConfig&, SweepWorkspace*);
IKDR_INSTANTIATE_LANDMARK(double)
IKDR_INSTANTIATE_LANDMARK(float)

}  // namespace ikdr
