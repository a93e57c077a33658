// Element-wise operations on one row of an n x m kernel panel. They are the
// only loops that need SIMD (exp, sqrt, powers), so they are compiled once per
// instruction set (baseline, AVX2, AVX-512) and chosen at run time.
#pragma once
#include "ikdr/common.hpp"

namespace ikdr {

template <class T>
struct PanelOps {
  const char* isa;
  // d[j] = max(sq_row + sq_col[j] - 2 d[j], 0): Gram row -> squared distances.
  void (*squared_distance)(T* d, const T* sq_col, T sq_row, Index cols);
  // out[j] += coef * x[j]
  void (*add_scaled)(T* out, const T* x, T coef, Index cols);
  // out[j] += coef
  void (*add_constant)(T* out, T coef, Index cols);
  // out[j] += coef * (x[j] + c)^p, integer p >= 0
  void (*add_power)(T* out, const T* x, T coef, T c, int p, Index cols);
  // out[j] += coef * e_j^f * exp(-x[j] * e_j), e_j = u * v[j] (v null: e_j = u); f in {0, 1}
  void (*add_exp)(T* out, const T* x, T coef, T u, const T* v, int with_factor, Index cols);
  // out[j] += coef * (x[j] + c2)^(+-1/2)
  void (*add_sqrt)(T* out, const T* x, T coef, T c2, int inverse, Index cols);
  // out[j] = sum_c x[c] * basis_t[c * ld + j]: one row of a thin GEMM (k small),
  // formed in cache instead of through a panel-sized buffer.
  void (*dot_row)(T* out, const T* x, const T* basis_t, Index k, Index ld, Index cols);
  // m[j] = g[j] * (a[j] - 2 b[j]); returns {sum_j m[j], sum_j 2 g[j] b[j]}.
  // a, b, g may be null (read as 0, 0, 1); m may alias a.
  void (*combine)(T* m, const T* a, const T* b, const T* g, Index cols, T* sum_m, T* sum_b);
};

const PanelOps<double>& panel_ops_double();
const PanelOps<float>& panel_ops_float();
template <class T>
const PanelOps<T>& panel_ops();

}  // namespace ikdr
