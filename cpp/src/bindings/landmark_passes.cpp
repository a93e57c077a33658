// Bindings of the landmark passes (landmark_pass.hpp).
#include <cstdint>
#include <memory>

#include "adapter.hpp"
#include "ikdr/landmark_pass.hpp"

namespace ikdr {
namespace bindings {
namespace {

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
                                 Index block_rows, int n_threads, SweepWorkspace* workspace) {
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
  without_gil([&] { landmark_first_sweep<T>(blas(), r, out, cfg, workspace); });
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
                                   Index block_rows, int n_threads, SweepWorkspace* workspace) {
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
  without_gil([&] { landmark_second_sweep<T>(blas(), r, h, phi_p, pv_p, cfg, workspace); });
  return py::make_tuple(phi, pv);
}

}  // namespace

template <class T>
void bind_landmark_passes(py::module_& m, const std::string& suffix) {
  m.def(("landmark_first_sweep_" + suffix).c_str(), &landmark_first_sweep_py<T>, py::arg("x"),
        py::arg("w"), py::arg("v"), py::arg("factor_terms"), py::arg("landmarks"),
        py::arg("negative_reciprocal"), py::arg("products"), py::arg("codes") = py::none(),
        py::arg("proportions") = py::none(), py::arg("gamma_factor") = py::none(),
        py::arg("dense") = false, py::arg("block_rows") = 4096, py::arg("n_threads") = 1,
        py::arg("workspace") = nullptr);
  m.def(("landmark_second_sweep_" + suffix).c_str(), &landmark_second_sweep_py<T>, py::arg("x"),
        py::arg("w"), py::arg("v"), py::arg("factor_terms"), py::arg("landmarks"),
        py::arg("negative_reciprocal"), py::arg("rhs"), py::arg("codes") = py::none(),
        py::arg("proportions") = py::none(), py::arg("gamma_factor") = py::none(),
        py::arg("dense") = false, py::arg("block_rows") = 4096, py::arg("n_threads") = 1,
        py::arg("workspace") = nullptr);
}

void bind_sweep_workspace(py::module_& m) {
  // pickled as a new, empty workspace: it holds scratch memory only, and a
  // process that receives a pass's arguments (a cluster's worker) makes its own
  py::class_<SweepWorkspace>(m, "SweepWorkspace",
                             "The landmark sweeps' scratch memory, kept between calls "
                             "(SweepWorkspace in landmark_pass.hpp)")
      .def(py::init<>())
      .def(py::pickle([](const SweepWorkspace&) { return py::tuple(); },
                      [](const py::tuple&) { return std::make_unique<SweepWorkspace>(); }));
}

template void bind_landmark_passes<double>(py::module_&, const std::string&);
template void bind_landmark_passes<float>(py::module_&, const std::string&);

}  // namespace bindings
}  // namespace ikdr
