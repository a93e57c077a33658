// The BLAS the core calls for GEMM-shaped work: SciPy's bundled BLAS, whose
// Fortran-convention ?gemm the bindings fetch once from
// scipy.linalg.cython_blas, so no second BLAS is linked.
#pragma once
#include "ikdr/common.hpp"

namespace ikdr {

template <class T>
using GemmFn = void (*)(const char*, const char*, const int*, const int*, const int*, const T*,
                        const T*, const int*, const T*, const int*, const T*, T*, const int*);

template <class T>
using SyrkFn = void (*)(const char*, const char*, const int*, const int*, const T*, const T*,
                        const int*, const T*, T*, const int*);

struct Blas {
  GemmFn<double> dgemm = nullptr;
  GemmFn<float> sgemm = nullptr;
  SyrkFn<double> dsyrk = nullptr;
  SyrkFn<float> ssyrk = nullptr;
};

// Which ?gemm serves which element type: the one place the two precisions differ.
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

// Row-major C (m x n) = alpha op(A) op(B) + beta C, as the column-major
// C^T = op(B)^T op(A)^T. k = 0 gives beta C (BLAS would not be called).
template <class T>
inline void gemm_row_major(const Blas& blas, bool trans_a, bool trans_b, Index m, Index n, Index k,
                           T alpha, const T* a, Index lda, const T* b, Index ldb, T beta, T* c,
                           Index ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (Index i = 0; i < m; ++i)
      for (Index j = 0; j < n; ++j) c[i * ldc + j] = beta == T(0) ? T(0) : beta * c[i * ldc + j];
    return;
  }
  const char ta = trans_b ? 'T' : 'N', tb = trans_a ? 'T' : 'N';
  const int mm = int(n), nn = int(m), kk = int(k), la = int(ldb), lb = int(lda), lc = int(ldc);
  BlasTraits<T>::gemm(blas)(&ta, &tb, &mm, &nn, &kk, &alpha, b, &la, a, &lb, &beta, c, &lc);
}

// The upper triangle of the row-major C (n x n) = alpha A^T A + beta C, A row-major
// (k x n, leading dimension lda): the column-major lower triangle of the same
// product, one ?syrk. k = 0 gives beta C on the triangle.
template <class T>
inline void syrk_upper_row_major(const Blas& blas, Index n, Index k, T alpha, const T* a,
                                 Index lda, T beta, T* c, Index ldc) {
  if (n == 0) return;
  if (k == 0) {
    for (Index i = 0; i < n; ++i)
      for (Index j = i; j < n; ++j) c[i * ldc + j] = beta == T(0) ? T(0) : beta * c[i * ldc + j];
    return;
  }
  const char uplo = 'L', trans = 'N';
  const int nn = int(n), kk = int(k), la = int(lda), lc = int(ldc);
  BlasTraits<T>::syrk(blas)(&uplo, &trans, &nn, &kk, &alpha, a, &la, &beta, c, &lc);
}

}  // namespace ikdr

namespace ikdr {

// C (m x n) = op(A) B on the call's threads: op(A) = A (A row-major m x k) or
// A^T (A row-major k x m). The rows of C are cut into chunks fixed by the
// shapes alone, each one single-threaded BLAS call, so C does not depend on
// the thread count. The numpy-side products around a pass (X W, X^T (G X W))
// use it instead of a threaded BLAS, whose idle workers would spin against
// the pass's threads on the same cores.
template <class T>
void matmul(const Blas& blas, bool trans_a, Index m, Index n, Index k, const T* a, const T* b,
            T* c, const RunConfig& cfg);

}  // namespace ikdr
