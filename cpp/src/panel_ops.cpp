// Element-wise panel kernels. This file is compiled once per instruction set
// (see CMakeLists.txt); IKDR_ARCH_NAME names the namespace of each copy. The
// loops are written branch-free so the compiler vectorises them, including exp,
// which is implemented here (libm's exp is a scalar call).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <algorithm>

#include "ikdr/panel_ops.hpp"

#ifndef IKDR_ARCH_NAME
#define IKDR_ARCH_NAME baseline
#endif
#define IKDR_CAT2(a, b) a##b
#define IKDR_CAT(a, b) IKDR_CAT2(a, b)
#define IKDR_STR2(a) #a
#define IKDR_STR(a) IKDR_STR2(a)

namespace ikdr {
namespace IKDR_CAT(arch_, IKDR_ARCH_NAME) {
namespace {

template <class To, class From>
inline To bit_cast(From v) {
  To out;
  std::memcpy(&out, &v, sizeof(To));
  return out;
}

// exp(x) to about 1 ulp: x = n ln2 + r, |r| <= ln2/2, Taylor polynomial for
// e^r, and 2^n assembled in the exponent bits as 2^n1 * 2^n2 so that results
// down to the subnormal range stay right. The integers are read from the
// mantissa of (y + 1.5*2^52), so no float->int conversion is needed and the
// loop vectorises with plain integer adds and shifts.
inline double exp_kernel(double x) {
  const double shifter = 0x1.8p52;
  const std::int64_t shifter_bits = bit_cast<std::int64_t>(shifter);
  const double lo = x < -746.0 ? -746.0 : x;
  const double xc = lo > 709.7 ? 709.7 : lo;
  const double t = xc * 1.4426950408889634 + shifter;
  const double nf = t - shifter;
  const double r = (xc - nf * 6.93147180369123816490e-01) - nf * 1.90821492927058770002e-10;
  double p = 1.0 / 6227020800.0;
  p = p * r + 1.0 / 479001600.0;
  p = p * r + 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  const std::int64_t n = bit_cast<std::int64_t>(t) - shifter_bits;
  const std::int64_t n1 = bit_cast<std::int64_t>(nf * 0.5 + shifter) - shifter_bits;
  const std::int64_t n2 = n - n1;
  const double s1 = bit_cast<double>(static_cast<std::uint64_t>(n1 + 1023) << 52);
  const double s2 = bit_cast<double>(static_cast<std::uint64_t>(n2 + 1023) << 52);
  const double v = (p * s1) * s2;
  return x < -746.0 ? 0.0 : v;
}

inline float exp_kernel(float x) {
  const float shifter = 0x1.8p23f;
  const std::int32_t shifter_bits = bit_cast<std::int32_t>(shifter);
  const float lo = x < -104.0f ? -104.0f : x;
  const float xc = lo > 88.7f ? 88.7f : lo;
  const float t = xc * 1.44269504f + shifter;
  const float nf = t - shifter;
  const float r = (xc - nf * 0.693145752f) - nf * 1.42860677e-06f;
  float p = 1.0f / 40320.0f;
  p = p * r + 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const std::int32_t n = bit_cast<std::int32_t>(t) - shifter_bits;
  const std::int32_t n1 = bit_cast<std::int32_t>(nf * 0.5f + shifter) - shifter_bits;
  const std::int32_t n2 = n - n1;
  const float s1 = bit_cast<float>(static_cast<std::uint32_t>(n1 + 127) << 23);
  const float s2 = bit_cast<float>(static_cast<std::uint32_t>(n2 + 127) << 23);
  const float v = (p * s1) * s2;
  return x < -104.0f ? 0.0f : v;
}

template <class T>
void squared_distance(T* d, const T* sq_col, T sq_row, Index cols) {
  for (Index j = 0; j < cols; ++j) {
    const T v = sq_row + sq_col[j] - T(2) * d[j];
    d[j] = v > T(0) ? v : T(0);
  }
}

template <class T>
void add_scaled(T* out, const T* x, T coef, Index cols) {
  for (Index j = 0; j < cols; ++j) out[j] += coef * x[j];
}

template <class T>
void add_constant(T* out, T coef, Index cols) {
  for (Index j = 0; j < cols; ++j) out[j] += coef;
}

template <class T>
void add_power(T* out, const T* x, T coef, T c, int p, Index cols) {
  constexpr Index chunk = 256;
  T base[chunk], acc[chunk];
  for (Index j0 = 0; j0 < cols; j0 += chunk) {
    const Index len = std::min(chunk, cols - j0);
    for (Index j = 0; j < len; ++j) {
      base[j] = x[j0 + j] + c;
      acc[j] = T(1);
    }
    // Exponentiation by squaring with the bit loop outside, so the inner
    // loops stay uniform and vectorise.
    for (int e = p; e > 0; e >>= 1) {
      if (e & 1)
        for (Index j = 0; j < len; ++j) acc[j] *= base[j];
      if (e > 1)
        for (Index j = 0; j < len; ++j) base[j] *= base[j];
    }
    for (Index j = 0; j < len; ++j) out[j0 + j] += coef * acc[j];
  }
}

template <class T>
void add_exp(T* out, const T* x, T coef, T u, const T* v, int with_factor, Index cols) {
  if (v == nullptr) {
    const T c2 = with_factor ? coef * u : coef;
    for (Index j = 0; j < cols; ++j) out[j] += c2 * exp_kernel(-x[j] * u);
  } else if (with_factor) {
    for (Index j = 0; j < cols; ++j) {
      const T e = u * v[j];
      out[j] += coef * e * exp_kernel(-x[j] * e);
    }
  } else {
    for (Index j = 0; j < cols; ++j) out[j] += coef * exp_kernel(-x[j] * (u * v[j]));
  }
}

template <class T>
void add_sqrt(T* out, const T* x, T coef, T c2, int inverse, Index cols) {
  if (inverse) {
    for (Index j = 0; j < cols; ++j) out[j] += coef / std::sqrt(x[j] + c2);
  } else {
    for (Index j = 0; j < cols; ++j) out[j] += coef * std::sqrt(x[j] + c2);
  }
}

template <class T>
void dot_row(T* out, const T* x, const T* basis_t, Index k, Index ld, Index cols) {
  constexpr Index chunk = 512;  // keeps the output chunk in L1 across the k passes
  for (Index j0 = 0; j0 < cols; j0 += chunk) {
    const Index len = std::min(chunk, cols - j0);
    T* o = out + j0;
    for (Index j = 0; j < len; ++j) o[j] = T(0);
    for (Index c = 0; c < k; ++c) {
      const T xc = x[c];
      const T* b = basis_t + c * ld + j0;
      for (Index j = 0; j < len; ++j) o[j] += xc * b[j];
    }
  }
}

template <class T>
void combine(T* m, const T* a, const T* b, const T* g, Index cols, T* sum_m, T* sum_b) {
  T sm = 0, sb = 0;
  if (b == nullptr) {
    if (g == nullptr) {
      for (Index j = 0; j < cols; ++j) {
        const T v = a ? a[j] : T(0);
        m[j] = v;
        sm += v;
      }
    } else {
      for (Index j = 0; j < cols; ++j) {
        const T v = g[j] * (a ? a[j] : T(0));
        m[j] = v;
        sm += v;
      }
    }
  } else {
    for (Index j = 0; j < cols; ++j) {
      const T gj = g ? g[j] : T(1);
      const T bj = gj * b[j];
      const T v = gj * (a ? a[j] : T(0)) - T(2) * bj;
      m[j] = v;
      sm += v;
      sb += T(2) * bj;
    }
  }
  *sum_m = sm;
  *sum_b = sb;
}

template <class T>
PanelOps<T> make_ops() {
  PanelOps<T> ops;
  ops.isa = IKDR_STR(IKDR_ARCH_NAME);
  ops.squared_distance = &squared_distance<T>;
  ops.add_scaled = &add_scaled<T>;
  ops.add_constant = &add_constant<T>;
  ops.add_power = &add_power<T>;
  ops.add_exp = &add_exp<T>;
  ops.add_sqrt = &add_sqrt<T>;
  ops.dot_row = &dot_row<T>;
  ops.combine = &combine<T>;
  return ops;
}

}  // namespace

const PanelOps<double>& ops_double() {
  static const PanelOps<double> ops = make_ops<double>();
  return ops;
}
const PanelOps<float>& ops_float() {
  static const PanelOps<float> ops = make_ops<float>();
  return ops;
}

}  // namespace arch_IKDR_ARCH_NAME
}  // namespace ikdr
