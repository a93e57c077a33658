// The ISM passes' tasks (see tile_kernels.hpp): row tasks of any pass and the
// block-pair tasks of symmetric passes, made of the tile operations of
// tile_ops.hpp. Compiled once per instruction set; the table of entry points
// (TileKernels) is chosen at run time by dispatch.cpp.
#include "thin_ops.hpp"
#include "tile_ops.hpp"

namespace ikdr {
namespace IKDR_CAT(arch_, IKDR_ARCH_NAME) {
namespace {

template <class T>
void pass_task(const PassPlan<T>& p, Index task, PassScratch<T>& s) {
  const Index r0 = task * p.task_rows, r1 = std::min(p.n, r0 + p.task_rows);
  const Index rows = r1 - r0, rows_pad = round_up(rows, kTileRows);
  // the panels (task_rows x col_block, PassScratch) hold rows x cbmax here
  const bool points_panel = wide_points(p), gamma_panel = wide_gamma(p), rhs_panel = panel_rhs(p);
  const Index cbmax = p.col_block;
  const TileWork<T> work = tile_work(p, s);
  T* const dot_t = work.dot;
  T* const gam_t = work.gamma;
  T* const m_t = work.m;
  const RowBuffers<T>& buf = work.rows;
  if (p.thin_rhs) std::fill(s.acc, s.acc + rows_pad * p.c_pad, 0.0);
  std::fill(s.value_sum, s.value_sum + rows_pad, 0.0);
  std::fill(s.lap_sum, s.lap_sum + rows_pad, 0.0);

  for (Index c0 = 0; c0 < p.m; c0 += cbmax) {
    const Index cb = std::min(cbmax, p.m - c0);
    if (points_panel)
      gemm_row_major<T>(*p.blas, false, true, rows, cb, p.k, T(1), p.a + r0 * p.k, p.k,
                        p.b + c0 * p.k, p.k, T(0), s.dot_panel, cbmax);
    if (gamma_panel)
      gemm_row_major<T>(*p.blas, false, true, rows, cb, p.rank, T(1), p.g_rows + r0 * p.rank,
                        p.rank, p.g_cols + c0 * p.rank, p.rank, T(0), s.gamma_panel, cbmax);
    for (Index j0 = c0; j0 < c0 + cb; j0 += kTileCols) {
      const Index len = std::min(kTileCols, c0 + cb - j0);
      for (Index i0 = r0; i0 < r1; i0 += kTileRows) {
        const Index mr = std::min(kTileRows, r1 - i0);
        const Index li = i0 - r0;  // row of the task
        if (p.needs_dot) {
          if (points_panel) {
            copy_tile(s.dot_panel + li * cbmax + (j0 - c0), cbmax, mr, len, dot_t);
          } else {
            const T* rp[kTileRows];
            for (Index r = 0; r < kTileRows; ++r) rp[r] = p.a + (i0 + std::min(r, mr - 1)) * p.k;
            product_tile(rp, p.k, p.b_t + j0, p.ld_t, dot_t);
          }
        }
        bool has_gamma = true;
        const T* g_t[kTileRows];  // the group's Gamma rows
        if (p.g_dense != nullptr || gamma_panel) {
          if (p.g_dense != nullptr)
            copy_tile(p.g_dense + i0 * p.m + j0, p.m, mr, len, gam_t);
          else
            copy_tile(s.gamma_panel + li * cbmax + (j0 - c0), cbmax, mr, len, gam_t);
          for (Index r = 0; r < kTileRows; ++r) g_t[r] = gam_t + r * kTileCols;
        } else if (p.g_rows != nullptr) {
          factor_gamma_rows(p, i0, mr, j0, gam_t, g_t);
        } else {
          has_gamma = false;
        }
        if (p.single_gaussian)
          gaussian_tile(p, i0, mr, j0, len, dot_t, has_gamma ? g_t : nullptr, m_t,
                        s.value_sum + li, s.lap_sum + li, static_cast<T*>(nullptr));
        else
          for (Index r = 0; r < mr; ++r)
            tile_row(p, i0 + r, j0, len, dot_t + r * kTileCols,
                     has_gamma ? g_t[r] : nullptr, m_t + r * kTileCols, buf,
                     s.value_sum[li + r], s.lap_sum[li + r]);
        for (Index r = mr; r < kTileRows; ++r)
          std::fill(m_t + r * kTileCols, m_t + (r + 1) * kTileCols, T(0));
        if (p.thin_rhs) {
          accumulate_panel(m_t, 1, padded_rhs(p, j0), p.c_pad, s.acc + li * p.c_pad);
        } else if (rhs_panel) {
          for (Index r = 0; r < mr; ++r)
            std::copy(m_t + r * kTileCols, m_t + r * kTileCols + len,
                      s.m_panel + (li + r) * cbmax + (j0 - c0));
        } else if (p.matrix_out != nullptr) {
          for (Index r = 0; r < mr; ++r)
            std::copy(m_t + r * kTileCols, m_t + r * kTileCols + len,
                      p.matrix_out + (i0 + r) * p.m + j0);
        }
      }
    }
    if (rhs_panel)
      gemm_row_major<T>(*p.blas, false, false, rows, p.c, cb, T(1), s.m_panel, cbmax,
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
  if (p.thin_rhs && p.block_products == nullptr) {
    for (Index j = 0; j < len; ++j) {
      double* out = p.acc_all + (j0 + j) * p.c_pad;
      const T* in = s.col_acc + j * p.c_pad;
      for (Index c = 0; c < p.c_pad; ++c) out[c] += double(in[c]);
    }
    std::fill(s.col_acc, s.col_acc + kTileCols * p.c_pad, T(0));
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
      std::fill(s.col_lap, s.col_lap + kTileCols, T(0));
    }
  }
  std::fill(s.col_value, s.col_value + kTileCols, T(0));
}

// Block pair (I, J) of a symmetric pass (thin points and Gamma factor, a thin
// or no right-hand side; see tile_kernels.hpp). Rows of I gain Psi_IJ R_J and
// their row sums; when I < J the rows of J gain Psi_IJ^T R_I and the column
// sums, accumulated over 16 row groups in T (as a tile row is over its 64
// columns) and then in double. With pair products (a dense Phi's pass) the
// rows of I gain Psi_IJ R_J in the task's own buffer, and R_I^T times it goes
// to block I's slot (PassPlan::block_products); the rows of J gain only the
// column sums.
template <class T>
void pair_task(const PassPlan<T>& p, Index I, Index J, PassScratch<T>& s) {
  const Index bs = p.block_rows;
  const Index r0 = I * bs, r1 = std::min(p.n, r0 + bs);
  const Index c0 = J * bs, c1 = std::min(p.n, c0 + bs);
  const bool mirror = I != J;
  const bool pair_products = p.block_products != nullptr;
  if (!mirror && !pair_products) {
    // The block's accumulators, zeroed by its diagonal task: run_symmetric's
    // first round, before any task adds to them (the last block's reach the
    // padded end: its last row group may add zero rows past n).
    const Index z1 = r1 == p.n ? p.m_pad : r1;
    if (p.acc_all != nullptr) std::fill(p.acc_all + r0 * p.c_pad, p.acc_all + z1 * p.c_pad, 0.0);
    std::fill(p.value_all + r0, p.value_all + z1, 0.0);
    std::fill(p.lap_all + r0, p.lap_all + z1, 0.0);
  }
  const TileWork<T> work = tile_work(p, s);
  T* const dot_t = work.dot;
  T* const gam_t = work.gamma;
  const RowBuffers<T>& buf = work.rows;
  // pair products (see PassPlan): Psi_IJ R_J into the task's own rows, then
  // R_I^T times them; no transposed accumulation
  constexpr Index kSubGroups = kPairGroups;
  if (pair_products) std::fill(s.acc, s.acc + (r1 - r0 + kSubGroups * kTileRows) * p.c_pad, 0.0);
  if (mirror) {
    if (p.thin_rhs && !pair_products) std::fill(s.col_acc, s.col_acc + kTileCols * p.c_pad, T(0));
    std::fill(s.col_value, s.col_value + kTileCols, T(0));
    std::fill(s.col_lap, s.col_lap + kTileCols, T(0));
  }
  // Psi is formed for kSubGroups row groups at a time (a panel that stays in
  // L1) and then multiplied, chunk by chunk of the right-hand side's columns;
  // the transposed sums go to double every kFlushGroups groups (64 rows, as a
  // tile row's 64 columns in the forward direction).
  constexpr Index kFlushGroups = 16;
  constexpr Index kGroup = kTileRows * kTileCols;
  T* const panel = s.m_panel;  // kSubGroups x kGroup
  const bool has_gamma = p.g_rows != nullptr;
  T* const col_value = mirror ? s.col_value : nullptr;
  T* const col_lap = mirror ? s.col_lap : nullptr;
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
          product_tile(rp, p.k, p.b_t + j0, p.ld_t, dot_t);
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
        double* rows = pair_products ? s.acc + (s0 - r0) * p.c_pad : p.acc_all + s0 * p.c_pad;
        accumulate_panel(panel, groups, padded_rhs(p, j0), p.c_pad, rows);
        if (mirror && !pair_products)
          accumulate_panel_transposed(panel, groups, padded_rhs(p, s0), p.c_pad,
                                      s.col_acc);
      }
      pending += groups;
      if (mirror && pending >= kFlushGroups) {
        flush_columns(p, j0, len, s);
        pending = 0;
      }
    }
    if (mirror && pending > 0) flush_columns(p, j0, len, s);
  }
  if (pair_products) {
    if (!mirror) {
      // the diagonal task runs last for its rows (run_symmetric): their
      // Laplacian sums are complete, and diag(lap) R_I joins Psi_II R_I
      for (Index i = r0; i < r1; ++i) {
        const double l = p.lap_all[i];
        const T* x = padded_rhs(p, i);
        double* row = s.acc + (i - r0) * p.c_pad;
        for (Index c = 0; c < p.c_pad; ++c) row[c] += l * double(x[c]);
      }
    }
    // the diagonal block's share is counted twice by S + S^T: half of it here
    add_pair_share(p, r0, r1, s.acc, mirror ? 1.0 : 0.5,
                   p.block_products + I * p.c * p.c_pad);
  }
}

template <class T>
TileKernels<T> make_kernels() {
  TileKernels<T> k;
  k.isa = IKDR_STR(IKDR_ARCH_NAME);
  k.simd_width = Simd<T>::width;
  k.pass_task = &pass_task<T>;
  k.pair_task = &pair_task<T>;
  k.thin_product = &thin_product<T>;
  k.thin_product_transposed = &thin_product_transposed<T>;
  k.column_sums = &column_sums<T>;
  return k;
}

}  // namespace

IKDR_DEFINE_TABLE(TileKernels, kernels, make_kernels)

}  // namespace IKDR_CAT(arch_, IKDR_ARCH_NAME)
}  // namespace ikdr
