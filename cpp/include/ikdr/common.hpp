// Shared types of the ikdr core: no Python in here, so the core can be
// embedded elsewhere; the bindings adapt it.
#pragma once
#include <cstddef>
#include <exception>
#include <functional>
#include <stdexcept>

namespace ikdr {

using Index = std::ptrdiff_t;

// Fortran-convention ?gemm, as exported by scipy.linalg.cython_blas.
template <class T>
using GemmFn = void (*)(const char*, const char*, const int*, const int*, const int*, const T*,
                        const T*, const int*, const T*, const int*, const T*, T*, const int*);

// The BLAS the core calls for GEMM-shaped work. Filled once by the bindings
// from SciPy's bundled BLAS, so no second BLAS is linked.
struct Blas {
  GemmFn<double> dgemm = nullptr;
  GemmFn<float> sgemm = nullptr;
};

// Polled by the calling thread between panels; returning true aborts the
// computation with `Interrupted` (the bindings turn it into KeyboardInterrupt).
using InterruptCheck = std::function<bool()>;

struct Interrupted : std::exception {
  const char* what() const noexcept override { return "interrupted"; }
};

// Row-major C (m x n) = alpha * op(A) * op(B) + beta * C through column-major BLAS.
template <class T>
void gemm_row_major(const Blas& blas, bool trans_a, bool trans_b, Index m, Index n, Index k,
                    T alpha, const T* a, Index lda, const T* b, Index ldb, T beta, T* c,
                    Index ldc);

}  // namespace ikdr
