// Thin products of row blocks (tile_kernels.hpp, TileKernels::thin_product and
// thin_product_transposed): a block of rows of X (rows x d, read in place,
// optionally in another order) times a matrix of a few columns, and the
// transpose, the projections and the X^T O of the landmark passes
// (landmark_pass.cpp). A BLAS call packs the whole block before it multiplies
// it by a few columns (in a landmark pass at 50,000 x 784 float32, q = 10,
// OpenBLAS spent more time packing X than multiplying it); here every vector
// of X is loaded once per product and used by every column in registers.
// Built on simd.hpp; included by passes.cpp.
#pragma once
#include "simd.hpp"

namespace ikdr {
namespace IKDR_CAT(arch_, IKDR_ARCH_NAME) {
namespace {

// The first `count` (< the vector's width) elements of p into a vector, the
// rest zero, without reading past them (the last row of a block may end at the
// end of the data).
template <class T>
static inline typename Simd<T>::vec load_first(const T* p, Index count) {
  using vec = typename Simd<T>::vec;
#if defined(__AVX512F__)
  if constexpr (sizeof(T) == 4)
    return (vec)_mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << count) - 1u), p);
  else
    return (vec)_mm512_maskz_loadu_pd(static_cast<__mmask8>((1u << count) - 1u), p);
#elif defined(__AVX2__)
  if constexpr (sizeof(T) == 4) {
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return (vec)_mm256_maskload_ps(p, _mm256_cmpgt_epi32(_mm256_set1_epi32(int(count)), lanes));
  } else {
    const __m256i lanes = _mm256_setr_epi64x(0, 1, 2, 3);
    return (vec)_mm256_maskload_pd(p, _mm256_cmpgt_epi64(_mm256_set1_epi64x(count), lanes));
  }
#else
  vec v = {};
  for (Index l = 0; l < count; ++l) v[l] = p[l];
  return v;
#endif
}

// The sum of a vector's lanes, in an order fixed by the instruction set.
template <class V>
static inline ElementOf<V> lane_sum(V v) {
#if defined(__AVX512F__)
  if constexpr (sizeof(ElementOf<V>) == 4)
    return _mm512_reduce_add_ps((__m512)v);
  else
    return _mm512_reduce_add_pd((__m512d)v);
#else
  ElementOf<V> s = v[0];
  for (Index l = 1; l < Index(sizeof(V) / sizeof(ElementOf<V>)); ++l) s += v[l];
  return s;
#endif
}

// Rows of X and columns of the product that thin_rows keeps in registers:
// kThinRowGroup x kThinColumnGroup accumulators, a vector of each row and one
// of the matrix (29 of AVX-512's 32 registers; 13 of 16 below).
constexpr Index kThinRowGroup = 4;
constexpr Index kThinPrefetchBytes = Index(96) << 10;
constexpr int kThinColumnGroup = kVectorRegisters >= 32 ? 6 : 2;

// y[r][c] = <x row r, mt row c> for R rows and G columns: vectors along d.
// next (or null): rows further on, fetched into cache meanwhile. Not inlined:
// inlined into its caller, GCC kept the 24 accumulators on the stack.
template <class T, int G>
__attribute__((noinline)) static void thin_rows(const T* const* xr, const T* const* next, Index d,
                                                const T* mt, Index ldm, T* y, Index ldy) {
  using vec = typename Simd<T>::vec;
  constexpr Index W = Simd<T>::width;
  constexpr Index R = kThinRowGroup;
  vec acc[R][G] = {};
  const Index full = d - d % W;
  for (Index e = 0; e < full; e += W) {
    if (next != nullptr && e % (64 / sizeof(T)) == 0)
      for (Index r = 0; r < R; ++r) __builtin_prefetch(next[r] + e, 0, 2);
    vec xv[R];
    for (Index r = 0; r < R; ++r) xv[r] = load(xr[r] + e);
    for (int g = 0; g < G; ++g) {
      const vec m = load(mt + g * ldm + e);
      for (Index r = 0; r < R; ++r) acc[r][g] += xv[r] * m;
    }
  }
  if (full < d) {  // mt is zero padded; x is read only up to d
    vec xv[R];
    for (Index r = 0; r < R; ++r) xv[r] = load_first(xr[r] + full, d - full);
    for (int g = 0; g < G; ++g) {
      const vec m = load(mt + g * ldm + full);
      for (Index r = 0; r < R; ++r) acc[r][g] += xv[r] * m;
    }
  }
  for (Index r = 0; r < R; ++r)
    for (int g = 0; g < G; ++g) y[r * ldy + g] = lane_sum(acc[r][g]);
}

