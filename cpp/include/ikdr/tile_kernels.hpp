// The hot loops of every ISM pass, compiled once per instruction set
// (baseline, AVX2, AVX-512; see CMakeLists.txt) and chosen at run time
// (dispatch.cpp). Sources in cpp/src/tiles/: simd.hpp (SIMD helpers),
// tile_ops.hpp (tile operations), passes.cpp (the tasks below). KernelSVD's
// SNE rows share the SIMD helpers but have their own table (sne_kernels.hpp).
//
// A pass is cut into tasks of `task_rows` rows (fixed by the shapes, never by
// the thread count, so every row's result is the same for any number of
// threads). A task walks the columns in chunks of kTileCols; for each group
// of kTileRows rows it forms the tile's Gram and Gamma entries by small
// register-blocked products, turns them into Psi entries (distances, exp,
// Gamma), and multiplies the tile into the right-hand side while it is in L1.
// Only GEMM-shaped work too wide for that (a right-hand side of more than
// kThinCols columns, points or Gamma factors wider than kThinWidth) goes
// through the BLAS on row panels.
//
// A symmetric pass (the points with themselves, Gamma symmetric, a thin or no
// right-hand side) forms each off-diagonal block of Psi once: the pair task
// (I, J), I < J, multiplies the block into the rows of I (Psi_IJ R_J) and,
// transposed, into the rows of J (Psi_IJ^T R_I), which halves the kernel
// evaluations (Gram entries, exp, Gamma entries) of the pass. When R is the
// points' own data and the pass forms the dense Phi = R^T (Psi R + diag R)
// (d at most kThinCols, fewer than a block's rows), the pair task keeps
// R_I^T Psi_IJ R_J (d x d) instead and the transposed half is never
// multiplied: its transpose is R_J^T Psi_JI R_I (PassPlan::block_products).
//
// One copy per instruction set is safe only if the copies share nothing: an
// object compiled for AVX-512 that defined a symbol other objects define too
// (a std:: template instantiation, an inline function the compiler did not
// inline) would offer the linker its copy as the one for every caller, and a
// CPU without AVX-512 would crash in code that never asked for it. So the
// per-instruction-set objects define, with external linkage, only their
// tables (kernels_double(), ...): their tasks write into buffers the driver
// allocated (PassScratch), call the BLAS wrappers out of line (blas.hpp), and
// the helpers of this header that they use have internal linkage (static).
// tests/test_symbols.py reads the objects' symbols and fails if one comes back.
#pragma once
#include <cstdint>
#include <vector>

#include "ikdr/blas.hpp"
#include "ikdr/common.hpp"
#include "ikdr/ism_products.hpp"

