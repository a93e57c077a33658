"""Module paths of ikdr 0.1, so that estimators pickled by 0.1 load in this version.

ikdr 0.1 kept every module side by side (``ikdr._ism``, ``ikdr._clustering``,
...); they now live in subpackages. A pickle names the module and class of
every object it holds, so :func:`install` registers a finder that answers
an old module name with a stand-in whose attributes are the objects' new
homes (renamed private classes included). Nothing is imported until a pickle
asks for it, and no new code imports these names.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types

#: old module -> new module
MODULES = {
    "ikdr._ism": "ikdr.reduction.ism",
    "ikdr._kdn": "ikdr.reduction.kdn",
    "ikdr._solver": "ikdr.solver.driver",
    "ikdr._certificate": "ikdr.solver.certificate",
    "ikdr._trust_region": "ikdr.solver.trust_region",
    "ikdr._clustering": "ikdr.cluster.ism_clustering",
    "ikdr._kdac": "ikdr.cluster.kdac",
    "ikdr._knet": "ikdr.cluster.knet",
    "ikdr._mlp": "ikdr._utils.mlp",
    "ikdr._ksvd": "ikdr.ksvd.estimator",
    "ikdr._ksvd_blocks": "ikdr.ksvd.blocks",
    "ikdr._ksvd_solvers": "ikdr.ksvd.solvers",
    "ikdr._ksvd_compat": "ikdr.ksvd.compat",
    "ikdr._ksvd_metrics": "ikdr.ksvd.metrics",
    "ikdr._nystrom": "ikdr.passes.landmarks",
    "ikdr._ism_problem": "ikdr.passes.problem",
}
#: (old module, old name) -> (new module, new name), where the name changed too
NAMES = {
    ("ikdr._ksvd_blocks", "_DenseBlocks"): ("ikdr.ksvd.blocks", "DenseBlocks"),
    ("ikdr._ksvd_blocks", "_SparseBlocks"): ("ikdr.ksvd.blocks", "SparseBlocks"),
    ("ikdr._ksvd_blocks", "_Centered"): ("ikdr.ksvd.blocks", "Centered"),
    ("ikdr._ksvd_blocks", "_ArrayBlocks"): ("ikdr.ksvd.blocks", "ArrayBlocks"),
    ("ikdr._clustering", "AlternationResult"): ("ikdr.cluster.alternation", "AlternationResult"),
    ("ikdr._knet", "KNetTraining"): ("ikdr.cluster.knet_training", "KNetTraining"),
    ("ikdr._nystrom", "ClusteringLandmarks"): ("ikdr.passes.landmark_clustering",
                                               "ClusteringLandmarks"),
}


def _attribute(old_module, name):
    new_module, new_name = NAMES.get((old_module, name), (MODULES[old_module], name))
    try:
        return getattr(importlib.import_module(new_module), new_name)
    except AttributeError:
        raise AttributeError(f"{old_module}.{name} (ikdr 0.1) has no counterpart in this "
                             "version of ikdr; refit the estimator") from None


class _Loader(importlib.abc.Loader):
    def create_module(self, spec):
        module = types.ModuleType(spec.name, f"ikdr 0.1's {spec.name}, moved to "
                                             f"{MODULES[spec.name]}")
        module.__getattr__ = lambda name: _attribute(spec.name, name)
        return module

    def exec_module(self, module):
        pass


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if fullname not in MODULES:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Loader())


def install():
    """Register the finder once (``import ikdr`` calls this)."""
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.append(_Finder())
