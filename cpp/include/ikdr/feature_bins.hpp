// Per-feature histograms of a matrix's rows: for every feature j and bin b,
// the number of rows whose value of feature j falls in bin b, and the sum of
// those rows' weight vectors (a row of a factor of Gamma). The one-dimensional
// Gaussian kernels of the marginal dependence (ikdr.solver.marginal) are
// evaluated on these bins, so nothing n x n, nor n x d, is formed.
#pragma once
#include "ikdr/common.hpp"

namespace ikdr {

// x: n x d (row-major), weights: n x r (row-major), lo and width: d entries
// (width > 0). Row i's bin for feature j is floor((x_ij - lo_j) / width_j),
// at most bins - 1 (and 0 for a value below lo_j, which a caller's lo never
// leaves). Writes counts (d x bins) and sums (d x bins x r), both overwritten;
// each cell's sum adds its rows' weights in row order (bitwise the same for
// any thread count).
void feature_bin_sums(const double* x, Index n, Index d, const double* lo, const double* width,
                      Index bins, const double* weights, Index r, double* counts, double* sums,
                      const RunConfig& cfg);

}  // namespace ikdr