// thin_rows for nc (1 .. G) columns.
template <class T, int G>
static inline void thin_rows_any(Index nc, const T* const* xr, const T* const* next, Index d,
                                 const T* mt, Index ldm, T* y, Index ldy) {
  if constexpr (G > 1) {
    if (nc < G) return thin_rows_any<T, G - 1>(nc, xr, next, d, mt, ldm, y, ldy);
  }
  thin_rows<T, G>(xr, next, d, mt, ldm, y, ldy);
}

// y (rows x cols, row length ldy) = X M: X (rows x d, row length ldx), M
// (d x cols) given transposed, mt (cols x ldm, ldm a multiple of the vector
// width at least d, zero past d).
template <class T>
void thin_product(const T* x, Index ldx, Index rows, Index d, const T* mt, Index ldm, Index cols,
                  T* y, Index ldy) {
  constexpr Index R = kThinRowGroup;
  constexpr int G = kThinColumnGroup;
  T tail[R * G];
  auto row = [&](Index i) { return x + i * ldx; };
  // the rows kThinPrefetchBytes ahead are fetched (into L2) while a group is
  // multiplied: the hardware's own prefetch left the product at a third of
  // the memory's read rate (50,000 x 784 float32; measured best from 32 to
  // 128 KB ahead)
  const Index bytes = ldx * Index(sizeof(T));
  const Index ahead = (kThinPrefetchBytes / (bytes > 0 ? bytes : 1) + R - 1) / R * R;
  // the columns in groups of equal size (20 columns: 5, 5, 5, 5, not 6, 6, 6, 2)
  const Index groups = (cols + G - 1) / G, per_group = groups > 0 ? (cols + groups - 1) / groups : G;
  for (Index i0 = 0; i0 < rows; i0 += R) {
    const Index mr = rows - i0 < R ? rows - i0 : R;
    const T* xr[R];
    const T* next[R];
    for (Index r = 0; r < R; ++r) {
      xr[r] = row(i0 + (r < mr ? r : mr - 1));  // rows past the block repeat its last
      next[r] = row(i0 + ahead + r < rows ? i0 + ahead + r : rows - 1);
    }
    for (Index c0 = 0; c0 < cols; c0 += per_group) {
      const Index nc = cols - c0 < per_group ? cols - c0 : per_group;
      const T* m = mt + c0 * ldm;
      // whole groups straight into y when every row is real, else through `tail`
      T* out = mr == R ? y + i0 * ldy + c0 : tail;
      const Index ld = mr == R ? ldy : G;
      const T* const* fetch = c0 == 0 ? next : nullptr;  // fetched once, by the first columns
      thin_rows_any<T, G>(nc, xr, fetch, d, m, ldm, out, ld);
      if (mr < R)
        for (Index r = 0; r < mr; ++r)
          for (Index c = 0; c < nc; ++c) y[(i0 + r) * ldy + c0 + c] = tail[r * G + c];
    }
  }
}

// Columns of O and vectors of X's features that thin_columns keeps in
// registers: kThinOColumns x 2 accumulators, two vectors of X and a broadcast
// (27 of AVX-512's 32 registers; 15 of 16 below); rows of X per group.
constexpr int kThinOColumns = kVectorRegisters >= 32 ? 12 : 6;
constexpr Index kThinGroupRows = 8;

// yt[c][e0 + v W + l] += sum over the group's rows i of o[i][c] x[i][e0 + v W + l]
// for G columns of O and V (1 or 2) vectors of features from e0, the last one
// holding `last` (<= W) features (yt's rows are padded to whole vectors).
template <class T, int G, int V>
static inline void thin_columns(const T* const* xr, const T* const* orow, Index mr, Index e0,
                                Index last, T* yt, Index ldy) {
  using vec = typename Simd<T>::vec;
  constexpr Index W = Simd<T>::width;
  vec acc[G][V];
  for (int g = 0; g < G; ++g)
    for (int v = 0; v < V; ++v) acc[g][v] = load(yt + g * ldy + e0 + v * W);
  for (Index r = 0; r < mr; ++r) {
    const T* xi = xr[r] + e0;
    vec xv[V];
    for (int v = 0; v < V; ++v)
      xv[v] = v + 1 < V || last == W ? load(xi + v * W) : load_first(xi + v * W, last);
    const T* oi = orow[r];
    for (int g = 0; g < G; ++g) {
      const T s = oi[g];
      for (int v = 0; v < V; ++v) acc[g][v] += s * xv[v];
    }
  }
  for (int g = 0; g < G; ++g)
    for (int v = 0; v < V; ++v) store(yt + g * ldy + e0 + v * W, acc[g][v]);
}