namespace ikdr {

constexpr Index kTileRows = 4;    // rows of a register tile
constexpr Index kTileCols = 64;   // columns of an L1 tile (a multiple of 2 x the widest vector)
constexpr Index kThinWidth = 64;  // points / Gamma factors up to this width: products in cache
constexpr Index kThinCols = 64;   // right-hand sides up to this width: accumulated in registers

static inline Index round_up(Index x, Index to) { return (x + to - 1) / to * to; }

// Leading dimension of the transposed thin operands (the column points, the
// Gamma factor's columns, the class table): m_pad plus one cache line. m_pad
// is a multiple of kTileCols, so rows m_pad apart would start a multiple of
// 512 bytes apart (of 4 KiB when m is a multiple of 512: n = 1,000 or 2,000)
// and the k rows a tile reads would compete for the same few L1 sets, each
// evicting the next (measured, n = 1,000, q = 20: the Gram tiles ran at 43%
// of the core's FMA rate). One more line per row moves each row to another
// set: an odd number of lines apart, every row of a tile has its own.
template <class T>
static inline Index transposed_ld(Index m_pad) {
  return m_pad + Index(64 / sizeof(T));
}

// Everything the tasks of one pass read, prepared once by the driver.
template <class T>
struct PassPlan {
  Index n = 0, m = 0, k = 0;
  Index m_pad = 0;                   // m rounded up to kTileCols
  const T* a = nullptr;              // row points, n x k
  const T* b = nullptr;              // column points, m x k
  Index ld_t = 0;                    // row length of b_t, g_cols_t and g_table (transposed_ld)
  const T* b_t = nullptr;            // column points transposed, k x ld_t, zero padded (thin points)
  const T* sq_a = nullptr;           // squared norms of the rows (n)
  const T* sq_b = nullptr;           // ... of the columns (m_pad, zero padded)
  bool self = false;                 // a == b: the diagonal distances are exactly 0
  bool needs_dot = false, needs_dist = false;
  // Gamma: dense rows, or factor rows (already scaled by s) times factor columns
  const T* g_dense = nullptr;        // n x m
  const T* g_rows = nullptr;         // n x r, scaled by s
  const T* g_cols = nullptr;         // m x r
  const T* g_cols_t = nullptr;       // r x ld_t transposed, zero padded (thin factor)
  Index rank = 0;
  // A factor whose rows take few distinct values (class labels): row i of
  // Gamma is row g_class[i] of g_table (classes x ld_t, the distinct rows
  // times the column factor, zero padded), read instead of a rank-r product
  const T* g_table = nullptr;
  const std::int32_t* g_class = nullptr;  // n
  // kernel terms; per term 1 / scale_cols (m_pad, padded with 1) or null
  const Term<T>* terms = nullptr;
  int n_terms = 0;
  const T* const* col_inv_scale = nullptr;
  bool single_gaussian = false;      // one Gaussian member with a scalar bandwidth (fast path)
  const T* scaled_sq_b = nullptr;    // single Gaussian: -u sq_b (m_pad, padded with -inf), u = 1 / (2 sigma^2)
  Mode mode = Mode::value;
  // right-hand side (m x c); for thin ones a zero-padded copy with rows m_pad, columns c_pad
  const T* rhs = nullptr;
  Index c = 0;
  // The padded right-hand side in two parts: rows below rhs_tail_row from
  // rhs_pad, the rest (the last column tile's kTileCols rows, zero padded)
  // from rhs_tail. A right-hand side whose rows are already c_pad long (d = 32
  // with AVX-512 or AVX2) is read in place, only its last tile copied; any
  // other is copied whole (rhs_tail_row = m_pad). Read through padded_rhs().
  const T* rhs_pad = nullptr;
  const T* rhs_tail = nullptr;
  Index rhs_tail_row = 0;
  Index c_pad = 0;
  const T* rhs_rows = nullptr;       // n x c: what the Laplacian diagonal multiplies
  bool thin_rhs = false;
  // outputs (each may be null)
  T* y = nullptr;                    // n x c
  T* value_sums = nullptr;           // n
  T* matrix_out = nullptr;           // n x m (kernel_matrix)
  const Blas* blas = nullptr;
  Index task_rows = 32;
  Index col_block = 0;               // columns of a BLAS panel (multiple of kTileCols)
  // symmetric passes: blocks of block_rows rows (a multiple of kTileCols); the
  // pair tasks accumulate into n_pad-row double arrays, one writer per block at a time
  bool symmetric = false;
  Index block_rows = 0;
  double* acc_all = nullptr;         // n_pad x c_pad: Psi R (thin rhs)
  double* value_all = nullptr;       // n_pad: (Gamma o K) 1
  double* lap_all = nullptr;         // n_pad: 2 (Gamma o b) 1 (gradient mode)
  // A symmetric pass whose right-hand side is the rows' own data R (the dense
  // Phi = R^T (Psi R + diag(lap) R)): pair task (I, J) adds its share
  // S_IJ = R_I^T Psi_IJ R_J (c x c_pad; half of it when I == J) to block I's
  // slot of block_products (blocks x c x c_pad) instead of adding Psi_IJ R_J
  // and Psi_IJ^T R_I to rows (acc_all unused), and Phi = S + S^T for S the
  // sum of the slots. A round of the schedule holds each block once, so a
  // slot has one writer at a time and gains its shares in the rounds' order.
  // The rows of J are never visited twice: (b^2 c + b c^2) multiply-adds per
  // block pair instead of 2 b^2 c.
  double* block_products = nullptr;
};

// Rows [i, i + count) of the padded right-hand side, for i a multiple of 32
// and count at most 32 (a symmetric pass's row groups) or i a multiple of
// kTileCols and count at most kTileCols (a column tile): such a range never
// straddles rhs_tail_row, a multiple of kTileCols.
template <class T>
static inline const T* padded_rhs(const PassPlan<T>& p, Index i) {
  return i < p.rhs_tail_row ? p.rhs_pad + i * p.c_pad : p.rhs_tail + (i - p.rhs_tail_row) * p.c_pad;
}

// Row groups of a pair task's Psi panel: formed kPairGroups groups at a time,
// then multiplied (pair_task).
constexpr Index kPairGroups = 8;
// Rows of kTileCols entries in a task's tile buffer (tile_work in tile_ops.hpp):
// the Gram, Gamma and Psi tiles (kTileRows each) and the work rows of tile_row.
constexpr Index kTileBufferRows = 16;

// The buffers one worker's tasks write, made by the driver (ism_products.cpp)
// for each worker of the pass's team (parallel.hpp's per-worker slots), at the
// sizes of pass_scratch_sizes below. The tile kernels never allocate: their
// objects are compiled per instruction set and must hold no std:: code of
// their own (tests/test_symbols.py). Entries keep what the worker's last task
// left; a task zeroes what it accumulates into.
template <class T>
struct PassScratch {
  T* tile = nullptr;           // kTileBufferRows x kTileCols
  T* dot_panel = nullptr;      // row tasks, points wider than kThinWidth: task_rows x col_block
  T* gamma_panel = nullptr;    // row tasks, a Gamma factor wider than kThinWidth: the same
  T* m_panel = nullptr;        // row tasks, a right-hand side wider than kThinCols: the same;
                               // pair tasks: the Psi panel, kPairGroups x kTileRows x kTileCols
  double* acc = nullptr;       // row tasks, thin rhs: task rows (padded) x c_pad;
                               // pair products: (block_rows + kPairGroups kTileRows) x c_pad
  double* value_sum = nullptr;  // row tasks: task rows (padded to kTileRows)
  double* lap_sum = nullptr;    // the same
  T* col_acc = nullptr;        // pair tasks without pair products, thin rhs: kTileCols x c_pad
  T* col_value = nullptr;      // pair tasks: kTileCols
  T* col_lap = nullptr;        // pair tasks: kTileCols
};

// What a plan's row tasks form through the BLAS on panels (pass_task).
template <class T>
static inline bool wide_points(const PassPlan<T>& p) {
  return p.needs_dot && p.b_t == nullptr;
}
template <class T>
static inline bool wide_gamma(const PassPlan<T>& p) {
  return p.g_rows != nullptr && p.g_cols_t == nullptr;
}
template <class T>
static inline bool panel_rhs(const PassPlan<T>& p) {
  return p.rhs != nullptr && !p.thin_rhs && p.c > 0;
}

// Elements of each buffer of PassScratch that the plan's tasks use (0: none).
struct PassScratchSizes {
  Index tile = 0, dot_panel = 0, gamma_panel = 0, m_panel = 0;  // in T
  Index acc = 0, value_sum = 0, lap_sum = 0;                   // in double
  Index col_acc = 0, col_value = 0, col_lap = 0;               // in T
};

template <class T>
static inline PassScratchSizes pass_scratch_sizes(const PassPlan<T>& p) {
  PassScratchSizes s;
  s.tile = kTileBufferRows * kTileCols;
  if (p.symmetric) {
    s.m_panel = kPairGroups * kTileRows * kTileCols;
    if (p.block_products != nullptr) s.acc = (p.block_rows + kPairGroups * kTileRows) * p.c_pad;
    else if (p.thin_rhs) s.col_acc = kTileCols * p.c_pad;
    s.col_value = s.col_lap = kTileCols;
    return s;
  }
  const Index panel = p.task_rows * p.col_block, rows = round_up(p.task_rows, kTileRows);
  if (wide_points(p)) s.dot_panel = panel;
  if (wide_gamma(p)) s.gamma_panel = panel;
  if (panel_rhs(p)) s.m_panel = panel;
  if (p.thin_rhs) s.acc = rows * p.c_pad;
  s.value_sum = s.lap_sum = rows;
  return s;
}

template <class T>
struct TileKernels {
  const char* isa;
  Index simd_width;  // elements of T in one vector register of this instruction set
  // Rows [task * task_rows, ...) of the pass described by the plan.
  void (*pass_task)(const PassPlan<T>& plan, Index task, PassScratch<T>& scratch);
  // Symmetric passes: the block pair (I, J), I <= J (I == J: the diagonal block).
  void (*pair_task)(const PassPlan<T>& plan, Index I, Index J, PassScratch<T>& scratch);
  // Thin products of a block of rows of X, X (rows x d, row length ldx), for
  // the landmark passes' projections and X^T O (cpp/src/tiles/thin_ops.hpp),
  // on the calling thread.
  // y (rows x cols, row length ldy) = X M, M (d x cols) given transposed as mt
  // (cols x ldm, ldm >= d a multiple of simd_width, zero past d):
  void (*thin_product)(const T* x, Index ldx, Index rows, Index d, const T* mt, Index ldm,
                       Index cols, T* y, Index ldy);
  // yt (cols x d, row length ldy >= d rounded up to a multiple of simd_width)
  // = O^T X, row i of O at o + index[i] ldo (index null: o + i ldo):
  void (*thin_product_transposed)(const T* x, Index ldx, Index rows, Index d, const T* o,
                                  Index ldo, const Index* index, Index cols, T* yt, Index ldy);
  // out[j] += the sum over the rows, in order, of c[i][j] in double (j < cols;
  // row i of c at c + i ldc): the class sums of the landmark passes' kernel rows.
  void (*column_sums)(const T* c, Index ldc, Index rows, Index cols, double* out);
};

const TileKernels<double>& tile_kernels_double();
const TileKernels<float>& tile_kernels_float();
template <class T>
const TileKernels<T>& tile_kernels();

}  // namespace ikdr
