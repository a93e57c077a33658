// KSVD kernel blocks (ksvd_blocks.hpp): row tasks of the SNE kernel on the
// call's threads, and the low-rank-plus-sparse assembly.
#include "ikdr/ksvd_blocks.hpp"

#include <algorithm>
#include <vector>

#include "ikdr/parallel.hpp"
#include "ikdr/sne_kernels.hpp"

namespace ikdr {
namespace {

// Rows per SNE task: a panel tall enough for an efficient GEMM (52 rows at
// m = 5,000; measured 1.3x faster than 13 rows, no gain beyond) whose distance
// rows (2 MB) are swept three times while mostly in cache.
Index sne_task_rows(Index m) { return std::max<Index>(4, std::min<Index>(64, (Index(1) << 18) / std::max<Index>(m, 1))); }

template <class T>
void sne_pass(const Blas& blas, const PointPair<T>& pts, double sigma, const T* shift,
              const T* scale, T* shift_out, T* sums_out, T* out, const RunConfig& cfg) {
  const T u = T(0.5 / (sigma * sigma));
  const Index rows = sne_task_rows(pts.m);
  const Index tasks = (pts.n + rows - 1) / rows;
  RunConfig run_cfg = cfg;
  if (pts.n * pts.m < (Index(1) << 16)) run_cfg.n_threads = 1;
  std::vector<T> sq_b(static_cast<std::size_t>(pts.m));
  for (Index j = 0; j < pts.m; ++j) {
    T s = 0;
    for (Index c = 0; c < pts.k; ++c) s += pts.b[j * pts.k + c] * pts.b[j * pts.k + c];
    sq_b[static_cast<std::size_t>(j)] = s;
  }
  const SneKernels<T>& kernels = sne_kernels<T>();
  // each worker's distance rows when nothing is written out: a task's rows x m
  const std::size_t work_size = out == nullptr ? static_cast<std::size_t>(rows * pts.m) : 0;
  parallel_for(
      tasks, run_cfg, [work_size](int) { return std::vector<T>(work_size); },
      [&](Index t, std::vector<T>& work) {
        const Index r0 = t * rows, r1 = std::min(pts.n, r0 + rows);
        kernels.rows(blas, pts, sq_b.data(), u, r0, r1, shift, scale, shift_out, sums_out, out,
                     work.data());
      });
}

}  // namespace

template <class T>
void gaussian_row_normalisers(const Blas& blas, const PointPair<T>& pts, double sigma, T* shift,
                              T* sums, const RunConfig& cfg) {
  sne_pass<T>(blas, pts, sigma, nullptr, nullptr, shift, sums, nullptr, cfg);
}

template <class T>
void shifted_gaussian_matrix(const Blas& blas, const PointPair<T>& pts, double sigma,
                             const T* shift, const T* scale, T* out, const RunConfig& cfg) {
  sne_pass<T>(blas, pts, sigma, shift, scale, nullptr, nullptr, out, cfg);
}

template <class T>
void lowrank_plus_sparse(Index n, Index m, const T* dl, const T* u, const T* v,
                         const std::int64_t* indptr, const std::int64_t* indices, const T* data,
                         T* out, const RunConfig& cfg) {
  // Row tasks of ~1 MB of output each; rows are independent.
  const Index rows = std::max<Index>(1, (Index(1) << 17) / std::max<Index>(m, 1));
  const Index tasks = (n + rows - 1) / rows;
  parallel_for(tasks, cfg, [&](Index t) {
    const Index r1 = std::min(n, (t + 1) * rows);
    for (Index i = t * rows; i < r1; ++i) {
      T* o = out + i * m;
      const T a = dl[i] * u[i];
      for (Index j = 0; j < m; ++j) o[j] = a * v[j];
      for (std::int64_t p = indptr[i]; p < indptr[i + 1]; ++p) o[indices[p]] += dl[i] * data[p];
    }
  });
}

#define IKDR_INSTANTIATE(T)                                                                      \
  template void gaussian_row_normalisers<T>(const Blas&, const PointPair<T>&, double, T*, T*,   \
                                            const RunConfig&);                                   \
  template void shifted_gaussian_matrix<T>(const Blas&, const PointPair<T>&, double, const T*,   \
                                           const T*, T*, const RunConfig&);                      \
  template void lowrank_plus_sparse<T>(Index, Index, const T*, const T*, const T*,               \
                                       const std::int64_t*, const std::int64_t*, const T*, T*,    \
                                       const RunConfig&);
IKDR_INSTANTIATE(double)
IKDR_INSTANTIATE(float)

}  // namespace ikdr
