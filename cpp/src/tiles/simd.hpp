// SIMD helpers of the tile kernels: vectors of one register's width, their
// loads and stores, min / max, exp, and sums. Included by the per-instruction-
// set sources (passes.cpp, sne.cpp), which are compiled once per instruction
// set (CMakeLists.txt); IKDR_ARCH_NAME names the namespace of each copy.
//
// The vectors are GCC/Clang vector extensions sized to the instruction set's
// registers. MSVC's cl.exe has no such extension: Windows builds use clang-cl
// (docs/platforms.md), and any other compiler stops here.
#pragma once
#if !defined(__GNUC__) && !defined(__clang__)
#error "ikdr's tile kernels need GCC or Clang vector extensions (on Windows: build with clang-cl)"
#endif
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

// The accessors of a table of entry points in this instruction set's namespace
// (name_double(), name_float()), each built once by make<T>().
#define IKDR_DEFINE_TABLE(Table, name, make)            \
  const Table<double>& name##_double() {                \
    static const Table<double> table = make<double>();  \
    return table;                                       \
  }                                                     \
  const Table<float>& name##_float() {                  \
    static const Table<float> table = make<float>();    \
    return table;                                       \
  }

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

// Vector registers of the instruction set (x86-64: 32 with AVX-512, 16 below),
// which bound the register blocks of the tile products.
constexpr int kVectorRegisters = IKDR_VECTOR_BYTES == 64 ? 32 : 16;

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

// out[0, lanes of v) += v in double, by whole vectors (float32: each half
// widened to a register of doubles). Written per vector: the accumulation
// loop before it uses every register, and a flush taking the row's vectors
// by reference made the compiler spill inside that loop. The float32 halves
// are taken by register operations (a copy through memory, memcpy from &v,
// made GCC keep every accumulator of the loop before it on the stack: a
// store and a reload around each FMA of the float32 tiles).
inline void add_to_double(double* out, vdouble v) { store(out, load(out) + v); }
inline void add_to_double(double* out, vfloat v) {
  constexpr Index H = Simd<double>::width;
#if defined(__AVX512F__) && defined(__AVX512DQ__)
  const __m512 x = (__m512)v;
  add_to_double(out, (vdouble)_mm512_cvtps_pd(_mm512_castps512_ps256(x)));
  add_to_double(out + H, (vdouble)_mm512_cvtps_pd(_mm512_extractf32x8_ps(x, 1)));
#elif defined(__AVX__) && IKDR_VECTOR_BYTES == 32
  const __m256 x = (__m256)v;
  add_to_double(out, (vdouble)_mm256_cvtps_pd(_mm256_castps256_ps128(x)));
  add_to_double(out + H, (vdouble)_mm256_cvtps_pd(_mm256_extractf128_ps(x, 1)));
#elif defined(__SSE2__) && IKDR_VECTOR_BYTES == 16
  const __m128 x = (__m128)v;
  add_to_double(out, (vdouble)_mm_cvtps_pd(x));
  add_to_double(out + H, (vdouble)_mm_cvtps_pd(_mm_movehl_ps(x, x)));
#else
  for (Index l = 0; l < Simd<float>::width; ++l) out[l] += double(v[l]);
#endif
}

}  // namespace
}  // namespace IKDR_CAT(arch_, IKDR_ARCH_NAME)
}  // namespace ikdr
