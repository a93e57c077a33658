#!/usr/bin/env bash
# LLVM's OpenMP runtime for the macOS wheels, into PREFIX (include/omp.h,
# lib/libomp.dylib): conda-forge's llvm-openmp, which is built for old macOS
# deployment targets (11.0 on arm64), through a standalone micromamba. Apple
# clang ships no OpenMP runtime; Homebrew's libomp targets the runner's own
# macOS version, which delocate would refuse for a wheel tagged 11.0.
# CMakeLists.txt reads IKDR_OPENMP_PREFIX=PREFIX; delocate vendors the dylib.
#
#   tools/macos_openmp.sh /tmp/ikdr-openmp
set -euo pipefail
PREFIX=${1:?usage: tools/macos_openmp.sh PREFIX}
case "$(uname -m)" in
  arm64) platform=osx-arm64 ;;
  x86_64) platform=osx-64 ;;
  *) echo "unsupported machine $(uname -m)"; exit 2 ;;
esac
work=$(mktemp -d)
curl -fsSL "https://micro.mamba.pm/api/micromamba/$platform/latest" | tar -xj -C "$work" bin/micromamba
"$work/bin/micromamba" create -y -q -r "$work/root" -p "$PREFIX" -c conda-forge llvm-openmp
ls -l "$PREFIX/include/omp.h" "$PREFIX/lib/libomp.dylib"
