// Bindings of the ISM family's passes (ism_products.hpp) and the chunked GEMM (blas.hpp).
#include "adapter.hpp"

namespace ikdr {
namespace bindings {
namespace {

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

// The Gamma table of a factored Gamma for passes of its n points with
// themselves (GammaTable in ism_products.hpp).
template <class T>
GammaTable<T> gamma_table_py(Array<T> factor, std::optional<Array<T>> scale) {
  const Index n = require_2d(factor, "the Gamma factor").shape(0);
  const GammaView<T> gamma = gamma_view(std::optional<Array<T>>(factor), scale,
                                        std::optional<Array<T>>(), n, n,
                                        static_cast<const std::optional<Array<T>>*>(nullptr));
  GammaTable<T> out;
  without_gil([&] { out = gamma_table(gamma, n, n); });
  return out;
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
                           std::optional<Array<T>> rhs_rows, int n_threads,
                           const GammaTable<T>* gamma_table) {
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
  const GammaView<T> gamma = gamma_view(gamma_factor, gamma_scale, gamma_dense, n, m,
                                        pair ? &gamma_factor_cols : nullptr, gamma_table);
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


// Phi(W) V, or the dense Phi(W) when v is None, and the rows of the objective,
// for the points X W: one call (phi_product in ism_products.hpp).
template <class T>
py::tuple phi_product_py(Array<T> x, Array<T> w, std::optional<Array<T>> v,
                         const py::sequence& spec, std::optional<Array<T>> gamma_factor,
                         std::optional<Array<T>> gamma_scale, std::optional<Array<T>> gamma_dense,
                         int n_threads, const GammaTable<T>* gamma_table) {
  require_2d(x, "X");
  require_2d(w, "W");
  const Index n = x.shape(0), d = x.shape(1);
  if (w.shape(0) != d) throw py::value_error("W must have one row per column of X");
  Index k = d;
  if (v) {
    require_2d(*v, "V");
    if (v->shape(0) != d) throw py::value_error("V must have one row per column of X");
    k = v->shape(1);
  }
  auto terms = convert_terms<T>(spec);
  const GammaView<T> gamma = gamma_view(gamma_factor, gamma_scale, gamma_dense, n, n,
                                        static_cast<const std::optional<Array<T>>*>(nullptr),
                                        gamma_table);
  Array<T> out({d, k});
  Array<T> value_sums(n);
  T* o = out.mutable_data();
  T* vs = value_sums.mutable_data();
  RunConfig cfg = make_config(n_threads);
  without_gil([&] {
    phi_product<T>(blas(), x.data(), n, d, w.data(), w.shape(1), v ? v->data() : nullptr, k,
                   gamma, terms.terms, o, vs, cfg);
  });
  return py::make_tuple(out, value_sums);
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

}  // namespace

template <class T>
void bind_ism_products(py::module_& m, const std::string& suffix) {
  m.def(("matmul_" + suffix).c_str(), &matmul_py<T>, py::arg("a"), py::arg("b"),
        py::arg("trans_a") = false, py::arg("n_threads") = 1);
  m.def(("kernel_matrix_" + suffix).c_str(), &kernel_matrix_py<T>, py::arg("a"), py::arg("b"),
        py::arg("terms"), py::arg("n_threads") = 1);
  m.def(("fused_product_" + suffix).c_str(), &fused_product_py<T>, py::arg("z"),
        py::arg("terms"), py::arg("gradient"), py::arg("gamma_factor") = py::none(),
        py::arg("gamma_scale") = py::none(), py::arg("gamma_dense") = py::none(),
        py::arg("rhs") = py::none(), py::arg("z_cols") = py::none(),
        py::arg("gamma_factor_cols") = py::none(), py::arg("rhs_rows") = py::none(),
        py::arg("n_threads") = 1, py::arg("gamma_table") = nullptr);
  m.def(("phi_product_" + suffix).c_str(), &phi_product_py<T>, py::arg("x"), py::arg("w"),
        py::arg("v"), py::arg("terms"), py::arg("gamma_factor") = py::none(),
        py::arg("gamma_scale") = py::none(), py::arg("gamma_dense") = py::none(),
        py::arg("n_threads") = 1, py::arg("gamma_table") = nullptr);
  py::class_<GammaTable<T>>(m, ("GammaTable_" + suffix).c_str(),
                            "A factored Gamma's per-pass preparation, made once "
                            "(GammaTable in ism_products.hpp)")
      .def_property_readonly("n", [](const GammaTable<T>& t) { return t.n; })
      .def_property_readonly("classes", [](const GammaTable<T>& t) { return t.classes; });
  m.def(("gamma_table_" + suffix).c_str(), &gamma_table_py<T>, py::arg("factor"),
        py::arg("scale") = py::none());
}

template void bind_ism_products<double>(py::module_&, const std::string&);
template void bind_ism_products<float>(py::module_&, const std::string&);

}  // namespace bindings
}  // namespace ikdr
