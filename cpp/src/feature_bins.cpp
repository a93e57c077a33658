// Per-feature histograms with weight sums (feature_bins.hpp).
#include "ikdr/feature_bins.hpp"

#include <algorithm>
#include <cmath>

#include "ikdr/parallel.hpp"

namespace ikdr {

void feature_bin_sums(const double* x, Index n, Index d, const double* lo, const double* width,
                      Index bins, const double* weights, Index r, double* counts, double* sums,
                      const RunConfig& cfg) {
  // A task owns a block of features (a cache line of each row), so it writes
  // its own cells only and reads every row once; the blocks together read x once.
  constexpr Index kFeatures = 8;
  const Index tasks = (d + kFeatures - 1) / kFeatures;
  const double top = static_cast<double>(bins - 1);
  parallel_for(tasks, cfg, [&](Index t) {
    const Index j0 = t * kFeatures, m = std::min(d, j0 + kFeatures) - j0;
    const double* __restrict low = lo + j0;
    const double* __restrict wide = width + j0;
    double* __restrict count = counts + j0 * bins;
    double* __restrict sum = sums + j0 * bins * r;
    std::fill(count, count + m * bins, 0.0);
    std::fill(sum, sum + m * bins * r, 0.0);
    Index cell[kFeatures];
    for (Index i = 0; i < n; ++i) {
      const double* __restrict row = x + i * d + j0;
      const double* __restrict w = weights + i * r;
      // the row's bins first (independent divisions), then the scattered adds:
      // the same division and truncation as numpy's ((x - lo) / width).astype(intp);
      // a quotient that is not below the last bin (or not a number) goes there
      for (Index j = 0; j < m; ++j) {
        const double at = (row[j] - low[j]) / wide[j];
        cell[j] = j * bins + (at < top ? static_cast<Index>(std::max(at, 0.0)) : bins - 1);
      }
      for (Index j = 0; j < m; ++j) {
        count[cell[j]] += 1.0;
        double* __restrict s = sum + cell[j] * r;
        for (Index k = 0; k < r; ++k) s[k] += w[k];
      }
    }
  });
}

}  // namespace ikdr
