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

// The BLAS takes 32-bit sizes. Each size and leading dimension passed on is
// checked: one above 2^31 - 1 throws std::overflow_error naming it (Python
// sees OverflowError), never a silently wrapped int.
//
// Both functions are defined out of line, once (blas.cpp, baseline code): the
// per-instruction-set tile kernels call them, and an inline copy compiled for
// AVX-512 must not exist to be picked by the linker (tile_kernels.hpp).

// Row-major C (m x n) = alpha op(A) op(B) + beta C, as the column-major
// C^T = op(B)^T op(A)^T. k = 0 gives beta C (BLAS would not be called).
template <class T>
void gemm_row_major(const Blas& blas, bool trans_a, bool trans_b, Index m, Index n, Index k,
                    T alpha, const T* a, Index lda, const T* b, Index ldb, T beta, T* c,
                    Index ldc);

// The upper triangle of the row-major C (n x n) = alpha A^T A + beta C, A row-major
// (k x n, leading dimension lda): the column-major lower triangle of the same
// product, one ?syrk. k = 0 gives beta C on the triangle.
template <class T>
void syrk_upper_row_major(const Blas& blas, Index n, Index k, T alpha, const T* a, Index lda,
                          T beta, T* c, Index ldc);

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
