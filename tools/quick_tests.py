#!/usr/bin/env python
"""Run ikdr's quick tests, by default against the *installed* ikdr.

One list of quick tests for every user: cibuildwheel's test command
(``[tool.cibuildwheel] test-command`` in pyproject.toml), the release
workflow's sdist check and ``tools/build_wheels_here.sh``.

    python tools/quick_tests.py --installed   # fail if ikdr comes from the source tree
    python tools/quick_tests.py -- -x -k fork # extra pytest arguments after --

The tests run from a temporary directory, so ``import ikdr`` finds the
installed package, not ``src/ikdr``.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: fast tests that cover the compiled core, the estimators, threads/fork, the
#: command line (batch included), pickling, the SIMD levels' agreement and the
#: package layout
QUICK = [
    "tests/test_core.py",
    "tests/test_config.py",
    "tests/test_threads.py",
    "tests/test_architecture.py",
    "tests/test_ism.py",
    "tests/test_pickle.py",
    "tests/test_simd_levels.py",
    "tests/test_cli.py",
    "tests/test_batch.py",
    "tests/test_version.py",
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--installed", action="store_true",
                        help="require ikdr to be imported from outside this source tree")
    parser.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} if args.installed \
            else dict(os.environ)
        probe = subprocess.run([sys.executable, "-c", "import ikdr; print(ikdr.__file__); "
                                "print(ikdr.__version__)"],
                               cwd=tmp, env=env, capture_output=True, text=True)
        if probe.returncode != 0:
            print(probe.stderr, file=sys.stderr)
            return probe.returncode
        location, version = probe.stdout.split()
        print(f"testing ikdr {version} from {location}", flush=True)
        if args.installed and Path(location).resolve().is_relative_to(ROOT / "src"):
            print("error: ikdr is imported from the source tree, not an installed copy",
                  file=sys.stderr)
            return 2
        tests = [str(ROOT / t) for t in QUICK if (ROOT / t).exists()]
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
               "--rootdir", str(ROOT), *tests, *args.pytest_args]
        return subprocess.call(cmd, cwd=tmp, env=env)


if __name__ == "__main__":
    sys.exit(main())
