// The SNE rows of KernelSVD (ksvd_blocks.hpp): the row-normalised Gaussian
// between two point sets, by the SIMD helpers of simd.hpp. Compiled once per
// instruction set; its table (SneKernels) is chosen at run time by dispatch.cpp.
#include "ikdr/sne_kernels.hpp"
#include "simd.hpp"

namespace ikdr {
namespace IKDR_CAT(arch_, IKDR_ARCH_NAME) {
namespace {

// SNE rows: squared distances of rows [r0, r1) to all of b (one GEMM), then
// per row three sweeps while the row is in cache: the distances and their
// minimum (the log-sum-exp shift), exp and the row sum, the normalisation.
template <class T>
void sne_rows(const Blas& blas, const PointPair<T>& pts, const T* sq_b, T u, Index r0, Index r1,
              const T* shift,
              const T* scale, T* shift_out, T* sums_out, T* out, T* work) {
  using vec = typename Simd<T>::vec;
  constexpr Index W = Simd<T>::width;
  const Index rows = r1 - r0, m = pts.m, k = pts.k;
  const Index m_vec = m / W * W;  // columns in whole vectors; the tail is done one by one
  // the distance rows live in the output when there is one, else in work
  T* const D = out != nullptr ? out + r0 * m : work;
  gemm_row_major<T>(blas, false, true, rows, m, k, T(1), pts.a + r0 * k, k, pts.b, k, T(0), D, m);
  const bool self = pts.a == pts.b && pts.n == pts.m;
  const vec zero = {};
  for (Index i = 0; i < rows; ++i) {
    const Index ig = r0 + i;
    T* d = D + i * m;
    T sa = 0;
    for (Index c = 0; c < k; ++c) sa += pts.a[ig * k + c] * pts.a[ig * k + c];
    // sweep 1: d = max(|a|^2 + |b|^2 - 2 <a, b>, 0) and its minimum
    vec vmin = zero + std::numeric_limits<T>::infinity();
    for (Index j = 0; j < m_vec; j += W) {
      const vec v = max_of(sa + load(sq_b + j) - T(2) * load(d + j), zero);
      store(d + j, v);
      vmin = min_of(v, vmin);
    }
    T lo = std::numeric_limits<T>::infinity();
    for (Index l = 0; l < W; ++l) lo = std::min(lo, T(vmin[l]));
    for (Index j = m_vec; j < m; ++j) {
      d[j] = max_of(sa + sq_b[j] - T(2) * d[j], T(0));
      lo = std::min(lo, d[j]);
    }
    if (self) {
      d[ig] = T(0);
      lo = T(0);
    }
    if (shift != nullptr) lo = shift[ig];
    if (m == 0) lo = T(0);
    // sweep 2: exp(-(d - lo) u) and the row sum
    vec acc = zero;
    for (Index j = 0; j < m_vec; j += W) {
      const vec e = exp_kernel((lo - load(d + j)) * u);
      store(d + j, e);
      acc += e;
    }
    double total = 0;
    for (Index l = 0; l < W; ++l) total += acc[l];
    for (Index j = m_vec; j < m; ++j) {
      d[j] = exp_kernel((lo - d[j]) * u);
      total += d[j];
    }
    const T sum = T(total);
    if (shift_out != nullptr) shift_out[ig] = lo;
    if (sums_out != nullptr) sums_out[ig] = sum;
    // sweep 3: the normalisation
    if (out != nullptr) {
      const T inv = T(1) / (scale != nullptr ? scale[ig] : sum);
      for (Index j = 0; j < m_vec; j += W) store(d + j, inv * load(d + j));
      for (Index j = m_vec; j < m; ++j) d[j] *= inv;
    }
  }
}

template <class T>
SneKernels<T> make_sne_kernels() {
  SneKernels<T> k;
  k.isa = IKDR_STR(IKDR_ARCH_NAME);
  k.rows = &sne_rows<T>;
  return k;
}

}  // namespace

IKDR_DEFINE_TABLE(SneKernels, sne_kernels, make_sne_kernels)

}  // namespace IKDR_CAT(arch_, IKDR_ARCH_NAME)
}  // namespace ikdr
