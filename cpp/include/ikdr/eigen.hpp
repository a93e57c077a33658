// Top eigenpairs of a small dense symmetric matrix (the d x d Phi of ISM).
#pragma once
#include <vector>

#include "ikdr/blas.hpp"
#include "ikdr/common.hpp"

namespace ikdr {

template <class T>
struct EigenResult {
  std::vector<T> values;   // q largest algebraic eigenvalues, descending
  std::vector<T> vectors;  // d x q, row-major, orthonormal columns
  int iterations = 0;
  bool converged = false;
  T residual = 0;  // max_i ||A v_i - l_i v_i|| / ||A||_F
};

// Block power (subspace) iteration with Rayleigh-Ritz on A + shift*I, warm
// started from v0 (d x q, may be null). Stops when every Ritz residual is
// below tol * ||A||_F. Reports non-convergence instead of guessing: the caller
// falls back to LAPACK.
template <class T>
EigenResult<T> top_eigenpairs(const Blas& blas, const T* a, Index d, Index q, const T* v0,
                              int max_iter, double tol, int oversample);

// All eigenpairs of a small symmetric matrix by cyclic Jacobi (values
// descending, vectors as columns of a row-major p x p matrix).
template <class T>
void jacobi_eigen(std::vector<T>& a, Index p, std::vector<T>& values, std::vector<T>& vectors);

}  // namespace ikdr
