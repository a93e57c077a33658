// The hot loops of every pass (see tile_kernels.hpp). This file is compiled
// once per instruction set; IKDR_ARCH_NAME names the namespace of each copy.
// The small products and reductions use GCC/Clang vector extensions sized to
// the instruction set's registers; the element-wise loops (exp, sqrt, powers)
// are written branch-free so the compiler vectorises them, exp included
// (libm's exp is a scalar call).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "ikdr/tile_kernels.hpp"

#if defined(__SSE2__)
#include <immintrin.h>
#endif

#ifndef IKDR_ARCH_NAME
#define IKDR_ARCH_NAME baseline
#endif
#define IKDR_CAT2(a, b) a##b
#define IKDR_CAT(a, b) IKDR_CAT2(a, b)
#define IKDR_STR2(a) #a
#define IKDR_STR(a) IKDR_STR2(a)

#if defined(__AVX512F__)
#define IKDR_VECTOR_BYTES 64
#elif defined(__AVX__)
#define IKDR_VECTOR_BYTES 32
#else
#define IKDR_VECTOR_BYTES 16
#endif

namespace ikdr {
namespace IKDR_CAT(arch_, IKDR_ARCH_NAME) {
namespace {

// Unaligned, aliasing vectors of one register's width.
typedef double vdouble __attribute__((vector_size(IKDR_VECTOR_BYTES), aligned(8), __may_alias__));
typedef float vfloat __attribute__((vector_size(IKDR_VECTOR_BYTES), aligned(4), __may_alias__));

template <class T>
struct Simd;
template <>
struct Simd<double> {
  using vec = vdouble;
  static constexpr Index width = IKDR_VECTOR_BYTES / 8;
};
template <>
struct Simd<float> {
  using vec = vfloat;
  static constexpr Index width = IKDR_VECTOR_BYTES / 4;
};

template <class T>
inline typename Simd<T>::vec load(const T* p) {
  return *reinterpret_cast<const typename Simd<T>::vec*>(p);
}
template <class T>
inline void store(T* p, typename Simd<T>::vec v) {
  *reinterpret_cast<typename Simd<T>::vec*>(p) = v;
}

static_assert(kTileCols % (2 * (IKDR_VECTOR_BYTES / 4)) == 0, "tile width must hold whole vectors");

template <class To, class From>
inline To bit_cast(From v) {
  To out;
  std::memcpy(&out, &v, sizeof(To));
  return out;
}

// Integer vectors of a register's width, for the exponent bits of exp.
typedef std::int64_t vint64 __attribute__((vector_size(IKDR_VECTOR_BYTES), aligned(8), __may_alias__));
typedef std::int32_t vint32 __attribute__((vector_size(IKDR_VECTOR_BYTES), aligned(4), __may_alias__));

// The integer type of the same width as a float type (scalar or vector):
// BitsOf<V> (overloads for decltype only; as template arguments the vector
// types would lose their attributes).
inline std::int64_t integer_like(double) { return {}; }
inline std::int32_t integer_like(float) { return {}; }
inline vint64 integer_like(vdouble) { return vint64{}; }
inline vint32 integer_like(vfloat) { return vint32{}; }
template <class V>
using BitsOf = decltype(integer_like(V{}));

// min / max as the x86 instructions define them (the second operand when the
// comparison is false, NaN included): one instruction each, where GCC would
// otherwise emit a compare and a blend for the vector form.
template <class V>
inline V min_of(V a, V b) {
  return a < b ? a : b;
}
template <class V>
inline V max_of(V a, V b) {
  return a > b ? a : b;
}
#if defined(__AVX512F__)
inline vdouble min_of(vdouble a, vdouble b) { return (vdouble)_mm512_min_pd((__m512d)a, (__m512d)b); }
inline vdouble max_of(vdouble a, vdouble b) { return (vdouble)_mm512_max_pd((__m512d)a, (__m512d)b); }
inline vfloat min_of(vfloat a, vfloat b) { return (vfloat)_mm512_min_ps((__m512)a, (__m512)b); }
inline vfloat max_of(vfloat a, vfloat b) { return (vfloat)_mm512_max_ps((__m512)a, (__m512)b); }
#elif defined(__AVX__)
inline vdouble min_of(vdouble a, vdouble b) { return (vdouble)_mm256_min_pd((__m256d)a, (__m256d)b); }
inline vdouble max_of(vdouble a, vdouble b) { return (vdouble)_mm256_max_pd((__m256d)a, (__m256d)b); }
inline vfloat min_of(vfloat a, vfloat b) { return (vfloat)_mm256_min_ps((__m256)a, (__m256)b); }
inline vfloat max_of(vfloat a, vfloat b) { return (vfloat)_mm256_max_ps((__m256)a, (__m256)b); }
#elif defined(__SSE2__)
inline vdouble min_of(vdouble a, vdouble b) { return (vdouble)_mm_min_pd((__m128d)a, (__m128d)b); }
inline vdouble max_of(vdouble a, vdouble b) { return (vdouble)_mm_max_pd((__m128d)a, (__m128d)b); }
inline vfloat min_of(vfloat a, vfloat b) { return (vfloat)_mm_min_ps((__m128)a, (__m128)b); }
inline vfloat max_of(vfloat a, vfloat b) { return (vfloat)_mm_max_ps((__m128)a, (__m128)b); }
#endif
// v where keep is true, else +0 (a bit mask, no blend).
inline double zero_unless(bool keep, double v) { return keep ? v : 0.0; }
inline float zero_unless(bool keep, float v) { return keep ? v : 0.0f; }
template <class V, class M>
inline V zero_unless(M keep, V v) {
  using I = BitsOf<V>;
  return bit_cast<V>(bit_cast<I>(v) & bit_cast<I>(keep));
}

// The element type of a float type (scalar or vector): ElementOf<V>.
inline double element_of(double) { return {}; }
inline double element_of(vdouble) { return {}; }
inline float element_of(float) { return {}; }
inline float element_of(vfloat) { return {}; }
template <class V>
using ElementOf = decltype(element_of(V{}));

// exp's constants per precision: the clamp [lo, hi] (below lo the result
// would be subnormal), the shifter 1.5 * 2^mantissa, log2(e), ln 2 split in
// a high part exact in a few bits and the rest, the exponent bias.
template <class T>
struct ExpConstants;
template <>
struct ExpConstants<double> {
  static constexpr double lo = -708.0, hi = 709.7, shifter = 0x1.8p52, log2e = 1.4426950408889634,
                          ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
  static constexpr int bias = 1023, mantissa = 52;
};
template <>
struct ExpConstants<float> {
  static constexpr float lo = -87.0f, hi = 88.7f, shifter = 0x1.8p23f, log2e = 1.44269504f,
                         ln2_hi = 0.693145752f, ln2_lo = 1.42860677e-06f;
  static constexpr int bias = 127, mantissa = 23;
};

// e^r on |r| <= ln2/2, split into its even and odd parts in u = r^2, each by
// Horner's rule: two independent chains of FMAs whose coefficients are memory
// operands, where Estrin's scheme needs a register copy of every coefficient
// pair (the loops keep more constants than there are vector registers).
// float64: degree 11, near-minimax on the interval, relative error 1e-17.
template <class V>
inline V exp_polynomial(V r, double) {
  const V u = r * r;
  V even = u * 2.763102993654247e-07 + 2.4801490644821428e-05;
  even = even * u + 0.0013888888946349174;
  even = even * u + 0.04166666666651782;
  even = even * u + 0.5000000000000012;
  even = even * u + 1.0;
  V odd = u * 2.4992073079940984e-08 + 2.755762442891869e-06;
  odd = odd * u + 0.00019841269439748474;
  odd = odd * u + 0.008333333333547997;
  odd = odd * u + 0.16666666666666222;
  odd = odd * u + 1.0;
  return odd * r + even;
}
// float32: the degree-7 Taylor polynomial, relative error 5e-9.
template <class V>
inline V exp_polynomial(V r, float) {
  const V u = r * r;
  const V even = ((u * (1.0f / 720.0f) + (1.0f / 24.0f)) * u + 0.5f) * u + 1.0f;
  const V odd = ((u * (1.0f / 5040.0f) + (1.0f / 120.0f)) * u + (1.0f / 6.0f)) * u + 1.0f;
  return odd * r + even;
}

// exp(x) to about 1 ulp for results in the normal range, one element or one
// vector register at a time (the same operations, so a vectorised loop and
// its scalar tail agree bitwise): x = n ln2 + r, |r| <= ln2/2, the polynomial
// above for e^r, and 2^n assembled in the exponent bits. The integer n is read
// from the mantissa of (x log2(e) + shifter), so no float->int conversion is
// needed. x is clamped to [lo, hi] by one max and one min (a caller whose
// arguments must not exceed some smaller bound passes it as hi: the clamp
// costs nothing more), and results that
// would be subnormal (x < lo: exp(x) < 3.3e-308 in float64, 1.6e-38 in
// float32) are flushed to 0 by a bit mask: they cannot change a sum of kernel
// values.
template <class V>
inline V exp_kernel(V x, V hi) {
  using T = ElementOf<V>;
  using C = ExpConstants<T>;
  using I = BitsOf<V>;
  const V shifter = V{} + C::shifter;
  const V xc = min_of(max_of(x, V{} + C::lo), hi);
  const V t = xc * C::log2e + shifter;
  const V nf = t - shifter;
  const V r = (xc - nf * C::ln2_hi) - nf * C::ln2_lo;
  const V p = exp_polynomial(r, T{});
  const I n = bit_cast<I>(t) - bit_cast<I>(shifter);
  const V scale = bit_cast<V>((n + C::bias) << C::mantissa);
  return zero_unless(x >= V{} + C::lo, p * scale);
}
template <class V>
inline V exp_kernel(V x) {
  return exp_kernel(x, V{} + ExpConstants<ElementOf<V>>::hi);
}

// Sum of a tile row (kTileCols entries) in vector registers; accumulated in T
// over one tile (64 entries), then in double across tiles by the caller.
template <class T>
inline double tile_sum(const T* x) {
  using vec = typename Simd<T>::vec;
  constexpr Index W = Simd<T>::width;
  vec s0 = {}, s1 = {};
  for (Index j = 0; j < kTileCols; j += 2 * W) {
    s0 += load(x + j);
    s1 += load(x + j + W);
  }
  s0 += s1;
  double total = 0;
  for (Index l = 0; l < W; ++l) total += s0[l];
  return total;
}

// out[r][j] = sum_c rows[r][c] cols_t[c * ld + j] for a kTileRows x kTileCols
// tile: the Gram entries of thin points, or the Gamma entries of a thin factor.
// Each column vector loaded is used by every row of the tile.
template <class T>
inline void product_tile(const T* const* rows, Index width, const T* cols_t, Index ld, T* out) {
  using vec = typename Simd<T>::vec;
  constexpr Index W = Simd<T>::width;
  for (Index j = 0; j < kTileCols; j += 2 * W) {
    vec acc[kTileRows][2] = {};
    for (Index c = 0; c < width; ++c) {
      const T* col = cols_t + c * ld + j;
      const vec b0 = load(col), b1 = load(col + W);
      for (Index r = 0; r < kTileRows; ++r) {
        const T s = rows[r][c];
        acc[r][0] += s * b0;
        acc[r][1] += s * b1;
      }
    }
    for (Index r = 0; r < kTileRows; ++r) {
      store(out + r * kTileCols + j, acc[r][0]);
      store(out + r * kTileCols + j + W, acc[r][1]);
    }
  }
}

// out[0, lanes of v) += v in double, by whole vectors (float32: each half
// widened to a register of doubles). Written per vector: the accumulation
// loop before it uses every register, and a flush taking the row's vectors
// by reference made the compiler spill inside that loop.
inline void add_to_double(double* out, vdouble v) { store(out, load(out) + v); }
inline void add_to_double(double* out, vfloat v) {
  typedef float vhalf __attribute__((vector_size(IKDR_VECTOR_BYTES / 2), aligned(4), __may_alias__));
  constexpr Index H = Simd<double>::width;
  for (Index h = 0; h < Simd<float>::width; h += H) {
    vhalf part;
    std::memcpy(&part, reinterpret_cast<const float*>(&v) + h, sizeof part);
    add_to_double(out + h, __builtin_convertvector(part, vdouble));
  }
}

// acc[r][c] += sum_j m[r][j] rhs[j][c] for the tile's rows and G vectors of
// right-hand-side columns starting at column cv: the tile of Psi is used
// while it is in L1, and nothing n x n is stored.
template <class T, int G>
inline void accumulate_tile(const T* m, const T* rhs, Index ldr, Index cv, double* acc,
                            Index ldacc) {
  using vec = typename Simd<T>::vec;
  constexpr Index W = Simd<T>::width;
  vec a[kTileRows][G] = {};
  for (Index j = 0; j < kTileCols; ++j) {
    vec rv[G];
    for (int g = 0; g < G; ++g) rv[g] = load(rhs + j * ldr + cv + g * W);
    for (Index r = 0; r < kTileRows; ++r) {
      const T s = m[r * kTileCols + j];
      for (int g = 0; g < G; ++g) a[r][g] += s * rv[g];
    }
  }
  for (Index r = 0; r < kTileRows; ++r)
    for (int g = 0; g < G; ++g) add_to_double(acc + r * ldacc + cv + g * W, a[r][g]);
}

// acc rows += M rhs for `groups` consecutive row groups of a Psi panel (each
// kTileRows x kTileCols, acc rows kTileRows apart): column chunks outermost,
// so a chunk of the right-hand side (kTileCols x G vectors) stays in L1 for
// all the groups instead of being read again for every four rows.
template <class T>
inline void accumulate_panel(const T* m, Index groups, const T* rhs, Index c_pad, double* acc) {
  constexpr Index W = Simd<T>::width;
  constexpr int G = 3;  // kTileRows x 3 accumulators + 3 loads + 1 broadcast fit 16 registers
  constexpr Index kGroup = kTileRows * kTileCols;
  Index cv = 0;
  for (; cv + G * W <= c_pad; cv += G * W)
    for (Index g = 0; g < groups; ++g)
      accumulate_tile<T, G>(m + g * kGroup, rhs, c_pad, cv, acc + g * kTileRows * c_pad, c_pad);
  for (; cv + 2 * W <= c_pad; cv += 2 * W)
    for (Index g = 0; g < groups; ++g)
      accumulate_tile<T, 2>(m + g * kGroup, rhs, c_pad, cv, acc + g * kTileRows * c_pad, c_pad);
  for (; cv < c_pad; cv += W)
    for (Index g = 0; g < groups; ++g)
      accumulate_tile<T, 1>(m + g * kGroup, rhs, c_pad, cv, acc + g * kTileRows * c_pad, c_pad);
}

// The transposed product of a symmetric pass: col[j][c] += sum_r m[r][j] rhs[r][c]
// for the tile's kTileRows rows (rhs: their rows of the right-hand side) and G
// vectors of columns starting at cv; col (kTileCols x ldc, in T) stays in L1
// and is flushed to double by the caller.
template <class T, int G>
inline void accumulate_tile_transposed(const T* m, const T* rhs, Index ldr, Index cv, T* col,
                                       Index ldc) {
  using vec = typename Simd<T>::vec;
  constexpr Index W = Simd<T>::width;
  vec rv[kTileRows][G];
  for (Index r = 0; r < kTileRows; ++r)
    for (int g = 0; g < G; ++g) rv[r][g] = load(rhs + r * ldr + cv + g * W);
  for (Index j = 0; j < kTileCols; ++j) {
    T* out = col + j * ldc + cv;
    vec a[G];
    for (int g = 0; g < G; ++g) a[g] = load(out + g * W);
    for (Index r = 0; r < kTileRows; ++r) {
      const T s = m[r * kTileCols + j];
      for (int g = 0; g < G; ++g) a[g] += s * rv[r][g];
    }
    for (int g = 0; g < G; ++g) store(out + g * W, a[g]);
  }
}

// col += M^T rhs_rows for `groups` consecutive row groups (rhs_rows: their
// rows of the right-hand side), column chunks outermost as above.
template <class T>
inline void accumulate_panel_transposed(const T* m, Index groups, const T* rhs_rows, Index c_pad,
                                        T* col) {
  constexpr Index W = Simd<T>::width;
  constexpr int G = 3;  // kTileRows x 3 operands + 3 accumulators + 1 broadcast fit 16 registers
  constexpr Index kGroup = kTileRows * kTileCols;
  const Index ldr = kTileRows * c_pad;
  Index cv = 0;
  for (; cv + G * W <= c_pad; cv += G * W)
    for (Index g = 0; g < groups; ++g)
      accumulate_tile_transposed<T, G>(m + g * kGroup, rhs_rows + g * ldr, c_pad, cv, col, c_pad);
  for (; cv + 2 * W <= c_pad; cv += 2 * W)
    for (Index g = 0; g < groups; ++g)
      accumulate_tile_transposed<T, 2>(m + g * kGroup, rhs_rows + g * ldr, c_pad, cv, col, c_pad);
  for (; cv < c_pad; cv += W)
    for (Index g = 0; g < groups; ++g)
      accumulate_tile_transposed<T, 1>(m + g * kGroup, rhs_rows + g * ldr, c_pad, cv, col, c_pad);
}

// Work rows of one tile row (each kTileCols long).
template <class T>
struct RowBuffers {
  T* dist;
  T* val;  // kernel values (then Gamma o K, for the row sums)
  T* da;   // inner-product derivative weights a
  T* db;   // distance derivative weights b (then 2 Gamma o b, for the row sums)
};

// The scalars of the single-Gaussian fast path: u = 1 / (2 sigma^2), the
// weight w, Psi's coefficient (value mode M = w g k, gradient mode
// M = 2 w u g k; the distance weight is b = -w u k), and the factors that turn
// a sum of M into the sums of Gamma o K (to_value) and 2 Gamma o b (to_lap).
template <class T>
struct GaussianScales {
  T u, w, coef;
  double to_value, to_lap;
};

template <class T>
inline GaussianScales<T> gaussian_scales(const PassPlan<T>& p) {
  const Term<T>& t = p.terms[0];
  GaussianScales<T> sc;
  sc.u = T(0.5 / (t.sigma * t.sigma));
  sc.w = T(t.weight);
  sc.coef = p.mode == Mode::gradient ? T(2) * sc.w * sc.u : sc.w;
  sc.to_value = double(sc.w) / double(sc.coef);
  sc.to_lap = -2.0 * double(sc.w) * double(sc.u) / double(sc.coef);
  return sc;
}

// The single-Gaussian Psi entries M = coef g_ij k_ij of a whole tile
// (kTileRows x kTileCols; g: the rows' Gamma entries, or null for Gamma = 1)
// and their sums, in one loop whose four rows are independent exp chains (the
// exp's dependency chain is long; nothing between the rows waits on it), while
// the values are in registers: the rows' sums of Gamma o K and 2 Gamma o b
// into value_sum and lap_sum (mr entries each), and when col_sum is given the
// columns' sums of M (kTileCols) for the transposed half of a symmetric pass.
// Rows past mr (the Gram tile repeats row mr - 1 there) and the padding
// columns (-inf in scaled_sq_b) get exp(-inf) = 0 exactly, so they add
// nothing; dot's diagonal entries are overwritten (see below).
template <class T>
inline void gaussian_tile(const PassPlan<T>& p, Index i0, Index mr, Index j0, Index len, T* dot,
                          const T* const* g, T* m, double* value_sum, double* lap_sum,
                          T* col_sum) {
  using vec = typename Simd<T>::vec;
  constexpr Index W = Simd<T>::width;
  const GaussianScales<T> sc = gaussian_scales(p);
  const T inf = std::numeric_limits<T>::infinity();
  // -u d = (-u |a_i|^2 - u |b_j|^2) + 2u <a_i, b_j>, clamped to at most 0 by
  // exp's upper bound (rounding can make the distance of close points negative)
  T row_term[kTileRows];
  for (Index r = 0; r < kTileRows; ++r) row_term[r] = r < mr ? -sc.u * p.sq_a[i0 + r] : -inf;
  // k_ii = 1 exactly, whatever the rounding of d: <a_i, a_i> = +inf makes
  // x = +inf, which the clamp to 0 below turns into exp(0) = 1
  if (p.self)
    for (Index r = 0; r < mr; ++r)
      if (i0 + r >= j0 && i0 + r < j0 + len) dot[r * kTileCols + (i0 + r - j0)] = inf;
  const T two_u = T(2) * sc.u;
  const T* col_term = p.scaled_sq_b + j0;
  const vec zero = {};
  auto kernel_values = [&](Index r, Index j) {
    const vec x = (row_term[r] + load(col_term + j)) + two_u * load(dot + r * kTileCols + j);
    return exp_kernel(x, zero);
  };
  vec row_acc[kTileRows] = {};
  auto run = [&](auto coef_of) {
    for (Index j = 0; j < kTileCols; j += W) {
      vec col_acc = zero;
      for (Index r = 0; r < kTileRows; ++r) {
        const vec v = coef_of(r, j) * kernel_values(r, j);
        store(m + r * kTileCols + j, v);
        row_acc[r] += v;
        col_acc += v;
      }
      if (col_sum != nullptr) store(col_sum + j, load(col_sum + j) + col_acc);
    }
  };
  if (g != nullptr)
    run([&](Index r, Index j) { return sc.coef * load(g[r] + j); });
  else
    run([&](Index, Index) { return zero + sc.coef; });
  for (Index r = 0; r < mr; ++r) {
    double total = 0;
    for (Index l = 0; l < W; ++l) total += row_acc[r][l];
    value_sum[r] += sc.to_value * total;
    if (p.mode == Mode::gradient) lap_sum[r] += sc.to_lap * total;
  }
}

// One row of a tile, for any kernel but the single Gaussian (gaussian_tile):
// Psi entries into mrow (zero past len) and the row sums of Gamma o K
// (value_sum) and 2 Gamma o b (lap_sum).
//
// col_value / col_lap (kTileCols each, or null): the same entries added per
// column, for the transposed half of a symmetric pass.
template <class T>
inline void tile_row(const PassPlan<T>& p, Index ig, Index j0, Index len, const T* dot,
                     const T* g, T* mrow, const RowBuffers<T>& buf, double& value_sum,
                     double& lap_sum, T* col_value = nullptr, T* col_lap = nullptr) {
  const bool gradient = p.mode == Mode::gradient;
  T* const dist = buf.dist;
  if (p.needs_dist) {
    const T sa = p.sq_a[ig];
    const T* sqb = p.sq_b + j0;
    for (Index j = 0; j < kTileCols; ++j) {
      const T d = sa + sqb[j] - T(2) * dot[j];
      dist[j] = d > T(0) ? d : T(0);
    }
    if (p.self && ig >= j0 && ig < j0 + len) dist[ig - j0] = T(0);
  }
  T* const val = buf.val;
  T* const da = buf.da;
  T* const db = buf.db;
  std::fill(val, val + kTileCols, T(0));
  if (gradient) {
    std::fill(da, da + kTileCols, T(0));
    std::fill(db, db + kTileCols, T(0));
  }
  for (int ti = 0; ti < p.n_terms; ++ti) {
    const Term<T>& t = p.terms[ti];
    const T w = T(t.weight);
    switch (t.kind) {
      case TermKind::linear:
        for (Index j = 0; j < kTileCols; ++j) val[j] += w * dot[j];
        if (gradient)
          for (Index j = 0; j < kTileCols; ++j) da[j] += w;
        break;
      case TermKind::polynomial: {
        // (dot + c)^(p-1) by squaring with the bit loop outside, so the inner loops vectorise
        const T c = T(t.c);
        T base[kTileCols], pw[kTileCols];
        for (Index j = 0; j < kTileCols; ++j) {
          base[j] = dot[j] + c;
          pw[j] = T(1);
        }
        T sq[kTileCols];
        std::copy(base, base + kTileCols, sq);
        for (int e = t.degree - 1; e > 0; e >>= 1) {
          if (e & 1)
            for (Index j = 0; j < kTileCols; ++j) pw[j] *= sq[j];
          if (e > 1)
            for (Index j = 0; j < kTileCols; ++j) sq[j] *= sq[j];
        }
        for (Index j = 0; j < kTileCols; ++j) val[j] += w * pw[j] * base[j];
        if (gradient) {
          const T wp = w * T(t.degree);
          for (Index j = 0; j < kTileCols; ++j) da[j] += wp * pw[j];
        }
        break;
      }
      case TermKind::gaussian: {
        // k = exp(-d e_ij), e_ij = 1 / (2 s_i s_j) (or 1 / 2 sigma^2); f'(beta) = -e_ij k
        const T* inv = p.col_inv_scale[ti];
        if (inv == nullptr) {
          const T u = T(0.5 / (t.sigma * t.sigma));
          for (Index j = 0; j < kTileCols; ++j) {
            const T k = exp_kernel(-u * dist[j]);
            val[j] += w * k;
            if (gradient) db[j] -= w * u * k;
          }
        } else {
          const T ui = T(0.5) / t.scale_rows[ig];
          const T* v = inv + j0;
          for (Index j = 0; j < kTileCols; ++j) {
            const T e = ui * v[j];
            const T k = exp_kernel(-dist[j] * e);
            val[j] += w * k;
            if (gradient) db[j] -= w * e * k;
          }
        }
        break;
      }
      case TermKind::squared:
        for (Index j = 0; j < kTileCols; ++j) val[j] -= w * dist[j];
        if (gradient)
          for (Index j = 0; j < kTileCols; ++j) db[j] -= w;
        break;
      case TermKind::multiquadric: {
        const T c2 = T(t.c * t.c);
        for (Index j = 0; j < kTileCols; ++j) {
          const T s = std::sqrt(dist[j] + c2);
          val[j] -= w * s;
          if (gradient) db[j] -= w / (T(2) * s);
        }
        break;
      }
    }
  }
  // M = g (a - 2 b) (gradient) or g k (value); the row sums come from g k and 2 g b.
  for (Index j = 0; j < kTileCols; ++j) {
    const T gj = g != nullptr ? g[j] : T(1);
    const T gv = gj * val[j];
    if (gradient) {
      const T gb = gj * db[j];
      mrow[j] = gj * da[j] - T(2) * gb;
      db[j] = T(2) * gb;
    } else {
      mrow[j] = gv;
    }
    val[j] = gv;
  }
  for (Index j = len; j < kTileCols; ++j) val[j] = mrow[j] = T(0);
  value_sum += tile_sum(val);
  if (gradient) {
    for (Index j = len; j < kTileCols; ++j) db[j] = T(0);
    lap_sum += tile_sum(db);
  }
  if (col_value != nullptr) {
    for (Index j = 0; j < kTileCols; ++j) col_value[j] += val[j];
    if (gradient)
      for (Index j = 0; j < kTileCols; ++j) col_lap[j] += db[j];
  }
}

// A task's tile buffers in its scratch: the Gram, Gamma and Psi tiles
// (kTileRows x kTileCols each) and the work rows of tile_row. Without inner
// products the Gram tile stays zero.
template <class T>
struct TileWork {
  T* dot;
  T* gamma;
  T* m;
  RowBuffers<T> rows;
};

template <class T>
TileWork<T> tile_work(const PassPlan<T>& p, PassScratch<T>& s) {
  s.tile.resize(static_cast<std::size_t>(16 * kTileCols));
  T* const dot = s.tile.data();
  T* const gamma = dot + kTileRows * kTileCols;
  T* const m = gamma + kTileRows * kTileCols;
  T* const row = m + kTileRows * kTileCols;
  if (!p.needs_dot) std::fill(dot, dot + kTileRows * kTileCols, T(0));
  return {dot, gamma, m, {row, row + kTileCols, row + 2 * kTileCols, row + 3 * kTileCols}};
}

// Copies len entries of each tile row from a panel (ld) and zeroes the tail.
template <class T>
inline void copy_tile(const T* src, Index ld, Index rows, Index len, T* out) {
  for (Index r = 0; r < kTileRows; ++r) {
    T* o = out + r * kTileCols;
    if (r < rows) {
      std::copy(src + r * ld, src + r * ld + len, o);
      std::fill(o + len, o + kTileCols, T(0));
    } else {
      std::fill(o, o + kTileCols, T(0));
    }
  }
}

// Gamma rows of the row group at i0 (mr rows; rows past mr repeat row
// mr - 1) and columns j0.. from a thin factor: rows of the class table, or
// the rank-r product formed in `tile`.
template <class T>
inline void factor_gamma_rows(const PassPlan<T>& p, Index i0, Index mr, Index j0, T* tile,
                              const T* (&g)[kTileRows]) {
  if (p.g_table != nullptr) {
    for (Index r = 0; r < kTileRows; ++r)
      g[r] = p.g_table + p.g_class[i0 + std::min(r, mr - 1)] * p.m_pad + j0;
    return;
  }
  const T* rp[kTileRows];
  for (Index r = 0; r < kTileRows; ++r) rp[r] = p.g_rows + (i0 + std::min(r, mr - 1)) * p.rank;
  product_tile(rp, p.rank, p.g_cols_t + j0, p.m_pad, tile);
  for (Index r = 0; r < kTileRows; ++r) g[r] = tile + r * kTileCols;
}

template <class T>
void pass_task(const PassPlan<T>& p, Index task, PassScratch<T>& s) {
  const Index r0 = task * p.task_rows, r1 = std::min(p.n, r0 + p.task_rows);
  const Index rows = r1 - r0, rows_pad = round_up(rows, kTileRows);
  const bool wide_points = p.needs_dot && p.b_t == nullptr;
  const bool wide_gamma = p.g_rows != nullptr && p.g_cols_t == nullptr;
  const bool panel_rhs = p.rhs != nullptr && !p.thin_rhs && p.c > 0;
  const Index cbmax = p.col_block;
  if (wide_points) s.dot_panel.resize(static_cast<std::size_t>(rows * cbmax));
  if (wide_gamma) s.gamma_panel.resize(static_cast<std::size_t>(rows * cbmax));
  if (panel_rhs) s.m_panel.resize(static_cast<std::size_t>(rows * cbmax));
  const TileWork<T> work = tile_work(p, s);
  T* const dot_t = work.dot;
  T* const gam_t = work.gamma;
  T* const m_t = work.m;
  const RowBuffers<T>& buf = work.rows;
  if (p.thin_rhs) s.acc.assign(static_cast<std::size_t>(rows_pad * p.c_pad), 0.0);
  s.value_sum.assign(static_cast<std::size_t>(rows_pad), 0.0);
  s.lap_sum.assign(static_cast<std::size_t>(rows_pad), 0.0);

  for (Index c0 = 0; c0 < p.m; c0 += cbmax) {
    const Index cb = std::min(cbmax, p.m - c0);
    if (wide_points)
      gemm_row_major<T>(*p.blas, false, true, rows, cb, p.k, T(1), p.a + r0 * p.k, p.k,
                        p.b + c0 * p.k, p.k, T(0), s.dot_panel.data(), cbmax);
    if (wide_gamma)
      gemm_row_major<T>(*p.blas, false, true, rows, cb, p.rank, T(1), p.g_rows + r0 * p.rank,
                        p.rank, p.g_cols + c0 * p.rank, p.rank, T(0), s.gamma_panel.data(), cbmax);
    for (Index j0 = c0; j0 < c0 + cb; j0 += kTileCols) {
      const Index len = std::min(kTileCols, c0 + cb - j0);
      for (Index i0 = r0; i0 < r1; i0 += kTileRows) {
        const Index mr = std::min(kTileRows, r1 - i0);
        const Index li = i0 - r0;  // row of the task
        if (p.needs_dot) {
          if (wide_points) {
            copy_tile(s.dot_panel.data() + li * cbmax + (j0 - c0), cbmax, mr, len, dot_t);
          } else {
            const T* rp[kTileRows];
            for (Index r = 0; r < kTileRows; ++r) rp[r] = p.a + (i0 + std::min(r, mr - 1)) * p.k;
            product_tile(rp, p.k, p.b_t + j0, p.m_pad, dot_t);
          }
        }
        bool has_gamma = true;
        const T* g_t[kTileRows];  // the group's Gamma rows
        if (p.g_dense != nullptr || wide_gamma) {
          if (p.g_dense != nullptr)
            copy_tile(p.g_dense + i0 * p.m + j0, p.m, mr, len, gam_t);
          else
            copy_tile(s.gamma_panel.data() + li * cbmax + (j0 - c0), cbmax, mr, len, gam_t);
          for (Index r = 0; r < kTileRows; ++r) g_t[r] = gam_t + r * kTileCols;
        } else if (p.g_rows != nullptr) {
          factor_gamma_rows(p, i0, mr, j0, gam_t, g_t);
        } else {
          has_gamma = false;
        }
        if (p.single_gaussian)
          gaussian_tile(p, i0, mr, j0, len, dot_t, has_gamma ? g_t : nullptr, m_t,
                        s.value_sum.data() + li, s.lap_sum.data() + li, static_cast<T*>(nullptr));
        else
          for (Index r = 0; r < mr; ++r)
            tile_row(p, i0 + r, j0, len, dot_t + r * kTileCols,
                     has_gamma ? g_t[r] : nullptr, m_t + r * kTileCols, buf,
                     s.value_sum[li + r], s.lap_sum[li + r]);
        for (Index r = mr; r < kTileRows; ++r)
          std::fill(m_t + r * kTileCols, m_t + (r + 1) * kTileCols, T(0));
        if (p.thin_rhs) {
          accumulate_panel(m_t, 1, p.rhs_pad + j0 * p.c_pad, p.c_pad, s.acc.data() + li * p.c_pad);
        } else if (panel_rhs) {
          for (Index r = 0; r < mr; ++r)
            std::copy(m_t + r * kTileCols, m_t + r * kTileCols + len,
                      s.m_panel.data() + (li + r) * cbmax + (j0 - c0));
        } else if (p.matrix_out != nullptr) {
          for (Index r = 0; r < mr; ++r)
            std::copy(m_t + r * kTileCols, m_t + r * kTileCols + len,
                      p.matrix_out + (i0 + r) * p.m + j0);
        }
      }
    }
    if (panel_rhs)
      gemm_row_major<T>(*p.blas, false, false, rows, p.c, cb, T(1), s.m_panel.data(), cbmax,
                        p.rhs + c0 * p.c, p.c, c0 == 0 ? T(0) : T(1), p.y + r0 * p.c, p.c);
  }
  if (p.y != nullptr && p.c > 0) {
    if (p.thin_rhs) {
      for (Index i = 0; i < rows; ++i)
        for (Index c = 0; c < p.c; ++c) p.y[(r0 + i) * p.c + c] = T(s.acc[i * p.c_pad + c]);
    }
    if (p.m == 0 && !p.thin_rhs)
      std::fill(p.y + r0 * p.c, p.y + r1 * p.c, T(0));
    if (p.mode == Mode::gradient && p.rhs_rows != nullptr) {
      // Laplacian diagonal: diag(2 (Gamma o b) 1) times the rows' own right-hand side
      for (Index i = 0; i < rows; ++i) {
        const T d = T(s.lap_sum[i]);
        if (d == T(0)) continue;
        const T* rr = p.rhs_rows + (r0 + i) * p.c;
        T* yr = p.y + (r0 + i) * p.c;
        for (Index c = 0; c < p.c; ++c) yr[c] += d * rr[c];
      }
    }
  }
  if (p.value_sums != nullptr)
    for (Index i = 0; i < rows; ++i) p.value_sums[r0 + i] = T(s.value_sum[i]);
}

// Adds a tile's transposed sums (len columns from j0) into the pass's double
// accumulators and zeroes them.
template <class T>
inline void flush_columns(const PassPlan<T>& p, Index j0, Index len, PassScratch<T>& s) {
  const bool gradient = p.mode == Mode::gradient;
  if (p.thin_rhs) {
    for (Index j = 0; j < len; ++j) {
      double* out = p.acc_all + (j0 + j) * p.c_pad;
      const T* in = s.col_acc.data() + j * p.c_pad;
      for (Index c = 0; c < p.c_pad; ++c) out[c] += double(in[c]);
    }
    std::fill(s.col_acc.begin(), s.col_acc.end(), T(0));
  }
  if (p.single_gaussian) {  // col_value holds the sums of M (gaussian_tile)
    const GaussianScales<T> sc = gaussian_scales(p);
    for (Index j = 0; j < len; ++j) {
      p.value_all[j0 + j] += sc.to_value * double(s.col_value[j]);
      if (gradient) p.lap_all[j0 + j] += sc.to_lap * double(s.col_value[j]);
    }
  } else {
    for (Index j = 0; j < len; ++j) p.value_all[j0 + j] += double(s.col_value[j]);
    if (gradient) {
      for (Index j = 0; j < len; ++j) p.lap_all[j0 + j] += double(s.col_lap[j]);
      std::fill(s.col_lap.begin(), s.col_lap.end(), T(0));
    }
  }
  std::fill(s.col_value.begin(), s.col_value.end(), T(0));
}

// Block pair (I, J) of a symmetric pass (thin points and Gamma factor, a thin
// or no right-hand side; see tile_kernels.hpp). Rows of I gain Psi_IJ R_J and
// their row sums; when I < J the rows of J gain Psi_IJ^T R_I and the column
// sums, accumulated over 16 row groups in T (as a tile row is over its 64
// columns) and then in double.
template <class T>
void pair_task(const PassPlan<T>& p, Index I, Index J, PassScratch<T>& s) {
  const Index bs = p.block_rows;
  const Index r0 = I * bs, r1 = std::min(p.n, r0 + bs);
  const Index c0 = J * bs, c1 = std::min(p.n, c0 + bs);
  const bool mirror = I != J;
  const TileWork<T> work = tile_work(p, s);
  T* const dot_t = work.dot;
  T* const gam_t = work.gamma;
  const RowBuffers<T>& buf = work.rows;
  if (mirror) {
    if (p.thin_rhs) s.col_acc.assign(static_cast<std::size_t>(kTileCols * p.c_pad), T(0));
    s.col_value.assign(static_cast<std::size_t>(kTileCols), T(0));
    s.col_lap.assign(static_cast<std::size_t>(kTileCols), T(0));
  }
  // Psi is formed for kSubGroups row groups at a time (a panel that stays in
  // L1) and then multiplied, chunk by chunk of the right-hand side's columns;
  // the transposed sums go to double every kFlushGroups groups (64 rows, as a
  // tile row's 64 columns in the forward direction).
  constexpr Index kSubGroups = 8;
  constexpr Index kFlushGroups = 16;
  constexpr Index kGroup = kTileRows * kTileCols;
  s.m_panel.resize(static_cast<std::size_t>(kSubGroups * kGroup));
  T* const panel = s.m_panel.data();
  const bool has_gamma = p.g_rows != nullptr;
  T* const col_value = mirror ? s.col_value.data() : nullptr;
  T* const col_lap = mirror ? s.col_lap.data() : nullptr;
  for (Index j0 = c0; j0 < c1; j0 += kTileCols) {
    const Index len = std::min(kTileCols, c1 - j0);
    Index pending = 0;  // row groups whose transposed sums are not yet flushed
    for (Index s0 = r0; s0 < r1; s0 += kSubGroups * kTileRows) {
      const Index groups = std::min(kSubGroups, (r1 - s0 + kTileRows - 1) / kTileRows);
      for (Index g = 0; g < groups; ++g) {
        const Index i0 = s0 + g * kTileRows, mr = std::min(kTileRows, r1 - i0);
        T* const m_g = panel + g * kGroup;
        if (p.needs_dot) {
          const T* rp[kTileRows];
          for (Index r = 0; r < kTileRows; ++r) rp[r] = p.a + (i0 + std::min(r, mr - 1)) * p.k;
          product_tile(rp, p.k, p.b_t + j0, p.m_pad, dot_t);
        }
        const T* g_t[kTileRows];  // the group's Gamma rows
        if (has_gamma) factor_gamma_rows(p, i0, mr, j0, gam_t, g_t);
        if (p.single_gaussian)
          gaussian_tile(p, i0, mr, j0, len, dot_t, has_gamma ? g_t : nullptr, m_g,
                        p.value_all + i0, p.lap_all + i0, col_value);
        else
          for (Index r = 0; r < mr; ++r)
            tile_row(p, i0 + r, j0, len, dot_t + r * kTileCols,
                     has_gamma ? g_t[r] : nullptr, m_g + r * kTileCols, buf,
                     p.value_all[i0 + r], p.lap_all[i0 + r], col_value, col_lap);
        for (Index r = mr; r < kTileRows; ++r)
          std::fill(m_g + r * kTileCols, m_g + (r + 1) * kTileCols, T(0));
      }
      if (p.thin_rhs) {
        accumulate_panel(panel, groups, p.rhs_pad + j0 * p.c_pad, p.c_pad, p.acc_all + s0 * p.c_pad);
        if (mirror)
          accumulate_panel_transposed(panel, groups, p.rhs_pad + s0 * p.c_pad, p.c_pad,
                                      s.col_acc.data());
      }
      pending += groups;
      if (mirror && pending >= kFlushGroups) {
        flush_columns(p, j0, len, s);
        pending = 0;
      }
    }
    if (mirror && pending > 0) flush_columns(p, j0, len, s);
  }
}

// SNE rows: squared distances of rows [r0, r1) to all of b (one GEMM), then
// per row three sweeps while the row is in cache: the distances and their
// minimum (the log-sum-exp shift), exp and the row sum, the normalisation.
template <class T>
void sne_rows(const Blas& blas, const PointPair<T>& pts, const T* sq_b, T u, Index r0, Index r1,
              const T* shift,
              const T* scale, T* shift_out, T* sums_out, T* out, std::vector<T>& work) {
  using vec = typename Simd<T>::vec;
  constexpr Index W = Simd<T>::width;
  const Index rows = r1 - r0, m = pts.m, k = pts.k;
  const Index m_vec = m / W * W;  // columns in whole vectors; the tail is done one by one
  // the distance rows live in the output when there is one, else in work
  if (out == nullptr && work.size() < static_cast<std::size_t>(rows * m))
    work.resize(static_cast<std::size_t>(rows * m));
  T* const D = out != nullptr ? out + r0 * m : work.data();
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
TileKernels<T> make_kernels() {
  TileKernels<T> k;
  k.isa = IKDR_STR(IKDR_ARCH_NAME);
  k.simd_width = Simd<T>::width;
  k.pass_task = &pass_task<T>;
  k.pair_task = &pair_task<T>;
  k.sne_rows = &sne_rows<T>;
  return k;
}

}  // namespace

const TileKernels<double>& kernels_double() {
  static const TileKernels<double> k = make_kernels<double>();
  return k;
}
const TileKernels<float>& kernels_float() {
  static const TileKernels<float> k = make_kernels<float>();
  return k;
}

}  // namespace IKDR_CAT(arch_, IKDR_ARCH_NAME)
}  // namespace ikdr
