// The SNE rows of KernelSVD's kernel blocks (ksvd_blocks.hpp), compiled once
// per instruction set with the ISM tile kernels' SIMD helpers
// (cpp/src/tiles/sne.cpp) and chosen at run time (dispatch.cpp).
#pragma once
#include "ikdr/blas.hpp"
#include "ikdr/common.hpp"
#include "ikdr/ism_products.hpp"

namespace ikdr {

template <class T>
struct SneKernels {
  const char* isa;
  // SNE rows [r0, r1) (sq_b: squared norms of b's rows): with shift/scale
  // null, computes them over all of b (shift_out, sums_out may be null) and,
  // if out is given, writes the normalised rows; with shift/scale given,
  // writes exp(-(d2 - shift) u) / scale. work: (r1 - r0) x m scratch entries
  // when out is null (the distance rows are formed there), else unused; the
  // caller allocates it (see tile_kernels.hpp: these objects allocate nothing).
  void (*rows)(const Blas& blas, const PointPair<T>& pts, const T* sq_b, T u, Index r0, Index r1,
               const T* shift, const T* scale, T* shift_out, T* sums_out, T* out, T* work);
};

template <class T>
const SneKernels<T>& sne_kernels();

}  // namespace ikdr