template <class T, int V>
static inline void thin_columns_any(Index g, const T* const* xr, const T* const* orow, Index mr,
                                    Index e0, Index last, T* yt, Index ldy) {
  switch (g) {
#define IKDR_THIN_CASE(G) \
  case G: thin_columns<T, G, V>(xr, orow, mr, e0, last, yt, ldy); break;
    IKDR_THIN_CASE(12) IKDR_THIN_CASE(11) IKDR_THIN_CASE(10) IKDR_THIN_CASE(9)
    IKDR_THIN_CASE(8) IKDR_THIN_CASE(7) IKDR_THIN_CASE(6) IKDR_THIN_CASE(5)
    IKDR_THIN_CASE(4) IKDR_THIN_CASE(3) IKDR_THIN_CASE(2)
#undef IKDR_THIN_CASE
    default: thin_columns<T, 1, V>(xr, orow, mr, e0, last, yt, ldy); break;
  }
}

// yt (cols x d, row length ldy >= d rounded up to whole vectors) = O^T X: X
// (rows x d, row length ldx), row i of O at o + index[i] ldo (index null:
// o + i ldo). Groups of kThinGroupRows rows are multiplied into yt's rows
// feature vector by feature vector, while they are in L1 (one pass over all
// rows per feature vector read the rows in strips, a cache miss per row and
// strip: 5x slower); a group further on is fetched meanwhile. Each entry sums
// over the rows in order, in T.
template <class T>
void thin_product_transposed(const T* x, Index ldx, Index rows, Index d, const T* o, Index ldo,
                             const Index* index, Index cols, T* yt, Index ldy) {
  constexpr Index W = Simd<T>::width;
  constexpr Index R = kThinGroupRows;
  auto row = [&](Index i) { return x + i * ldx; };
  const Index bytes = ldx * Index(sizeof(T));
  const Index ahead = (kThinPrefetchBytes / (bytes > 0 ? bytes : 1) + R - 1) / R * R;
  const Index padded = (d + W - 1) / W * W;
  for (Index c = 0; c < cols; ++c)
    for (Index e = 0; e < padded; ++e) yt[c * ldy + e] = T(0);
  for (Index c0 = 0; c0 < cols; c0 += kThinOColumns) {
    const Index g = cols - c0 < kThinOColumns ? cols - c0 : kThinOColumns;
    for (Index i0 = 0; i0 < rows; i0 += R) {
      const Index mr = rows - i0 < R ? rows - i0 : R;
      const T* xr[R];
      const T* orow[R];
      for (Index r = 0; r < mr; ++r) {
        xr[r] = row(i0 + r);
        orow[r] = o + (index != nullptr ? index[i0 + r] : i0 + r) * ldo + c0;
      }
      if (c0 == 0 && i0 + ahead < rows) {  // a group further on, from memory (thin_product)
        const Index nr = rows - i0 - ahead < R ? rows - i0 - ahead : R;
        for (Index r = 0; r < nr; ++r) {
          const T* next = row(i0 + ahead + r);
          for (Index e = 0; e < d; e += 64 / Index(sizeof(T))) __builtin_prefetch(next + e, 0, 2);
        }
      }
      for (Index e0 = 0; e0 < d; e0 += 2 * W) {
        const Index left = d - e0;
        if (left > W)
          thin_columns_any<T, 2>(g, xr, orow, mr, e0, left >= 2 * W ? W : left - W,
                                 yt + c0 * ldy, ldy);
        else
          thin_columns_any<T, 1>(g, xr, orow, mr, e0, left, yt + c0 * ldy, ldy);
      }
    }
  }
}

// out[j] += sum over rows i, in order, of double(c[i][j]) (j < cols): the
// landmark passes' class sums of kernel rows, a register block of columns at
// a time (the same sums, in the same order, as one row after the other).
template <class T>
void column_sums(const T* c, Index ldc, Index rows, Index cols, double* out) {
  using dvec = typename Simd<double>::vec;
  constexpr Index D = Simd<double>::width;
  constexpr int kBlock = 8;  // vectors of doubles per column block
  Index j0 = 0;
  for (; j0 + kBlock * D <= cols; j0 += kBlock * D) {
    dvec acc[kBlock];
    for (int v = 0; v < kBlock; ++v) acc[v] = load(out + j0 + v * D);
    for (Index i = 0; i < rows; ++i) {
      const T* ci = c + i * ldc + j0;
      for (int v = 0; v < kBlock; ++v) {
        dvec x;
        for (Index l = 0; l < D; ++l) x[l] = double(ci[v * D + l]);
        acc[v] += x;
      }
    }
    for (int v = 0; v < kBlock; ++v) store(out + j0 + v * D, acc[v]);
  }
  for (Index i = 0; i < rows; ++i)
    for (Index j = j0; j < cols; ++j) out[j] += double(c[i * ldc + j]);
}

}  // namespace
}  // namespace IKDR_CAT(arch_, IKDR_ARCH_NAME)
}  // namespace ikdr
