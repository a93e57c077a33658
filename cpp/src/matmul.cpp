// Chunked GEMM on the call's threads (blas.hpp).
#include <algorithm>

#include "ikdr/blas.hpp"
#include "ikdr/parallel.hpp"

namespace ikdr {

template <class T>
void matmul(const Blas& blas, bool trans_a, Index m, Index n, Index k, const T* a, const T* b,
            T* c, const RunConfig& cfg) {
  // At most 16 chunks of whole cache lines of rows. A small product is one
  // BLAS call on the calling thread: splitting it cost 3x (1,000 x 32 times
  // 32 x 20: 16 calls of 64 rows, 147 us against 47 us for one); one of up
  // to 2^20 multiply-adds is two calls, one per thread on two cores (the
  // same product: 2 x 20 us; 32 x 1,000 times 1,000 x 32: 2 x 26 us against
  // 50 us). The chunks depend on the shapes only, so the result does not
  // depend on the threads.
  const Index work = m * n * k;
  const Index parts = work < (Index(1) << 17) || m < 16 ? 1 : work < (Index(1) << 20) ? 2 : 16;
  const Index chunk = std::max<Index>(8, ((m + parts - 1) / parts + 7) / 8 * 8);
  const Index tasks = (m + chunk - 1) / chunk;
  RunConfig run_cfg = cfg;
  if (tasks == 1) run_cfg.n_threads = 1;
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
