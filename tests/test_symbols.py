"""The per-instruction-set code of the compiled core cannot leak into the baseline code.

The tile kernels are compiled once per instruction set (baseline, AVX2,
AVX-512; CMakeLists.txt) and one copy is chosen at run time. If one of those
objects defined a symbol that other objects define too (a weak ``std::``
template instantiation, an inline function that was not inlined), the linker
would keep one definition for every caller, and it may be the AVX-512 one: a
CPU without AVX-512 would then die of SIGILL in code that never asked for it.
So each per-instruction-set object may define, with external linkage, only its
own table accessors (``ikdr::arch_<set>::...``), and the module exports nothing
but its init function. These tests read the symbol tables with ``nm``.
"""
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from ikdr import _core

MODULE = Path(_core.__file__)
SOURCE_ROOT = Path(__file__).resolve().parents[1]
NM = shutil.which("nm")
READELF = shutil.which("readelf")

pytestmark = [
    pytest.mark.skipif(NM is None, reason="nm (binutils) is not installed"),
    pytest.mark.skipif(MODULE.read_bytes()[:4] != b"\x7fELF",
                       reason="the symbol checks read ELF files (Linux builds)"),
]

# nm's letters for defined symbols with external binding: global (upper case),
# unique global (u) and GNU indirect functions (i); W and V are weak
EXTERNAL = set("ABCDGRSTVWui")
WEAK = set("VWu")


def _symbols(path, *options):
    """[(type letter, demangled name)] of the defined symbols of an ELF file."""
    out = subprocess.run([NM, "--defined-only", "-C", *options, str(path)], capture_output=True,
                         text=True, check=True).stdout
    found = []
    for line in out.splitlines():
        match = re.match(r"^(?:[0-9a-fA-F]+\s+)?([A-Za-z])\s+(.+)$", line.strip())
        if match:
            found.append((match.group(1), match.group(2)))
    return found


def test_the_module_exports_only_its_init_function():
    exported = [name for kind, name in _symbols(MODULE, "-D") if kind in EXTERNAL]
    # the linker's own markers of an ELF shared object, where it still writes them
    markers = {"_init", "_fini", "__bss_start", "_edata", "_end"}
    assert [name for name in exported if name not in markers] == ["PyInit__core"], exported


def _build_id(path):
    out = subprocess.run([READELF, "-n", str(path)], capture_output=True, text=True).stdout
    match = re.search(r"Build ID:\s*([0-9a-f]+)", out)
    return match.group(1) if match else None


def _tile_objects():
    """The per-instruction-set objects of the build that made the imported module: a
    build directory under the source tree whose module has the same GNU build id."""
    if READELF is None:
        pytest.skip("readelf (binutils) is not installed")
    wanted = _build_id(MODULE)
    if wanted is None:
        pytest.skip("the module carries no GNU build id")
    for module in sorted(SOURCE_ROOT.glob("build/*/_core*")):
        if _build_id(module) == wanted:
            objects = sorted(module.parent.glob("CMakeFiles/ikdr_tiles_*.dir/**/*.o"))
            if objects:
                return objects
    pytest.skip("the build directory of this module is not under the source tree "
                "(an installed wheel)")


def test_per_instruction_set_objects_define_only_their_tables():
    offenders = []
    for obj in _tile_objects():
        arch = re.match(r"ikdr_tiles_(\w+)\.dir", obj.relative_to(SOURCE_ROOT).parts[3]).group(1)
        for kind, name in _symbols(obj):
            if kind not in EXTERNAL:
                continue
            # the address of the C++ personality routine: data, the same in every object
            if name == "DW.ref.__gxx_personality_v0":
                continue
            if kind in WEAK or not name.startswith(f"ikdr::arch_{arch}::"):
                offenders.append(f"{obj.name} ({arch}): {kind} {name}")
    assert offenders == []
