// Chunked GEMM on the call's threads (blas.hpp).
#include <algorithm>

#include "ikdr/blas.hpp"
#include "ikdr/parallel.hpp"

namespace ikdr {

template <class T>
void matmul(const Blas& blas, bool trans_a, Index m, Index n, Index k, const T* a, const T* b,
            T* c, const RunConfig& cfg) {
  // at most 16 chunks of whole cache lines of rows; small products on one thread
  const Index chunk = std::max<Index>(8, ((m + 15) / 16 + 7) / 8 * 8);
  const Index tasks = (m + chunk - 1) / chunk;
  RunConfig run_cfg = cfg;
  if (m * n * k < (Index(1) << 20)) run_cfg.n_threads = 1;
  parallel_for(tasks, run_cfg, [&](Index t, int) {
    const Index r0 = t * chunk, rows = std::min(chunk, m - r0);
    if (trans_a)
      gemm_row_major<T>(blas, true, false, rows, n, k, T(1), a + r0, m, b, n, T(0), c + r0 * n, n);
    else
      gemm_row_major<T>(blas, false, false, rows, n, k, T(1), a + r0 * k, k, b, n, T(0), c + r0 * n, n);
  });
}

template void matmul<double>(const Blas&, bool, Index, Index, Index, const double*, const double*,
                             double*, const RunConfig&);
template void matmul<float>(const Blas&, bool, Index, Index, Index, const float*, const float*,
                            float*, const RunConfig&);

}  // namespace ikdr
