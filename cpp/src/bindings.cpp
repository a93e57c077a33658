// pybind11 adapter for the ikdr core: convert arrays, release the GIL, call,
// return. No algorithm lives here.
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
#include "ikdr/ism_products.hpp"
#include "ikdr/ksvd_blocks.hpp"
#include "ikdr/landmark_pass.hpp"
#include "ikdr/parallel.hpp"
#include "ikdr/tile_kernels.hpp"

namespace py = pybind11;
using namespace ikdr;

namespace {

template <class T>
using Array = py::array_t<T, py::array::c_style | py::array::forcecast>;

template <class Fn>
Fn capsule_function(const py::object& capi, const char* name) {
  py::object cap = capi[name];
  const char* cname = PyCapsule_GetName(cap.ptr());
  void* ptr = PyCapsule_GetPointer(cap.ptr(), cname);
  if (ptr == nullptr) throw py::error_already_set();
  return reinterpret_cast<Fn>(ptr);
}

// SciPy's BLAS, looked up once at import; immutable afterwards.
const Blas& blas() {
  static const Blas table = [] {
    py::object capi = py::module_::import("scipy.linalg.cython_blas").attr("__pyx_capi__");
    Blas b;
    b.dgemm = capsule_function<GemmFn<double>>(capi, "dgemm");
    b.sgemm = capsule_function<GemmFn<float>>(capi, "sgemm");
    b.dsyrk = capsule_function<SyrkFn<double>>(capi, "dsyrk");
    b.ssyrk = capsule_function<SyrkFn<float>>(capi, "ssyrk");
    return b;
  }();
  return table;
}

RunConfig make_config(int n_threads) {
  RunConfig cfg;
  // More threads than a few per core only adds scheduling cost (and a huge
  // request would make the OpenMP runtime start that many threads).
  const int cap = 4 * std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  cfg.n_threads = n_threads > 0 ? std::min(n_threads, cap) : 1;
  cfg.check_interrupt = [] {
    py::gil_scoped_acquire gil;
    return PyErr_CheckSignals() != 0;
  };
  return cfg;
}

// Run fn without the GIL; an interrupt leaves the Python error set.
template <class Fn>
void without_gil(Fn&& fn) {
  bool interrupted = false;
  {
    py::gil_scoped_release release;
    try {
      fn();
    } catch (const Interrupted&) {
      interrupted = true;
    }
  }
  if (interrupted) throw py::error_already_set();
}

template <class T>
Array<T> require_2d(const Array<T>& a, const char* name) {
  if (a.ndim() != 2) throw py::value_error(std::string(name) + " must be a 2-D array");
  return a;
}

// Terms arrive as ikdr._native.KernelTerm records (attributes kind, weight,
// sigma, c, degree, row_scales, col_scales); the kind is the bound TermKind.
// Only types are checked here: the values are checked by the core
// (check_terms in ism_products.hpp), whose std::invalid_argument pybind11
// raises as ValueError.
template <class T>
struct TermList {
  std::vector<Term<T>> terms;
  std::vector<Array<T>> keep_alive;
};

template <class T>
TermList<T> convert_terms(const py::sequence& spec) {
  TermList<T> out;
  for (const auto& item : spec) {
    Term<T> term;
    if (!py::isinstance<TermKind>(item.attr("kind")))
      throw py::type_error("a kernel term's kind must be an ikdr TermKind");
    try {
      term.kind = item.attr("kind").cast<TermKind>();
      term.weight = item.attr("weight").cast<double>();
      term.sigma = item.attr("sigma").cast<double>();
      term.c = item.attr("c").cast<double>();
      term.degree = item.attr("degree").cast<int>();
    } catch (const py::cast_error&) {
      throw py::type_error("a kernel term's weight, sigma and c must be numbers, its degree an int");
    }
    py::object rows = item.attr("row_scales"), cols = item.attr("col_scales");
    if (!rows.is_none()) {
      out.keep_alive.push_back(rows.cast<Array<T>>());
      term.scale_rows = out.keep_alive.back().data();
      term.n_scale_rows = out.keep_alive.back().size();
    }
    if (!cols.is_none()) {
      out.keep_alive.push_back(cols.cast<Array<T>>());
      term.scale_cols = out.keep_alive.back().data();
      term.n_scale_cols = out.keep_alive.back().size();
    }
    out.terms.push_back(term);
  }
  return out;
}

template <class T>
Array<T> kernel_matrix_py(Array<T> a, Array<T> b, const py::sequence& spec, int n_threads) {
  require_2d(a, "A");
  require_2d(b, "B");
  if (a.shape(1) != b.shape(1)) throw py::value_error("A and B must have the same number of columns");
  const bool same = a.ptr() == b.ptr();
  PointPair<T> pts{a.data(), a.shape(0), same ? a.data() : b.data(), b.shape(0), a.shape(1)};
  auto terms = convert_terms<T>(spec);
  Array<T> out({pts.n, pts.m});
  T* o = out.mutable_data();
  RunConfig cfg = make_config(n_threads);
  without_gil([&] { kernel_matrix<T>(blas(), pts, terms.terms, o, cfg); });
  return out;
}

template <class T>
void check_factor(const Array<T>& f, Index n, const char* name) {
  if (f.ndim() != 2 || f.shape(0) != n)
    throw py::value_error(std::string(name) + " must have one row per point (n x r)");
}

// One fused pass between the row points z and the column points z_cols (z
// itself when absent); Gamma's factor rows follow the points (gamma_factor
// for z, gamma_factor_cols for z_cols). In gradient mode the Laplacian's
// diagonal multiplies the row points' right-hand side rhs_rows (rhs itself
// when the two point sets are the same).
template <class T>
py::tuple fused_product_py(Array<T> z, const py::sequence& spec, bool gradient,
                           std::optional<Array<T>> gamma_factor,
                           std::optional<Array<T>> gamma_scale,
                           std::optional<Array<T>> gamma_dense, std::optional<Array<T>> rhs,
                           std::optional<Array<T>> z_cols,
                           std::optional<Array<T>> gamma_factor_cols,
                           std::optional<Array<T>> rhs_rows, int n_threads) {
  require_2d(z, "Z");
  const Index n = z.shape(0);
  const bool pair = z_cols.has_value();
  if (pair) {
    require_2d(*z_cols, "Z_cols");
    if (z_cols->shape(1) != z.shape(1))
      throw py::value_error("the row and column points must have the same number of columns");
  }
  const Index m = pair ? z_cols->shape(0) : n;
  PointPair<T> pts{z.data(), n, pair ? z_cols->data() : z.data(), m, z.shape(1)};
  auto terms = convert_terms<T>(spec);
  GammaView<T> gamma;
  if (gamma_dense) {
    if (gamma_dense->ndim() != 2 || gamma_dense->shape(0) != n || gamma_dense->shape(1) != m)
      throw py::value_error("dense Gamma must be n x n (rows x columns)");
    gamma.dense = gamma_dense->data();
  } else if (gamma_factor) {
    check_factor(*gamma_factor, n, "the Gamma factor");
    gamma.g_rows = gamma.g_cols = gamma_factor->data();
    gamma.rank = gamma_factor->shape(1);
    if (pair) {
      if (!gamma_factor_cols) throw py::value_error("a factored Gamma between two point sets needs the column factor");
      check_factor(*gamma_factor_cols, m, "the column Gamma factor");
      if (gamma_factor_cols->shape(1) != gamma.rank)
        throw py::value_error("the row and column Gamma factors must have the same rank");
      gamma.g_cols = gamma_factor_cols->data();
    }
    if (gamma_scale) {
      if (gamma_scale->size() != gamma.rank) throw py::value_error("Gamma scale must have length r");
      gamma.s = gamma_scale->data();
    }
  }
  const T* r = nullptr;
  const T* r_rows = nullptr;
  Index rc = 0;
  py::object y_obj = py::none();
  T* y = nullptr;
  if (rhs) {
    require_2d(*rhs, "rhs");
    if (rhs->shape(0) != m) throw py::value_error("rhs must have one row per column point");
    r = r_rows = rhs->data();
    rc = rhs->shape(1);
    if (pair && gradient) {
      if (!rhs_rows) throw py::value_error("a gradient pass between two point sets needs rhs_rows");
      require_2d(*rhs_rows, "rhs_rows");
      if (rhs_rows->shape(0) != n || rhs_rows->shape(1) != rc)
        throw py::value_error("rhs_rows must have one row per row point and rhs's columns");
      r_rows = rhs_rows->data();
    }
    Array<T> y_arr({n, rc});
    y = y_arr.mutable_data();
    y_obj = y_arr;
  }
  Array<T> value_sums(n);
  T* vs = value_sums.mutable_data();
  RunConfig cfg = make_config(n_threads);
  without_gil([&] {
    fused_product<T>(blas(), pts, gamma, terms.terms, gradient ? Mode::gradient : Mode::value, r,
                     rc, r_rows, y, vs, cfg);
  });
  return py::make_tuple(y_obj, value_sums);
}


// The rows of a landmark pass (landmark_pass.hpp) and the arrays they point into.
template <class T>
struct LandmarkArgs {
  LandmarkRows<T> rows;
  Array<T> x;
  Array<float> x32;
  std::vector<TermList<T>> terms;
  std::vector<Array<T>> landmarks;
  std::optional<Array<std::int64_t>> codes;
  std::optional<Array<double>> proportions;
  std::optional<Array<T>> factor;
};

template <class T>
void landmark_args(LandmarkArgs<T>& out, const py::array& x_any, const Array<T>& w,
                   const std::optional<Array<T>>& v, const py::sequence& factor_terms,
                   const py::sequence& landmarks, const py::sequence& negative_reciprocal,
                   const std::optional<Array<std::int64_t>>& codes,
                   const std::optional<Array<double>>& proportions,
                   const std::optional<Array<T>>& gamma_factor, Index block_rows) {
  require_2d(w, "W");
  auto& r = out.rows;
  // float64 passes read float32 rows (a memmap) in place, converting block by block
  if (std::is_same<T, double>::value && py::isinstance<py::array_t<float>>(x_any) &&
      (x_any.flags() & py::array::c_style)) {
    out.x32 = x_any.cast<Array<float>>();
    require_2d(out.x32, "X");
    r.x32 = out.x32.data();
    r.n = out.x32.shape(0);
    r.d = out.x32.shape(1);
  } else {
    out.x = Array<T>::ensure(x_any);
    if (!out.x) throw py::error_already_set();
    require_2d(out.x, "X");
    r.x = out.x.data();
    r.n = out.x.shape(0);
    r.d = out.x.shape(1);
  }
  if (w.shape(0) != r.d) throw py::value_error("W must have one row per column of X");
  r.w = w.data();
  r.q = w.shape(1);
  if (v) {
    require_2d(*v, "V");
    if (v->shape(0) != r.d || v->shape(1) < 1) throw py::value_error("V must be d x k, k >= 1");
    r.v = v->data();
    r.k = v->shape(1);
  }
  r.block_rows = block_rows;
  const std::size_t nf = py::len(factor_terms);
  if (py::len(landmarks) != nf || py::len(negative_reciprocal) != nf)
    throw py::value_error("factor_terms, landmarks and negative_reciprocal must have one entry per factor");
  out.terms.reserve(nf);
  out.landmarks.reserve(nf);
  for (std::size_t f = 0; f < nf; ++f) {
    out.terms.push_back(convert_terms<T>(factor_terms[f]));
    out.landmarks.push_back(landmarks[f].template cast<Array<T>>());
    const auto& zl = out.landmarks.back();
    require_2d(zl, "landmarks");
    if (zl.shape(1) != r.q) throw py::value_error("the landmarks must have q columns (those of W)");
    LandmarkFactor<T> fac;
    fac.terms = out.terms.back().terms;
    fac.landmarks = zl.data();
    fac.m = zl.shape(0);
    fac.negative_reciprocal = negative_reciprocal[f].template cast<bool>();
    r.factors.push_back(std::move(fac));
  }
  out.codes = codes;
  out.proportions = proportions;
  out.factor = gamma_factor;
  if (codes.has_value() == gamma_factor.has_value())
    throw py::value_error("give Gamma's class codes (with proportions) or its factor, not both");
  if (codes) {
    if (codes->ndim() != 1 || codes->shape(0) != r.n) throw py::value_error("codes must have one entry per row");
    if (!proportions || proportions->ndim() != 1) throw py::value_error("class codes need the proportions");
    r.gamma.codes = codes->data();
    r.gamma.proportions = proportions->data();
    r.gamma.n_classes = proportions->shape(0);
  } else {
    check_factor(*gamma_factor, r.n, "the Gamma factor");
    r.gamma.factor = gamma_factor->data();
    r.gamma.rank = gamma_factor->shape(1);
  }
}

py::object double_array_or_none(bool wanted, std::vector<Index> shape) {
  if (!wanted) return py::none();
  py::array_t<double> a(shape);
  std::fill(a.mutable_data(), a.mutable_data() + a.size(), 0.0);
  return std::move(a);
}

// First sweep: per factor (P, A or None, Q or None), float64 sums over the rows.
template <class T>
py::list landmark_first_sweep_py(py::array x, Array<T> w, std::optional<Array<T>> v,
                                 const py::sequence& factor_terms, const py::sequence& landmarks,
                                 const py::sequence& negative_reciprocal,
                                 const py::sequence& products,
                                 std::optional<Array<std::int64_t>> codes,
                                 std::optional<Array<double>> proportions,
                                 std::optional<Array<T>> gamma_factor, bool dense,
                                 Index block_rows, int n_threads) {
  LandmarkArgs<T> args;
  landmark_args(args, x, w, v, factor_terms, landmarks, negative_reciprocal, codes, proportions,
                gamma_factor, block_rows);
  const auto& r = args.rows;
  if (py::len(products) != r.factors.size()) throw py::value_error("products: one flag per factor");
  const Index groups = r.gamma.groups(), pc = r.gamma.p_columns();
  const bool classes = r.gamma.classes();
  py::list result;
  std::vector<FirstSweepOut> out;
  for (std::size_t f = 0; f < r.factors.size(); ++f) {
    const Index m = r.factors[f].m;
    const bool prod = products[f].cast<bool>();
    py::object p = double_array_or_none(true, {m, pc});
    py::object a = double_array_or_none(dense && prod, classes ? std::vector<Index>{groups, r.d, m}
                                                               : std::vector<Index>{r.d, groups, m});
    py::object q = double_array_or_none(r.v != nullptr && prod,
                                        classes ? std::vector<Index>{groups, m, r.k}
                                                : std::vector<Index>{m, groups, r.k});
    auto ptr = [](const py::object& o) {
      return o.is_none() ? nullptr : o.cast<py::array_t<double>>().mutable_data();
    };
    out.push_back(FirstSweepOut{ptr(p), ptr(a), ptr(q)});
    result.append(py::make_tuple(p, a, q));
  }
  RunConfig cfg = make_config(n_threads);
  without_gil([&] { landmark_first_sweep<T>(blas(), r, out, cfg); });
  return result;
}

// Second sweep: (phi or None, pv or None), float64 sums over the rows.
template <class T>
py::tuple landmark_second_sweep_py(py::array x, Array<T> w, std::optional<Array<T>> v,
                                   const py::sequence& factor_terms, const py::sequence& landmarks,
                                   const py::sequence& negative_reciprocal, const py::sequence& rhs,
                                   std::optional<Array<std::int64_t>> codes,
                                   std::optional<Array<double>> proportions,
                                   std::optional<Array<T>> gamma_factor, bool dense,
                                   Index block_rows, int n_threads) {
  LandmarkArgs<T> args;
  landmark_args(args, x, w, v, factor_terms, landmarks, negative_reciprocal, codes, proportions,
                gamma_factor, block_rows);
  const auto& r = args.rows;
  if (py::len(rhs) != r.factors.size()) throw py::value_error("rhs: one entry (or None) per factor");
  const Index groups = r.gamma.groups(), width = 1 + r.k;
  std::vector<Array<T>> keep;
  std::vector<const T*> h;
  for (std::size_t f = 0; f < r.factors.size(); ++f) {
    if (rhs[f].is_none()) {
      h.push_back(nullptr);
      continue;
    }
    keep.push_back(rhs[f].template cast<Array<T>>());
    const Index want = groups * r.factors[f].m * width;
    if (keep.back().size() != want)
      throw py::value_error("a right-hand side must hold groups x m x (1 + k) entries");
    h.push_back(keep.back().data());
  }
  py::object phi = double_array_or_none(dense, {r.d, r.d});
  py::object pv = double_array_or_none(r.v != nullptr, {r.d, r.k});
  auto ptr = [](const py::object& o) {
    return o.is_none() ? nullptr : o.cast<py::array_t<double>>().mutable_data();
  };
  double* phi_p = ptr(phi);
  double* pv_p = ptr(pv);
  RunConfig cfg = make_config(n_threads);
  without_gil([&] { landmark_second_sweep<T>(blas(), r, h, phi_p, pv_p, cfg); });
  return py::make_tuple(phi, pv);
}

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

// C = op(A) B (op(A) = A^T when trans_a), chunked over the call's threads.
template <class T>
Array<T> matmul_py(Array<T> a, Array<T> b, bool trans_a, int n_threads) {
  require_2d(a, "A");
  require_2d(b, "B");
  const Index m = trans_a ? a.shape(1) : a.shape(0), k = trans_a ? a.shape(0) : a.shape(1);
  if (b.shape(0) != k) throw py::value_error("the inner dimensions of op(A) and B differ");
  const Index n = b.shape(1);
  Array<T> c({m, n});
  T* out = c.mutable_data();
  RunConfig cfg = make_config(n_threads);
  without_gil([&] { matmul<T>(blas(), trans_a, m, n, k, a.data(), b.data(), out, cfg); });
  return c;
}

template <class T>
void bind_dtype(py::module_& m, const std::string& suffix) {
  m.def(("matmul_" + suffix).c_str(), &matmul_py<T>, py::arg("a"), py::arg("b"),
        py::arg("trans_a") = false, py::arg("n_threads") = 1);
  m.def(("kernel_matrix_" + suffix).c_str(), &kernel_matrix_py<T>, py::arg("a"), py::arg("b"),
        py::arg("terms"), py::arg("n_threads") = 1);
  m.def(("fused_product_" + suffix).c_str(), &fused_product_py<T>, py::arg("z"),
        py::arg("terms"), py::arg("gradient"), py::arg("gamma_factor") = py::none(),
        py::arg("gamma_scale") = py::none(), py::arg("gamma_dense") = py::none(),
        py::arg("rhs") = py::none(), py::arg("z_cols") = py::none(),
        py::arg("gamma_factor_cols") = py::none(), py::arg("rhs_rows") = py::none(),
        py::arg("n_threads") = 1);
  m.def(("gaussian_row_normalisers_" + suffix).c_str(), &gaussian_row_normalisers_py<T>,
        py::arg("a"), py::arg("b"), py::arg("sigma"), py::arg("n_threads") = 1);
  m.def(("shifted_gaussian_matrix_" + suffix).c_str(), &shifted_gaussian_matrix_py<T>,
        py::arg("a"), py::arg("b"), py::arg("sigma"), py::arg("shift") = py::none(),
        py::arg("scale") = py::none(), py::arg("n_threads") = 1);
  m.def(("lowrank_plus_sparse_" + suffix).c_str(), &lowrank_plus_sparse_py<T>, py::arg("dl"),
        py::arg("u"), py::arg("v"), py::arg("indptr"), py::arg("indices"), py::arg("data"),
        py::arg("n_threads") = 1);
  m.def(("landmark_first_sweep_" + suffix).c_str(), &landmark_first_sweep_py<T>, py::arg("x"),
        py::arg("w"), py::arg("v"), py::arg("factor_terms"), py::arg("landmarks"),
        py::arg("negative_reciprocal"), py::arg("products"), py::arg("codes") = py::none(),
        py::arg("proportions") = py::none(), py::arg("gamma_factor") = py::none(),
        py::arg("dense") = false, py::arg("block_rows") = 4096, py::arg("n_threads") = 1);
  m.def(("landmark_second_sweep_" + suffix).c_str(), &landmark_second_sweep_py<T>, py::arg("x"),
        py::arg("w"), py::arg("v"), py::arg("factor_terms"), py::arg("landmarks"),
        py::arg("negative_reciprocal"), py::arg("rhs"), py::arg("codes") = py::none(),
        py::arg("proportions") = py::none(), py::arg("gamma_factor") = py::none(),
        py::arg("dense") = false, py::arg("block_rows") = 4096, py::arg("n_threads") = 1);
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
  std::vector<std::atomic<Index>> counts(static_cast<std::size_t>(std::max(1, cfg.n_threads)));
  without_gil([&] {
    parallel_for(n_tasks, cfg, [&](Index t, int worker) {
      if (t == fail_at) throw std::runtime_error("task " + std::to_string(t) + " failed");
      counts[static_cast<std::size_t>(worker)].fetch_add(1);
      const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(200);
      while (std::chrono::steady_clock::now() < until) {
      }
    });
  });
  std::vector<Index> out;
  for (auto& c : counts) out.push_back(c.load());
  return out;
}

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
  bind_dtype<double>(m, "f64");
  bind_dtype<float>(m, "f32");
  m.def("build_info", &build_info);
  m.def("openmp_max_threads", [] { return openmp_info().max_threads; },
        "omp_get_max_threads() of the calling thread (1 without OpenMP): OMP_NUM_THREADS at "
        "start-up, or what omp_set_num_threads (threadpoolctl) set since");
  m.def("_parallel_check", &parallel_check, py::arg("n_tasks"), py::arg("n_threads"),
        py::arg("fail_at") = -1, "Test hook of the threading layer: tasks run per worker");
  m.def("openmp_pause", &openmp_pause_threads,
        "Release the OpenMP runtime's idle threads (omp_pause_resource_all(omp_pause_hard)), "
        "e.g. before fork: 0 on success, -1 if refused or unavailable, 1 without OpenMP");
  m.attr("BLAS_MIN_WIDTH") = py::int_(kThinWidth);  // wider operands go through the BLAS
  static_assert(kThinWidth == kThinCols, "one width limit for points, factors and right-hand sides");
}
