"""Type stub of the compiled core (pybind11, ``cpp/src/bindings.cpp``).

Every entry point exists once per precision (``_f64`` / ``_f32``) and takes
``n_threads``: the threads started for that call (``ikdr._native`` passes
:func:`ikdr.get_num_threads`). Kernel terms are :class:`ikdr._native.KernelTerm`
records (read by attribute). The typed face of the core is :mod:`ikdr._native`.
"""
from typing import Any, Sequence

import numpy.typing as npt

_Array = npt.ArrayLike

class TermKind:
    linear: TermKind
    polynomial: TermKind
    gaussian: TermKind
    squared: TermKind
    multiquadric: TermKind
    __members__: dict[str, TermKind]
    def __init__(self, value: int) -> None: ...
    def __int__(self) -> int: ...
    def __index__(self) -> int: ...
    def __hash__(self) -> int: ...
    def __eq__(self, other: object) -> bool: ...
    @property
    def name(self) -> str: ...
    @property
    def value(self) -> int: ...

#: operands at least this wide go through the BLAS
BLAS_MIN_WIDTH: int

def matmul_f64(a: _Array, b: _Array, trans_a: bool = False,
               n_threads: int = 1) -> npt.NDArray[Any]: ...
def kernel_matrix_f64(a: _Array, b: _Array, terms: Sequence[Any],
                      n_threads: int = 1) -> npt.NDArray[Any]: ...
def fused_product_f64(z: _Array, terms: Sequence[Any], gradient: bool,
                      gamma_factor: _Array | None = None, gamma_scale: _Array | None = None,
                      gamma_dense: _Array | None = None, rhs: _Array | None = None,
                      z_cols: _Array | None = None, gamma_factor_cols: _Array | None = None,
                      rhs_rows: _Array | None = None, n_threads: int = 1
                      ) -> tuple[npt.NDArray[Any] | None, npt.NDArray[Any]]: ...
def gaussian_row_normalisers_f64(a: _Array, b: _Array, sigma: float, n_threads: int = 1
                                  ) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]: ...
def shifted_gaussian_matrix_f64(a: _Array, b: _Array, sigma: float, shift: _Array | None = None,
                                 scale: _Array | None = None, n_threads: int = 1
                                 ) -> npt.NDArray[Any]: ...
def lowrank_plus_sparse_f64(dl: _Array, u: _Array, v: _Array, indptr: _Array, indices: _Array,
                             data: _Array, n_threads: int = 1) -> npt.NDArray[Any]: ...
def top_eigenpairs_f64(a: _Array, q: int, v0: _Array | None = None, max_iter: int = 300,
                        tol: float = 1e-10, oversample: int = 8
                        ) -> tuple[npt.NDArray[Any], npt.NDArray[Any], int, bool, float]: ...

def matmul_f32(a: _Array, b: _Array, trans_a: bool = False,
               n_threads: int = 1) -> npt.NDArray[Any]: ...
def kernel_matrix_f32(a: _Array, b: _Array, terms: Sequence[Any],
                      n_threads: int = 1) -> npt.NDArray[Any]: ...
def fused_product_f32(z: _Array, terms: Sequence[Any], gradient: bool,
                      gamma_factor: _Array | None = None, gamma_scale: _Array | None = None,
                      gamma_dense: _Array | None = None, rhs: _Array | None = None,
                      z_cols: _Array | None = None, gamma_factor_cols: _Array | None = None,
                      rhs_rows: _Array | None = None, n_threads: int = 1
                      ) -> tuple[npt.NDArray[Any] | None, npt.NDArray[Any]]: ...
def gaussian_row_normalisers_f32(a: _Array, b: _Array, sigma: float, n_threads: int = 1
                                  ) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]: ...
def shifted_gaussian_matrix_f32(a: _Array, b: _Array, sigma: float, shift: _Array | None = None,
                                 scale: _Array | None = None, n_threads: int = 1
                                 ) -> npt.NDArray[Any]: ...
def lowrank_plus_sparse_f32(dl: _Array, u: _Array, v: _Array, indptr: _Array, indices: _Array,
                             data: _Array, n_threads: int = 1) -> npt.NDArray[Any]: ...
def top_eigenpairs_f32(a: _Array, q: int, v0: _Array | None = None, max_iter: int = 300,
                        tol: float = 1e-10, oversample: int = 8
                        ) -> tuple[npt.NDArray[Any], npt.NDArray[Any], int, bool, float]: ...

def build_info() -> dict[str, Any]: ...
