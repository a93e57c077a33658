// The coordinate-wise power method (Lei, Zhong and Dhillon, "Coordinate-wise
// Power Method", NeurIPS 2016) for the top eigenvectors of ISM's d x d Phi,
// as the thesis uses it (Wu 2020, section 3, Fig. 3.4).
//
// The power method changes every coordinate of its iterate at every step;
// CPM changes only the coordinates that are furthest from where a power step
// would take them, and keeps A X up to date at O(d) per changed coordinate and
// column. Block form, for the top q: with the iterate X (d x p, orthonormal)
// and Z = B X kept alongside, each step
//   X <- X V, Z <- Z V, with X^T Z = V diag(theta) V^T   (Rayleigh-Ritz: column
//                                  j is the j-th Ritz vector, theta descending)
//   Y = Z diag(theta)^{-1}        (the Rayleigh-scaled power step of every
//                                  entry: c = Bx / (x^T B x) - x in the paper)
//   Omega = the `active` rows i with the largest ||(Y - X)_i|| over the top q
//           columns                                      (greedy selection)
//   X_Omega <- Y_Omega,  Z <- Z + B[:, Omega] (Y - X)_Omega      (O(active d p))
//   X <- X L^{-T}, Z <- Z L^{-T}  (X^T X = L L^T: X orthonormal again)
// B = A - lower I with lower a lower bound of A's spectrum (eigen.hpp), so the
// largest eigenvalues of B in magnitude are the largest algebraic ones of A
// (ISM's Phi is indefinite). Z is recomputed exactly whenever the updates since
// the last refresh have touched d coordinates (the cost of one refresh), and
// before convergence is declared.
//
// The block carries one column more than asked (p = q + 1 when d allows): its
// Ritz value estimates eigenvalue q + 1 from below, so the result reports an
// estimate of the gap lambda_q - lambda_{q+1} (never below it, by interlacing), which the caller uses to detect a tie (then no
// top-q eigenspace is determined and the Python layer falls back to LAPACK).
#pragma once
#include <vector>

#include "ikdr/blas.hpp"
#include "ikdr/common.hpp"

namespace ikdr {

struct CpmOptions {
  Index active = 0;       // coordinates changed per iteration (0: ceil(d / 10), at least p)
  double max_sweeps = 300;  // stop after max_sweeps * d coordinate updates
  double tol = 1e-10;       // max_j ||A v_j - l_j v_j|| / ||A||_F of the q Ritz pairs
};

template <class T>
struct CpmResult {
  std::vector<T> values;   // q largest algebraic eigenvalues, descending
  std::vector<T> vectors;  // d x q, row-major, orthonormal columns
  int iterations = 0;      // greedy steps
  double sweeps = 0;       // coordinate updates / d
  bool converged = false;
  T residual = 0;          // as tol
  T gap = 0;               // Ritz estimate of lambda_q - lambda_{q+1} (0 when p = q)
};

// Top q eigenpairs of the symmetric d x d matrix a (row-major), warm started
// from v0 (d x q, may be null). cfg: the interrupt poll (single-threaded).
template <class T>
CpmResult<T> cpm_top_eigenpairs(const Blas& blas, const T* a, Index d, Index q, const T* v0,
                                const CpmOptions& opt, const RunConfig& cfg);

}  // namespace ikdr
