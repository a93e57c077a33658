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

// The pieces the iterative eigen-solvers share (eigen.cpp, cpm.cpp).
//
// A fixed pseudo-random sequence (the same start on every run and machine).
struct Lcg {
  unsigned long long state = 0x9E3779B97F4A7C15ull;
  template <class T>
  T uniform() {  // in [-0.5, 0.5)
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return T(double(state >> 11) / double(1ull << 53) - 0.5);
  }
};

// A d x p start block: v0's q columns (d x q, row-major; may be null) and
// pseudo-random columns after them, orthonormalised.
template <class T>
std::vector<T> start_block(Index d, Index p, const T* v0, Index q, Lcg& rng);

// Orthonormalises the columns of v (d x p, row-major) by modified
// Gram-Schmidt applied twice; a column in the span of the previous ones is
// replaced by a coordinate vector, so the block never loses rank.
template <class T>
void orthonormalise(std::vector<T>& v, Index d, Index p);

// A lower bound of A's spectrum, max(Gershgorin, -1.1 x a 30-step power
// estimate of the spectral radius), and ||A||_F (fro).
template <class T>
T spectrum_lower_bound(const Blas& blas, const T* a, Index d, Lcg& rng, T& fro);

// max_{j < q} ||av_j - vals_j v_j|| / fro over the first q columns of the
// d x p blocks av (= A v) and v (row-major): the relative Ritz residual.
template <class T>
T ritz_residual(const std::vector<T>& av, const std::vector<T>& v, const std::vector<T>& vals,
                Index d, Index p, Index q, T fro);

// All eigenpairs of a small symmetric matrix by cyclic Jacobi (values
// descending, vectors as columns of a row-major p x p matrix).
template <class T>
void jacobi_eigen(std::vector<T>& a, Index p, std::vector<T>& values, std::vector<T>& vectors);

}  // namespace ikdr
