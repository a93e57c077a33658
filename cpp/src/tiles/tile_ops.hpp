// Tile operations of the ISM passes: the small register-blocked products
// (Gram and Gamma tiles), the accumulation of a Psi tile into the right-hand
// side (and, transposed, for symmetric passes), and the Psi entries of a tile
// row for every kernel. Built on simd.hpp; used by passes.cpp.
#pragma once
#include <type_traits>

#include "simd.hpp"

namespace ikdr {
namespace IKDR_CAT(arch_, IKDR_ARCH_NAME) {
namespace {

// Vectors per tile row that product_tile keeps in registers at a time:
// kTileRows x kProductVectors accumulators, kProductVectors loads and a
// broadcast must fit the register file (32 vector registers with AVX-512, 16
// below it). Four rather than two with AVX-512 halves the broadcasts and the
// loop overhead per FMA (the Gram tile of n = 1,000, q = 20 ran at 68% of the
// FMA rate with two).
constexpr Index kProductVectors = kVectorRegisters >= 32 ? 4 : 2;

// out[r][j] = sum_c rows[r][c] cols_t[c * ld + j] for a kTileRows x kTileCols
// tile: the Gram entries of thin points, or the Gamma entries of a thin factor.
// Each column vector loaded is used by every row of the tile.
template <class T>
inline void product_tile(const T* const* rows, Index width, const T* cols_t, Index ld, T* out) {
  using vec = typename Simd<T>::vec;
  constexpr Index W = Simd<T>::width;
  constexpr Index V = kProductVectors;
  static_assert(kTileCols % (V * W) == 0, "a tile row must hold whole register blocks");
  for (Index j = 0; j < kTileCols; j += V * W) {
    vec acc[kTileRows][V] = {};
    for (Index c = 0; c < width; ++c) {
      const T* col = cols_t + c * ld + j;
      vec b[V];
      for (Index v = 0; v < V; ++v) b[v] = load(col + v * W);
      for (Index r = 0; r < kTileRows; ++r) {
        const T s = rows[r][c];
        for (Index v = 0; v < V; ++v) acc[r][v] += s * b[v];
      }
    }
    for (Index r = 0; r < kTileRows; ++r)
      for (Index v = 0; v < V; ++v) store(out + r * kTileCols + j + v * W, acc[r][v]);
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

// Right-hand-side vectors the accumulations below keep in registers at a
// time: kTileRows x kAccVectors accumulators (or operands), kAccVectors loads
// (or accumulators) and a broadcast must fit the register file: 4 with
// AVX-512's 32 vector registers (a 32-column right-hand side, d = 32, in one
// sweep over the Psi tile instead of 3 + 1 vectors), 3 with 16.
constexpr int kAccVectors = kVectorRegisters >= 32 ? 4 : 3;

// The column chunks of a right-hand side of c_pad columns: kAccVectors
// vectors at a time, then the rest in one chunk of fewer (so at most two
// sweeps of register blocks), each handed to op(Vectors<G>{}, cv) (G vectors
// from column cv).
template <int G>
using Vectors = std::integral_constant<int, G>;

template <class T, class Op>
inline void for_each_chunk(Index c_pad, Op&& op) {
  constexpr Index W = Simd<T>::width;
  Index cv = 0;
  for (; cv + kAccVectors * W <= c_pad; cv += kAccVectors * W) op(Vectors<kAccVectors>{}, cv);
  const Index rest = (c_pad - cv) / W;
  if (kAccVectors > 3 && rest == 3) op(Vectors<3>{}, cv);
  else if (rest == 2) op(Vectors<2>{}, cv);
  else if (rest == 1) op(Vectors<1>{}, cv);
}

// acc rows += M rhs for `groups` consecutive row groups of a Psi panel (each
// kTileRows x kTileCols, acc rows kTileRows apart): column chunks outermost,
// so a chunk of the right-hand side (kTileCols x G vectors) stays in L1 for
// all the groups instead of being read again for every four rows.
template <class T>
inline void accumulate_panel(const T* m, Index groups, const T* rhs, Index c_pad, double* acc) {
  constexpr Index kGroup = kTileRows * kTileCols;
  for_each_chunk<T>(c_pad, [&](auto vectors, Index cv) {
    constexpr int G = decltype(vectors)::value;
    for (Index g = 0; g < groups; ++g)
      accumulate_tile<T, G>(m + g * kGroup, rhs, c_pad, cv, acc + g * kTileRows * c_pad, c_pad);
  });
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
  constexpr Index kGroup = kTileRows * kTileCols;
  const Index ldr = kTileRows * c_pad;
  for_each_chunk<T>(c_pad, [&](auto vectors, Index cv) {
    constexpr int G = decltype(vectors)::value;
    for (Index g = 0; g < groups; ++g)
      accumulate_tile_transposed<T, G>(m + g * kGroup, rhs_rows + g * ldr, c_pad, cv, col, c_pad);
  });
}

// out (rows a < p.c of c x c_pad, double) += scale R_I^T T for the rows
// [r0, r1) of the padded right-hand side R and T (r1 - r0 rows of c_pad
// doubles, a pair task's Psi_IJ R_J): kTileRows rows of out times a chunk of
// columns in registers over all the rows, then added to out.
template <class T>
inline void add_pair_share(const PassPlan<T>& p, Index r0, Index r1, const double* t, double scale,
                           double* out) {
  using vec = typename Simd<double>::vec;
  constexpr Index W = Simd<double>::width;
  const Index cp = p.c_pad;
  for (Index a0 = 0; a0 < p.c; a0 += kTileRows) {
    const Index ma = std::min(kTileRows, p.c - a0);  // rows of out in this block
    for_each_chunk<double>(cp, [&](auto vectors, Index cv) {
      constexpr int G = decltype(vectors)::value;
      vec acc[kTileRows][G] = {};
      for (Index i = r0; i < r1; ++i) {
        const T* x = padded_rhs(p, i) + a0;
        const double* tr = t + (i - r0) * cp + cv;
        vec tv[G];
        for (int g = 0; g < G; ++g) tv[g] = load(tr + g * W);
        for (Index r = 0; r < kTileRows; ++r) {
          const double s = r < ma ? double(x[r]) : 0.0;  // never past the row
          for (int g = 0; g < G; ++g) acc[r][g] += s * tv[g];
        }
      }
      for (Index r = 0; r < ma; ++r)
        for (int g = 0; g < G; ++g) {
          double* o = out + (a0 + r) * cp + cv + g * W;
          store(o, load(o) + scale * acc[r][g]);
        }
    });
  }
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
  static_assert(3 * kTileRows + 4 <= kTileBufferRows, "the tile buffer holds three tiles and four rows");
  T* const dot = s.tile;
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
      g[r] = p.g_table + p.g_class[i0 + std::min(r, mr - 1)] * p.ld_t + j0;
    return;
  }
  const T* rp[kTileRows];
  for (Index r = 0; r < kTileRows; ++r) rp[r] = p.g_rows + (i0 + std::min(r, mr - 1)) * p.rank;
  product_tile(rp, p.rank, p.g_cols_t + j0, p.ld_t, tile);
  for (Index r = 0; r < kTileRows; ++r) g[r] = tile + r * kTileCols;
}

}  // namespace
}  // namespace IKDR_CAT(arch_, IKDR_ARCH_NAME)
}  // namespace ikdr
