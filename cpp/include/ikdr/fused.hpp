// Kernel matrices and fused, tiled Laplacian products.
//
// Every ISM-family computation is a product with a weight matrix
//     Psi_ij = Gamma_ij * h(z_i, z_j)
// where h is a kernel value or the kernel's derivative weight. Psi is built one
// row panel at a time from the points Z and Gamma (dense, factored or absent),
// used in a GEMM and discarded: memory is O(panel * n), never O(n^2).
#pragma once
#include <cstdint>
#include <vector>

#include "ikdr/common.hpp"

namespace ikdr {

enum class TermKind : int { linear = 0, polynomial = 1, gaussian = 2, squared = 3, multiquadric = 4 };

// One member of a conic combination of ISM kernels, in similarity form:
//   linear        k = <a, b>
//   polynomial    k = (<a, b> + c)^degree
//   gaussian      k = exp(-||a - b||^2 / (2 s_a s_b)), s = sigma (or per-point scale)
//   squared       k = -||a - b||^2
//   multiquadric  k = -sqrt(||a - b||^2 + c^2)
template <class T>
struct Term {
  TermKind kind = TermKind::linear;
  double weight = 1.0;
  double sigma = 1.0;
  double c = 0.0;
  int degree = 1;
  const T* scale_rows = nullptr;  // per-point bandwidths (relative Gaussian), or null
  const T* scale_cols = nullptr;
};

enum class Mode : int {
  value = 0,     // Psi = Gamma o K
  gradient = 1,  // Phi weights: X^T (Gamma o a) X + 2 X^T L(Gamma o b) X (see fused.cpp)
};

// Gamma = G_rows diag(s) G_cols^T (factored), a dense n x m array, or all ones.
template <class T>
struct GammaView {
  const T* dense = nullptr;
  const T* g_rows = nullptr;
  const T* g_cols = nullptr;
  const T* s = nullptr;
  Index rank = 0;
  bool is_ones() const { return dense == nullptr && g_rows == nullptr; }
};

struct RunConfig {
  int n_threads = 1;
  // Target entries of one row panel: large enough for an efficient GEMM with
  // the right-hand side, small enough that the scratch stays a few MB.
  Index panel_elements = Index(1) << 19;
  InterruptCheck check_interrupt;
};

// Points a (n x k) and b (m x k), row-major. b may equal a (then diagonal
// squared distances are exactly 0).
template <class T>
struct PointPair {
  const T* a;
  Index n;
  const T* b;
  Index m;
  Index k;
};

// K (n x m) = sum of terms evaluated between a and b (value mode).
template <class T>
void kernel_matrix(const Blas& blas, const PointPair<T>& pts, const std::vector<Term<T>>& terms,
                   T* out, const RunConfig& cfg);

// For Psi as above (mode value or gradient):
//   y (n x r_cols) = M rhs + diag(sum_b) rhs, where M = Gamma o (a - 2 b), sum_b = rowsums of 2 Gamma o b
//   row_sum_m (n) = M 1, row_sum_b (n) = sum_b  (each may be null)
// In value mode M = Gamma o K and sum_b = 0. rhs / y may be null (row sums only).
template <class T>
void fused_product(const Blas& blas, const PointPair<T>& pts, const GammaView<T>& gamma,
                   const std::vector<Term<T>>& terms, Mode mode, const T* rhs, Index rhs_cols,
                   const T* rhs_rows, T* y, T* row_sum_m, T* row_sum_b, const RunConfig& cfg);

// Row-normalised Gaussian (the SNE kernel of KSVD) without underflow. With
// d2_ij = ||a_i - b_j||^2 and u = 1 / (2 sigma^2):
//   shift_i = min_j d2_ij,   sums_i = sum_j exp(-(d2_ij - shift_i) u)      (>= 1)
// in one tiled pass: O(n m k) time, O(panel * m) memory, the n x m matrix is
// never stored. The SNE entry is then exp(-(d2_ij - shift_i) u) / sums_i.
template <class T>
void gaussian_row_normalisers(const Blas& blas, const PointPair<T>& pts, double sigma, T* shift,
                              T* sums, const RunConfig& cfg);

// out (n x m) = exp(-(d2_ij - shift_i) u) / scale_i (shift, scale from the pass above,
// possibly over a larger set of columns than b).
template <class T>
void shifted_gaussian_matrix(const Blas& blas, const PointPair<T>& pts, double sigma,
                             const T* shift, const T* scale, T* out, const RunConfig& cfg);

// Dense G = diag(dl) (u v^T + S), S sparse CSR (n x m): the kernel matrix of
// sparse points (KSVD on a graph's adjacency), written in one parallel pass.
template <class T>
void lowrank_plus_sparse(Index n, Index m, const T* dl, const T* u, const T* v,
                         const std::int64_t* indptr, const std::int64_t* indices, const T* data,
                         T* out, const RunConfig& cfg);

}  // namespace ikdr
