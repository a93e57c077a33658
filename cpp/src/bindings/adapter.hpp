// What every binding file shares: the array type, SciPy's BLAS, the call
// configuration, the GIL release, the kernel terms and Gamma as the core reads
// them. No algorithm lives in the bindings.
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <atomic>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "ikdr/blas.hpp"
#include "ikdr/common.hpp"
#include "ikdr/ism_products.hpp"

namespace ikdr {
namespace bindings {

namespace py = pybind11;

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
inline const Blas& blas() {
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

inline RunConfig make_config(int n_threads) {
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

// The calls of every Python thread that are inside the core right now (see
// ActivePass). This is process-wide state, and has to be: the fork handler
// runs on the forking thread, which has no other way to know whether another
// thread is inside a parallel region, and a fork copies the whole process.
std::atomic<int>& active_passes();

// Counts one call as inside the core from before the GIL is released to
// after it is taken back. The count only changes while the GIL is held, and
// the fork handler holds it until the fork itself, so what the handler reads
// stays true up to the fork.
class ActivePass {
 public:
  ActivePass() { active_passes().fetch_add(1); }
  ~ActivePass() { active_passes().fetch_sub(1); }
  ActivePass(const ActivePass&) = delete;
  ActivePass& operator=(const ActivePass&) = delete;
};

// Run fn without the GIL (a counted pass); an interrupt leaves the Python error set.
template <class Fn>
void without_gil(Fn&& fn) {
  const ActivePass pass;
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
void check_factor(const Array<T>& f, Index n, const char* name) {
  if (f.ndim() != 2 || f.shape(0) != n)
    throw py::value_error(std::string(name) + " must have one row per point (n x r)");
}

// Gamma as the core reads it: dense (n x m), or factored (rows n x r, columns
// m x r: the row factor itself unless the pass joins two point sets, when
// factor_cols points to the column factor), or absent (all ones).
template <class T>
GammaView<T> gamma_view(const std::optional<Array<T>>& factor, const std::optional<Array<T>>& scale,
                        const std::optional<Array<T>>& dense, Index n, Index m,
                        const std::optional<Array<T>>* factor_cols,
                        const GammaTable<T>* table = nullptr) {
  GammaView<T> gamma;
  if (dense) {
    if (dense->ndim() != 2 || dense->shape(0) != n || dense->shape(1) != m)
      throw py::value_error("dense Gamma must be n x n (rows x columns)");
    gamma.dense = dense->data();
  } else if (factor) {
    check_factor(*factor, n, "the Gamma factor");
    gamma.g_rows = gamma.g_cols = factor->data();
    gamma.rank = factor->shape(1);
    if (factor_cols != nullptr) {
      if (!*factor_cols) throw py::value_error("a factored Gamma between two point sets needs the column factor");
      check_factor(**factor_cols, m, "the column Gamma factor");
      if ((*factor_cols)->shape(1) != gamma.rank)
        throw py::value_error("the row and column Gamma factors must have the same rank");
      gamma.g_cols = (*factor_cols)->data();
    }
    if (scale) {
      if (scale->size() != gamma.rank) throw py::value_error("Gamma scale must have length r");
      gamma.s = scale->data();
    }
  }
  if (table != nullptr) {
    if (!factor || dense || table->n != n || table->m != m || table->rank != gamma.rank)
      throw py::value_error("the Gamma table was made for another Gamma (points or rank differ)");
    gamma.table = table;
  }
  return gamma;
}

// The functions of each binding file, for both dtypes (suffix "f64" / "f32").
template <class T>
void bind_ism_products(py::module_& m, const std::string& suffix);
template <class T>
void bind_landmark_passes(py::module_& m, const std::string& suffix);
// The landmark sweeps' workspace: one class for both dtypes.
void bind_sweep_workspace(py::module_& m);

}  // namespace bindings
}  // namespace ikdr
