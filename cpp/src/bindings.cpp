// pybind11 adapter for the ikdr core: convert arrays, release the GIL, call,
// return. No algorithm lives here. The module and the SNE blocks, eigen-solvers
// and threading hooks are bound here; the ISM passes in
// bindings/ism_products.cpp, the landmark passes in bindings/landmark_passes.cpp.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "ikdr/blas.hpp"
#include "ikdr/cpm.hpp"
#include "ikdr/eigen.hpp"
#include "ikdr/feature_bins.hpp"
#include "ikdr/ism_products.hpp"
#include "ikdr/ksvd_blocks.hpp"
#include "ikdr/parallel.hpp"
#include "ikdr/tile_kernels.hpp"

#include "bindings/adapter.hpp"

namespace py = pybind11;
using namespace ikdr;
using namespace ikdr::bindings;

namespace ikdr {
namespace bindings {
std::atomic<int>& active_passes() {
  static std::atomic<int> count{0};
  return count;
}
}  // namespace bindings
}  // namespace ikdr

namespace {

template <class T>
PointPair<T> point_pair(const Array<T>& a, const Array<T>& b) {
  require_2d(a, "A");
  require_2d(b, "B");
  if (a.shape(1) != b.shape(1)) throw py::value_error("A and B must have the same number of columns");
  const bool same = a.ptr() == b.ptr();
  return PointPair<T>{a.data(), a.shape(0), same ? a.data() : b.data(), b.shape(0), a.shape(1)};
}

template <class T>
py::tuple gaussian_row_normalisers_py(Array<T> a, Array<T> b, double sigma, int n_threads) {
  const PointPair<T> pts = point_pair(a, b);
  if (!(sigma > 0) || !std::isfinite(sigma)) throw py::value_error("sigma must be positive and finite");
  if (pts.m < 1) throw py::value_error("B must have at least one row");
  Array<T> shift(pts.n), sums(pts.n);
  T* sh = shift.mutable_data();
  T* su = sums.mutable_data();
  RunConfig cfg = make_config(n_threads);
  without_gil([&] { gaussian_row_normalisers<T>(blas(), pts, sigma, sh, su, cfg); });
  return py::make_tuple(shift, sums);
}

// The SNE block. With shift and scale absent they are computed over B's rows
// in the same pass (the block is then row-normalised over its own columns).
template <class T>
Array<T> shifted_gaussian_matrix_py(Array<T> a, Array<T> b, double sigma,
                                    std::optional<Array<T>> shift, std::optional<Array<T>> scale,
                                    int n_threads) {
  const PointPair<T> pts = point_pair(a, b);
  if (!(sigma > 0) || !std::isfinite(sigma)) throw py::value_error("sigma must be positive and finite");
  if (shift.has_value() != scale.has_value())
    throw py::value_error("give both shift and scale, or neither");
  if (shift && (shift->size() != pts.n || scale->size() != pts.n))
    throw py::value_error("shift and scale must have one entry per row of A");
  if (!shift && pts.m < 1) throw py::value_error("B must have at least one row");
  Array<T> out({pts.n, pts.m});
  T* o = out.mutable_data();
  const T* sh = shift ? shift->data() : nullptr;
  const T* sc = scale ? scale->data() : nullptr;
  RunConfig cfg = make_config(n_threads);
  without_gil([&] { shifted_gaussian_matrix<T>(blas(), pts, sigma, sh, sc, o, cfg); });
  return out;
}

template <class T>
Array<T> lowrank_plus_sparse_py(Array<T> dl, Array<T> u, Array<T> v, Array<std::int64_t> indptr,
                                Array<std::int64_t> indices, Array<T> data, int n_threads) {
  const Index n = u.size(), m = v.size();
  if (dl.size() != n || indptr.size() != n + 1) throw py::value_error("dl, u and indptr must have n (+1) entries");
  if (indices.size() != data.size()) throw py::value_error("indices and data must have the same length");
  const std::int64_t* ip = indptr.data();
  const std::int64_t* ix = indices.data();
  if (ip[0] != 0 || ip[n] != static_cast<std::int64_t>(data.size()))
    throw py::value_error("indptr does not match data");
  for (Index i = 0; i < n; ++i)
    if (ip[i + 1] < ip[i]) throw py::value_error("indptr must be non-decreasing");
  for (Index p = 0; p < static_cast<Index>(indices.size()); ++p)
    if (ix[p] < 0 || ix[p] >= m) throw py::value_error("column index out of range");
  Array<T> out({n, m});
  T* o = out.mutable_data();
  RunConfig cfg = make_config(n_threads);
  without_gil([&] {
    lowrank_plus_sparse<T>(n, m, dl.data(), u.data(), v.data(), ip, ix, data.data(), o, cfg);
  });
  return out;
}

// Per-feature bin counts and weight sums (feature_bins.hpp): (counts d x bins,
// sums d x bins x r).
py::tuple feature_bin_sums_py(Array<double> x, Array<double> lo, Array<double> width, Index bins,
                              Array<double> weights, int n_threads) {
  require_2d(x, "X");
  require_2d(weights, "weights");
  const Index n = x.shape(0), d = x.shape(1), r = weights.shape(1);
  if (weights.shape(0) != n) throw py::value_error("weights must have one row per row of X");
  if (lo.size() != d || width.size() != d)
    throw py::value_error("lo and width must have one entry per column of X");
  if (bins < 1) throw py::value_error("bins must be >= 1");
  for (Index j = 0; j < d; ++j)
    if (!(width.data()[j] > 0)) throw py::value_error("width must be positive");
  Array<double> counts({d, bins}), sums({d, bins, r});
  double* c = counts.mutable_data();
  double* s = sums.mutable_data();
  RunConfig cfg = make_config(n_threads);
  without_gil([&] {
    feature_bin_sums(x.data(), n, d, lo.data(), width.data(), bins, weights.data(), r, c, s, cfg);
  });
  return py::make_tuple(counts, sums);
}

// The arguments both eigen-solvers take: A (d x d, finite), q, tol and the
// warm start v0 (d x q), returned as a pointer (null without one).
template <class T>
const T* check_eigen_args(const Array<T>& a, Index q, double tol, const std::optional<Array<T>>& v0) {
  require_2d(a, "A");
  const Index d = a.shape(0);
  if (a.shape(1) != d) throw py::value_error("A must be square");
  if (q < 1 || q > d) throw py::value_error("q must be in [1, d]");
  if (!(tol >= 0) || !std::isfinite(tol)) throw py::value_error("tol must be finite and >= 0");
  for (Index i = 0; i < d * d; ++i)
    if (!std::isfinite(a.data()[i])) throw py::value_error("A contains NaN or infinite values");
  if (!v0) return nullptr;
  if (v0->ndim() != 2 || v0->shape(0) != d || v0->shape(1) != q)
    throw py::value_error("V0 must be d x q");
  return v0->data();
}

// (values (q), vectors (d x q)) as arrays.
template <class T>
std::pair<Array<T>, Array<T>> eigen_arrays(const std::vector<T>& values,
                                           const std::vector<T>& vectors, Index d, Index q) {
  Array<T> vals(q), vecs({d, q});
  std::copy(values.begin(), values.end(), vals.mutable_data());
  std::copy(vectors.begin(), vectors.end(), vecs.mutable_data());
  return {vals, vecs};
}

template <class T>
py::tuple top_eigenpairs_py(Array<T> a, Index q, std::optional<Array<T>> v0, int max_iter,
                            double tol, int oversample) {
  const T* v = check_eigen_args(a, q, tol, v0);
  const Index d = a.shape(0);
  if (max_iter < 1) throw py::value_error("max_iter must be >= 1");
  if (oversample < 0) throw py::value_error("oversample must be >= 0");
  EigenResult<T> res;
  without_gil([&] { res = top_eigenpairs<T>(blas(), a.data(), d, q, v, max_iter, tol, oversample); });
  auto out = eigen_arrays(res.values, res.vectors, d, q);
  return py::make_tuple(out.first, out.second, res.iterations, res.converged, double(res.residual));
}

// The coordinate-wise power method (cpm.hpp).
template <class T>
py::tuple cpm_eigenpairs_py(Array<T> a, Index q, std::optional<Array<T>> v0, Index active,
                            double max_sweeps, double tol) {
  const T* v = check_eigen_args(a, q, tol, v0);
  const Index d = a.shape(0);
  if (active < 0) throw py::value_error("active must be >= 0 (0: automatic)");
  if (!(max_sweeps > 0) || !std::isfinite(max_sweeps)) throw py::value_error("max_sweeps must be positive");
  CpmOptions opt;
  opt.active = active;
  opt.max_sweeps = max_sweeps;
  opt.tol = tol;
  RunConfig cfg = make_config(1);
  CpmResult<T> res;
  without_gil([&] { res = cpm_top_eigenpairs<T>(blas(), a.data(), d, q, v, opt, cfg); });
  auto out = eigen_arrays(res.values, res.vectors, d, q);
  py::dict info;
  info["iterations"] = res.iterations;
  info["sweeps"] = res.sweeps;
  info["converged"] = res.converged;
  info["residual"] = double(res.residual);
  info["gap"] = double(res.gap);
  return py::make_tuple(out.first, out.second, info);
}

template <class T>
void bind_dtype(py::module_& m, const std::string& suffix) {
  bind_ism_products<T>(m, suffix);
  bind_landmark_passes<T>(m, suffix);
  m.def(("gaussian_row_normalisers_" + suffix).c_str(), &gaussian_row_normalisers_py<T>,
        py::arg("a"), py::arg("b"), py::arg("sigma"), py::arg("n_threads") = 1);
  m.def(("shifted_gaussian_matrix_" + suffix).c_str(), &shifted_gaussian_matrix_py<T>,
        py::arg("a"), py::arg("b"), py::arg("sigma"), py::arg("shift") = py::none(),
        py::arg("scale") = py::none(), py::arg("n_threads") = 1);
  m.def(("lowrank_plus_sparse_" + suffix).c_str(), &lowrank_plus_sparse_py<T>, py::arg("dl"),
        py::arg("u"), py::arg("v"), py::arg("indptr"), py::arg("indices"), py::arg("data"),
        py::arg("n_threads") = 1);
  m.def(("top_eigenpairs_" + suffix).c_str(), &top_eigenpairs_py<T>, py::arg("a"), py::arg("q"),
        py::arg("v0") = py::none(), py::arg("max_iter") = 300, py::arg("tol") = 1e-10,
        py::arg("oversample") = 8);
  m.def(("cpm_eigenpairs_" + suffix).c_str(), &cpm_eigenpairs_py<T>, py::arg("a"), py::arg("q"),
        py::arg("v0") = py::none(), py::arg("active") = 0, py::arg("max_sweeps") = 300.0,
        py::arg("tol") = 1e-10);
}

// For the tests of parallel.hpp: runs n_tasks tasks on n_threads threads, the
// task fail_at (if >= 0) throwing; returns how many tasks each worker ran.
std::vector<Index> parallel_check(Index n_tasks, int n_threads, Index fail_at) {
  RunConfig cfg = make_config(n_threads);
  // one counter per possible worker; each worker's slot is its own counter
  std::vector<Index> counts(static_cast<std::size_t>(std::max(1, cfg.n_threads)), 0);
  without_gil([&] {
    parallel_for(
        n_tasks, cfg, [&counts](int worker) { return &counts[static_cast<std::size_t>(worker)]; },
        [&](Index t, Index* count) {
          if (t == fail_at) throw std::runtime_error("task " + std::to_string(t) + " failed");
          ++*count;
          const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(200);
          while (std::chrono::steady_clock::now() < until) {
          }
        });
  });
  return counts;
}

// For the tests of parallel_rounds' barrier: n_rounds rounds of n_tasks tasks
// of uneven length (0 to 40 us); task t of round r reads what every task of
// round r - 1 wrote, counts the entries that are not r, and writes r + 1
// (two buffers, one per parity of r). Returns (that count, the tasks run): (0,
// n_rounds x n_tasks) when every round ran whole and saw the whole of the one
// before it. The task fail_at of round fail_round throws.
std::pair<Index, Index> rounds_check(Index n_rounds, Index n_tasks, int n_threads, Index fail_round,
                                     Index fail_at) {
  RunConfig cfg = make_config(n_threads);
  std::vector<Index> buffers(static_cast<std::size_t>(2 * n_tasks), 0);
  std::atomic<Index> stale{0}, runs{0};
  without_gil([&] {
    parallel_rounds(
        n_rounds, [n_tasks](Index) { return n_tasks; }, cfg, [](int) { return 0; },
        [&](Index r, Index t, int&) {
          if (r == fail_round && t == fail_at)
            throw std::runtime_error("round " + std::to_string(r) + " task " + std::to_string(t) +
                                     " failed");
          const Index* before = buffers.data() + ((r + 1) % 2) * n_tasks;
          Index* now = buffers.data() + (r % 2) * n_tasks;
          const auto until = std::chrono::steady_clock::now() +
                             std::chrono::microseconds(((t * 7 + r) % 5) * 10);
          while (std::chrono::steady_clock::now() < until) {
          }
          Index wrong = 0;
          for (Index j = 0; j < n_tasks; ++j) wrong += before[j] != r;
          stale.fetch_add(wrong, std::memory_order_relaxed);
          runs.fetch_add(1, std::memory_order_relaxed);
          now[t] = r + 1;
        });
  });
  return {stale.load(), runs.load()};
}

// For the tests of blas.hpp's size check: the sizes gemm_row_major hands the
// BLAS for a row-major product of these dimensions (each at least 1), in the
// BLAS's order (m, n, k, lda, ldb, ldc of the column-major call). The BLAS is
// a stand-in that writes them into its output argument and reads nothing.
std::vector<Index> gemm_sizes(Index m, Index n, Index k, Index lda, Index ldb, Index ldc) {
  if (m < 1 || n < 1 || k < 1 || lda < 1 || ldb < 1 || ldc < 1)
    throw py::value_error("every size must be at least 1");
  Blas recorder;
  recorder.dgemm = [](const char*, const char*, const int* mm, const int* nn, const int* kk,
                      const double*, const double*, const int* la, const double*, const int* lb,
                      const double*, double* c, const int* lc) {
    const int sizes[] = {*mm, *nn, *kk, *la, *lb, *lc};
    for (int i = 0; i < 6; ++i) c[i] = sizes[i];
  };
  double out[6] = {};
  gemm_row_major<double>(recorder, false, false, m, n, k, 1.0, nullptr, lda, nullptr, ldb, 0.0,
                         out, ldc);
  return std::vector<Index>(out, out + 6);
}

// Before a fork (the Python fork handler): releases the OpenMP runtime's idle
// threads so that the child can start its own (openmp_pause_threads), unless
// a call of another thread is inside the core: pausing the runtime under a
// running parallel region is not allowed (LLVM's libomp shuts itself down
// and the region would crash). Returns openmp_pause_threads()'s code (0:
// released), or 2 when calls were running and nothing was done; the child
// then runs single-threaded (ikdr._native).
int openmp_pause_before_fork() {
  if (active_passes().load() > 0) return 2;
  return openmp_pause_threads();
}

// In a forked child: the calls counted as running belong to threads that
// the child does not have.
void forget_active_passes() { active_passes().store(0); }

py::dict build_info() {
  py::dict info;
#ifdef IKDR_VERSION
  info["version"] = IKDR_VERSION;
#endif
#ifdef IKDR_COMPILER
  info["compiler"] = IKDR_COMPILER;
#endif
  const OpenMPInfo omp = openmp_info();
  info["openmp"] = omp.enabled;
  if (omp.enabled) {
    info["threading"] = "OpenMP " + std::to_string(omp.version);
    info["openmp_library"] = std::string(omp.library);
  } else {
    info["threading"] = "none: built without OpenMP, every call runs on one thread";
  }
  info["simd"] = tile_kernels_double().isa;
  return info;
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "ikdr C++ core: kernel panels, fused Laplacian products, eigen-solvers";
  py::enum_<TermKind>(m, "TermKind", "Kernel kinds of the fused products (ikdr/ism_products.hpp)")
      .value("linear", TermKind::linear)
      .value("polynomial", TermKind::polynomial)
      .value("gaussian", TermKind::gaussian)
      .value("squared", TermKind::squared)
      .value("multiquadric", TermKind::multiquadric);
  blas();  // resolve SciPy's BLAS now, while we hold the GIL
  bind_sweep_workspace(m);
  bind_dtype<double>(m, "f64");
  bind_dtype<float>(m, "f32");
  m.def("build_info", &build_info);
  m.def("feature_bin_sums_f64", &feature_bin_sums_py, py::arg("x"), py::arg("lo"),
        py::arg("width"), py::arg("bins"), py::arg("weights"), py::arg("n_threads") = 1,
        "Per-feature bin counts (d x bins) and weight sums (d x bins x r)");
  m.def("openmp_max_threads", &openmp_max_threads,
        "omp_get_max_threads() of the calling thread (1 without OpenMP): OMP_NUM_THREADS at "
        "start-up, or what omp_set_num_threads (threadpoolctl) set since");
  m.def("_parallel_check", &parallel_check, py::arg("n_tasks"), py::arg("n_threads"),
        py::arg("fail_at") = -1, "Test hook of the threading layer: tasks run per worker");
  m.def("_rounds_check", &rounds_check, py::arg("n_rounds"), py::arg("n_tasks"),
        py::arg("n_threads"), py::arg("fail_round") = -1, py::arg("fail_at") = -1,
        "Test hook of the threading layer: stale reads across the rounds' barriers");
  m.def("_gemm_sizes", &gemm_sizes, py::arg("m"), py::arg("n"), py::arg("k"), py::arg("lda"),
        py::arg("ldb"), py::arg("ldc"),
        "Test hook of the BLAS size check: the 32-bit sizes a row-major GEMM passes on");
  m.def("openmp_pause_before_fork", &openmp_pause_before_fork,
        "Before a fork: openmp_pause() unless a call of another thread is inside the core "
        "(then 2, and nothing is done)");
  m.def("active_passes", [] { return active_passes().load(); },
        "How many calls (of any thread) are inside the core's passes now");
  m.def("_forget_active_passes", &forget_active_passes,
        "In a forked child: no call of the parent's other threads is running here");
  m.def("openmp_pause", &openmp_pause_threads,
        "Release the OpenMP runtime's idle threads (omp_pause_resource_all(omp_pause_hard)), "
        "e.g. before fork: 0 on success, -1 if refused or unavailable, 1 without OpenMP");
  m.attr("BLAS_MIN_WIDTH") = py::int_(kThinWidth);  // wider operands go through the BLAS
  static_assert(kThinWidth == kThinCols, "one width limit for points, factors and right-hand sides");
}
