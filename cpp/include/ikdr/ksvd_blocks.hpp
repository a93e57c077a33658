// Kernel blocks of the asymmetric kernel SVD (KSVD paper, Section 2): the
// row-normalised Gaussian (SNE kernel) between two point sets, and the dense
// assembly of a low-rank-plus-sparse kernel of sparse points (graphs).
#pragma once
#include <cstdint>

#include "ikdr/blas.hpp"
#include "ikdr/common.hpp"
#include "ikdr/ism_products.hpp"

namespace ikdr {

// Row normalisers of the SNE kernel without underflow. With
// d2_ij = ||a_i - b_j||^2 and u = 1 / (2 sigma^2):
//   shift_i = min_j d2_ij,   sums_i = sum_j exp(-(d2_ij - shift_i) u)      (>= 1)
// in one tiled pass: O(n m k) time, the n x m matrix is never stored.
template <class T>
void gaussian_row_normalisers(const Blas& blas, const PointPair<T>& pts, double sigma, T* shift,
                              T* sums, const RunConfig& cfg);

// out (n x m) = exp(-(d2_ij - shift_i) u) / scale_i (shift, scale from the pass
// above, possibly over a larger set of columns than b). With shift and scale
// null, both are computed over b's rows in the same pass (one pass instead of two).
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
