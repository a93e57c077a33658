"""The package's layering: one door to the compiled core, used by the kernel layer only."""
import ast
from pathlib import Path

import ikdr

SRC = Path(ikdr.__file__).parent


def _imports(path):
    """Module names a source file imports (relative imports resolved inside ikdr)."""
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = "ikdr." * (node.level > 0) + (node.module or "")
            names.add(base.rstrip("."))
            names.update(f"{base}.{a.name}".replace("..", ".") for a in node.names)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return names


def test_only_the_door_imports_the_compiled_core():
    users = {p.name for p in SRC.glob("*.py") if "ikdr._core" in _imports(p)}
    assert users == {"_native.py"}


def test_only_the_kernel_layer_and_the_eigensolver_use_the_door():
    users = {p.name for p in SRC.glob("*.py")
             if any(n == "ikdr._native" or n.startswith("ikdr._native.") for n in _imports(p))}
    assert users <= {"kernels.py", "_eig.py", "_config.py", "__init__.py"}, users


def test_no_module_calls_private_kernel_functions():
    offenders = []
    for p in SRC.glob("*.py"):
        if p.name in ("kernels.py", "_native.py"):
            continue
        text = p.read_text()
        for private in ("._terms(", "._term(", "_fused(", "_cast_terms("):
            if private in text:
                offenders.append(f"{p.name}: {private}")
    assert not offenders, offenders
