// Landmark (Nystrom) passes of ISM: the row-block sums of docs/maths.md
// section 5 (costs in docs/nystrom.md), fused over the rows of X so that each
// row block is read once per sweep.
//
// With Z = X W (n x q), R = X V (n x k), for every factor f of the kernel
// C_f = K_f(Z, Z_L) (n x m, the kernel against the m landmark points, or its
// negative reciprocal: the inverse multiquadric from the multiquadric), and
// Gamma either the supervised class form (codes c_i, proportions p) or a
// general factor G (n x r):
//
// first sweep, per factor (float64 sums over the rows):
//   P = C^T E              E = [Y, 1, a] (classes: a_i = p_{c_i}) or G
//   A = X_c^T C_c per class (classes x d x m)  or  X^T diag(g_j) C (d x r x m)
//   Q = C_c^T R_c per class (classes x m x k)  or  C^T diag(g_j) R (m x r x k)
// second sweep, from right-hand sides H_f prepared by the caller (they hold
// S P, S Q and the uses' weights):
//   o_i = sum_f C_f,i H_f[c_i] (classes, m x w) or sum_j g_ij (sum_f C_f,i H_f[:, j]) (general)
//   deg = o[:, 0], O = o[:, 1:] + deg R
//   phi = X^T diag(deg) X (d x d, when asked),  pv = X^T O (d x k, when V is given)
//
// Cost of a sweep over n rows (flops, GEMM convention 2 n m k):
//   first:  2 n d (q + k) + 2 n q m_f + [dense] 2 n d m_f (classes) or 2 n d m_f r (general)
//           + 2 n m_f k (classes) or 2 n m_f r k (general)
//   second: 2 n d (q + k) + 2 n q m_f + 2 n m_f w (classes) or 2 n m_f r w (general)
//           + [dense] n d^2 (?syrk) + 2 n d k
// summed over factors (m_f landmarks each). Nothing n x n, nothing d x d
// unless dense is asked; memory beyond X: O(b (d + q + k + sum m_f)) per
// block of b rows.
//
// Rows are visited in blocks of block_rows, read in place; the class form
// orders each block's rows by class (a stable counting sort of its codes):
// Z, R and the kernel rows are moved into that order; the first sweep's X_c^T
// C_c (one GEMM per class) gathers the class's rows a cache-sized stage at a
// time. Blocks go round a fixed number of lanes (at most 4, fewer when their
// float64 partial sums would be large), each summing its own blocks; the
// lanes' sums are added in lane order.
// Which lane sums which block depends on the shapes only: the sums are bitwise
// the same whatever the thread count. The degree term is ?syrk on the rows
// sqrt(|deg_i|) x_i of non-negative and of negative degrees, staged per sign
// (a cache-sized stage per call), its upper triangle only.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "ikdr/blas.hpp"
#include "ikdr/common.hpp"
#include "ikdr/ism_products.hpp"

namespace ikdr {

// How one factor's rows C (b x m) are made from the projected rows Z.
template <class T>
struct LandmarkFactor {
  std::vector<Term<T>> terms;        // C = sum of the terms between Z and the landmarks
  const T* landmarks = nullptr;      // m x q
  Index m = 0;
  bool negative_reciprocal = false;  // C = -1 / K instead of K
  bool products = false;             // the factor enters Phi: A, Q and the second sweep use it
};

// Gamma's rows for the rows of X: class codes with their proportions, or a
// general factor (its scale folded in by the caller where it matters).
template <class T>
struct LandmarkGamma {
  const std::int64_t* codes = nullptr;  // n codes in [0, n_classes)
  const double* proportions = nullptr;  // n_classes
  Index n_classes = 0;
  const T* factor = nullptr;            // n x rank (general form)
  Index rank = 0;

  bool classes() const { return codes != nullptr; }
  // Columns of P (classes + 2, or rank) and groups of A, Q, H (classes or rank).
  Index p_columns() const { return classes() ? n_classes + 2 : rank; }
  Index groups() const { return classes() ? n_classes : rank; }
};

// The rows of one call: X (n x d, row-major; a chunk of the data), W (d x q),
// V (d x k) or null, Gamma's rows for these n rows and the factors.
template <class T>
struct LandmarkRows {
  const T* x = nullptr;
  const float* x32 = nullptr;  // instead of x: float32 rows, converted block by block (T = double)
  Index n = 0, d = 0;
  const T* w = nullptr;
  Index q = 0;
  const T* v = nullptr;
  Index k = 0;
  LandmarkGamma<T> gamma;
  std::vector<LandmarkFactor<T>> factors;
  Index block_rows = 4096;
};

// The sweeps' scratch memory, kept from one call to the next by its owner (a
// landmark problem keeps one for all its passes). Made fresh by every sweep,
// it was tens of megabytes of new pages a call, which the kernel zeroes
// (100,000 x 784 float32, m = 256, 10 classes: 0.06 s of a 0.6 s first
// sweep). One call at a time uses it: a call that finds it in use makes its
// own buffers. It keeps the buffers of one precision: a call in the other
// drops them.
class SweepWorkspace {
 public:
  struct Impl;
  SweepWorkspace();
  ~SweepWorkspace();
  SweepWorkspace(const SweepWorkspace&) = delete;
  SweepWorkspace& operator=(const SweepWorkspace&) = delete;
  Impl& impl() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

// Outputs of the first sweep for one factor (float64, zeroed by the caller,
// sums added into them): P (m x p_columns), A (dense only, factors with
// products), Q (with V, factors with products); null where not asked.
struct FirstSweepOut {
  double* p = nullptr;
  double* a = nullptr;
  double* q = nullptr;
};

template <class T>
void landmark_first_sweep(const Blas& blas, const LandmarkRows<T>& rows,
                          const std::vector<FirstSweepOut>& out, const RunConfig& cfg,
                          SweepWorkspace* workspace = nullptr);

// Second sweep. h[f]: the right-hand side of factor f (null for factors
// without products), classes: n_classes x m x w; general: m x (rank w), with
// w = 1 + k (column 0: degrees, columns 1..k: the Phi V weights). phi (d x d)
// and pv (d x k) are float64 sums added into (null where not asked).
template <class T>
void landmark_second_sweep(const Blas& blas, const LandmarkRows<T>& rows,
                           const std::vector<const T*>& h, double* phi, double* pv,
                           const RunConfig& cfg, SweepWorkspace* workspace = nullptr);

}  // namespace ikdr
