// The ISM family's fused products: kernel matrices and tiled Laplacian passes.
//
// Every ISM-family computation is a product with a weight matrix
//     Psi_ij = Gamma_ij * h(z_i, z_j)
// where h is a kernel value or the kernel's derivative weight. Psi is formed
// one L1-sized tile at a time from the points Z and Gamma (dense, factored or
// absent), multiplied into the right-hand side while the tile is in cache and
// discarded: memory is O(n (k + r + c)), never O(n^2).
#pragma once
#include <cstdint>
#include <vector>

#include "ikdr/blas.hpp"
#include "ikdr/common.hpp"

namespace ikdr {

enum class TermKind : int { linear = 0, polynomial = 1, gaussian = 2, squared = 3, multiquadric = 4 };

// One member of a conic combination of ISM kernels, in similarity form:
//   linear        k = <a, b>
//   polynomial    k = (<a, b> + c)^degree
//   gaussian      k = exp(-||a - b||^2 / (2 s_a s_b)), s = sigma (or per-point scales)
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
  Index n_scale_rows = 0;         // their lengths (one per row / column point)
  Index n_scale_cols = 0;
};

// Checks a kernel's terms against the n_rows x n_cols points they join and
// throws std::invalid_argument saying what is wrong: a polynomial degree below
// 1, a weight or c that is not finite, a Gaussian sigma that is not positive
// and finite, per-point scales given on one side only, on a term other than
// the Gaussian, of the wrong length, or not positive and finite. Every pass
// (kernel_matrix, fused_product) checks its terms before it runs.
template <class T>
void check_terms(const std::vector<Term<T>>& terms, Index n_rows, Index n_cols);

// value:    Psi = Gamma o K.
// gradient: the Phi weights. For a member k = f(beta) with an inner-product
//   argument (linear, polynomial) a_ij = f'(beta) enters Phi as X^T (Gamma o a) X;
//   with a squared-distance argument (Gaussian, squared, multiquadric)
//   b_ij = f'(beta) enters as 2 X^T L(Gamma o b) X (docs/maths.md section 2). Both
//   fold into one product: G = Gamma o (a - 2 b) + diag(2 (Gamma o b) 1).
enum class Mode : int { value = 0, gradient = 1 };

// Gamma = G_rows diag(s) G_cols^T (factored), a dense n x m array, or all ones.
template <class T>
struct GammaTable;

template <class T>
struct GammaView {
  const T* dense = nullptr;
  const T* g_rows = nullptr;
  const T* g_cols = nullptr;
  const T* s = nullptr;
  Index rank = 0;
  // What a factored Gamma gives every pass of its points with themselves,
  // made once (gamma_table below) instead of before each pass; or null
  const GammaTable<T>* table = nullptr;
};

// The parts of a pass's preparation that depend on a factored Gamma only (n
// rows and m columns of points): the row factor scaled by s (n x r), the
// column factor transposed and zero padded to rows of ld (for a factor of
// at most kThinWidth columns, else empty), and, when the rows take few
// distinct values (class labels), each row's class and the table of the
// distinct rows times the column factor (classes x ld; else both empty).
// A pass of the points with themselves reads a table made once for the fit
// (GammaView::table); any other makes its own.
template <class T>
struct GammaTable {
  Index n = 0, m = 0, rank = 0;
  Index ld = 0;       // row length of g_cols_t and g_table (m padded, transposed_ld)
  Index classes = 0;  // distinct rows in the table (0: no table)
  std::vector<T> g_rows, g_cols_t, g_table;
  std::vector<std::int32_t> g_class;
};

// The table of the factored Gamma g_rows diag(s) g_cols^T between n row and m
// column points (see GammaTable).
template <class T>
GammaTable<T> gamma_table(const GammaView<T>& gamma, Index n, Index m);

// Row points a (n x k) and column points b (m x k), row-major. When b is a
// (same pointer and length) the diagonal squared distances are exactly 0.
template <class T>
struct PointPair {
  const T* a;
  Index n;
  const T* b;
  Index m;
  Index k;
};

// K (n x m) = sum of the terms between a and b.
template <class T>
void kernel_matrix(const Blas& blas, const PointPair<T>& pts, const std::vector<Term<T>>& terms,
                   T* out, const RunConfig& cfg);

// One pass over Psi (mode as above):
//   y (n x c)          = Psi rhs, plus in gradient mode diag(2 (Gamma o b) 1) rhs_rows
//   value_sums (n)     = (Gamma o K) 1, in either mode (degrees, or the rows of Tr(Gamma K))
// rhs (m x c) may be null (row sums only); rhs_rows (n x c) is the row points'
// own right-hand side, which the Laplacian diagonal multiplies (rhs itself
// when a == b). y and value_sums may be null.
template <class T>
void fused_product(const Blas& blas, const PointPair<T>& pts, const GammaView<T>& gamma,
                   const std::vector<Term<T>>& terms, Mode mode, const T* rhs, Index rhs_cols,
                   const T* rhs_rows, T* y, T* value_sums, const RunConfig& cfg);

// ISM's Phi(W) V in one call (the kernel layer's phi_product): Z = X W
// (n x q), the right-hand side R = X V (n x k), or X itself when v is null
// (k = d, the dense Phi), the gradient pass G R (fused_product above, Z with
// itself) and out = X^T (G R) (d x k). value_sums (n) are the rows of
// Tr(Gamma K_XW). The products run on the call's threads in chunks fixed by
// the shapes (matmul), so the result does not depend on the thread count.
template <class T>
void phi_product(const Blas& blas, const T* x, Index n, Index d, const T* w, Index q, const T* v,
                 Index k, const GammaView<T>& gamma, const std::vector<Term<T>>& terms, T* out,
                 T* value_sums, const RunConfig& cfg);

}  // namespace ikdr
