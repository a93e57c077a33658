// The two BLAS calls of the core (blas.hpp), with their sizes checked, and the
// chunked GEMM on the call's threads.
#include "ikdr/blas.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

#include "ikdr/parallel.hpp"

namespace ikdr {
namespace {

// Which ?gemm / ?syrk serves which element type: the one place the two precisions differ.
template <class T>
struct BlasTraits;
template <>
struct BlasTraits<double> {
  static GemmFn<double> gemm(const Blas& b) { return b.dgemm; }
  static SyrkFn<double> syrk(const Blas& b) { return b.dsyrk; }
};
template <>
struct BlasTraits<float> {
  static GemmFn<float> gemm(const Blas& b) { return b.sgemm; }
  static SyrkFn<float> syrk(const Blas& b) { return b.ssyrk; }
};

// A size as the BLAS's 32-bit int, or std::overflow_error saying which.
int blas_int(Index value, const char* what) {
  if (value > Index(std::numeric_limits<int>::max()))
    throw std::overflow_error(std::string("a BLAS call would need ") + what + " = " +
                              std::to_string(value) +
                              ", above the 32-bit limit of the BLAS (2^31 - 1 = 2147483647); "
                              "use fewer rows or columns per call");
  return static_cast<int>(value);
}

}  // namespace

template <class T>
void gemm_row_major(const Blas& blas, bool trans_a, bool trans_b, Index m, Index n, Index k,
                    T alpha, const T* a, Index lda, const T* b, Index ldb, T beta, T* c,
                    Index ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (Index i = 0; i < m; ++i)
      for (Index j = 0; j < n; ++j) c[i * ldc + j] = beta == T(0) ? T(0) : beta * c[i * ldc + j];
    return;
  }
  const char ta = trans_b ? 'T' : 'N', tb = trans_a ? 'T' : 'N';
  const int mm = blas_int(n, "a column count"), nn = blas_int(m, "a row count"),
            kk = blas_int(k, "an inner dimension"), la = blas_int(ldb, "a leading dimension"),
            lb = blas_int(lda, "a leading dimension"), lc = blas_int(ldc, "a leading dimension");
  BlasTraits<T>::gemm(blas)(&ta, &tb, &mm, &nn, &kk, &alpha, b, &la, a, &lb, &beta, c, &lc);
}

template <class T>
void syrk_upper_row_major(const Blas& blas, Index n, Index k, T alpha, const T* a, Index lda,
                          T beta, T* c, Index ldc) {
  if (n == 0) return;
  if (k == 0) {
    for (Index i = 0; i < n; ++i)
      for (Index j = i; j < n; ++j) c[i * ldc + j] = beta == T(0) ? T(0) : beta * c[i * ldc + j];
    return;
  }
  const char uplo = 'L', trans = 'N';
  const int nn = blas_int(n, "an order"), kk = blas_int(k, "an inner dimension"),
            la = blas_int(lda, "a leading dimension"), lc = blas_int(ldc, "a leading dimension");
  BlasTraits<T>::syrk(blas)(&uplo, &trans, &nn, &kk, &alpha, a, &la, &beta, c, &lc);
}

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
  parallel_for(tasks, run_cfg, [&](Index t) {
    const Index r0 = t * chunk, rows = std::min(chunk, m - r0);
    if (trans_a)
      gemm_row_major<T>(blas, true, false, rows, n, k, T(1), a + r0, m, b, n, T(0), c + r0 * n, n);
    else
      gemm_row_major<T>(blas, false, false, rows, n, k, T(1), a + r0 * k, k, b, n, T(0), c + r0 * n, n);
  });
}

#define IKDR_INSTANTIATE(T)                                                                      \
  template void gemm_row_major<T>(const Blas&, bool, bool, Index, Index, Index, T, const T*,     \
                                  Index, const T*, Index, T, T*, Index);                          \
  template void syrk_upper_row_major<T>(const Blas&, Index, Index, T, const T*, Index, T, T*,    \
                                        Index);                                                   \
  template void matmul<T>(const Blas&, bool, Index, Index, Index, const T*, const T*, T*,        \
                          const RunConfig&);
IKDR_INSTANTIATE(double)
IKDR_INSTANTIATE(float)

}  // namespace ikdr
