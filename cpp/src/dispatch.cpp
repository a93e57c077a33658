// Run-time choice of the tile kernels' instruction set, for the ISM passes'
// table (tile_kernels.hpp) and the SNE rows' table (sne_kernels.hpp).
// IKDR_SIMD (baseline | avx2 | avx512) forces a lower level, e.g. to compare them.
#include <cstdlib>
#include <string>

#include "ikdr/sne_kernels.hpp"
#include "ikdr/tile_kernels.hpp"

#if defined(IKDR_HAVE_X86_ARCHS) && defined(_MSC_VER)
#include <intrin.h>
#endif

namespace ikdr {
#define IKDR_DECLARE_ARCH(name)                     \
  namespace arch_##name {                           \
  const TileKernels<double>& kernels_double();      \
  const TileKernels<float>& kernels_float();        \
  const SneKernels<double>& sne_kernels_double();   \
  const SneKernels<float>& sne_kernels_float();     \
  }
IKDR_DECLARE_ARCH(baseline)
#if defined(IKDR_HAVE_X86_ARCHS)
IKDR_DECLARE_ARCH(avx2)
IKDR_DECLARE_ARCH(avx512)
#endif

namespace {
enum class Isa { baseline, avx2, avx512 };

#if defined(IKDR_HAVE_X86_ARCHS) && defined(_MSC_VER)
// clang-cl (the Windows build) has no __builtin_cpu_supports without
// compiler-rt: CPUID and the OS's saved register state (XGETBV) instead.
#if defined(__clang__)
__attribute__((target("xsave")))
#endif
Isa cpu_isa() {
  int r[4];
  __cpuid(r, 0);
  const int max_leaf = r[0];
  __cpuid(r, 1);
  const bool osxsave = (r[2] >> 27) & 1, avx = (r[2] >> 28) & 1, fma = (r[2] >> 12) & 1;
  if (!osxsave || !avx || !fma || max_leaf < 7) return Isa::baseline;
  const unsigned long long xcr0 = _xgetbv(0);
  if ((xcr0 & 0x6) != 0x6) return Isa::baseline;  // XMM and YMM state saved by the OS
  __cpuidex(r, 7, 0);
  const bool avx2 = (r[1] >> 5) & 1, avx512f = (r[1] >> 16) & 1, avx512dq = (r[1] >> 17) & 1;
  if (!avx2) return Isa::baseline;
  if (avx512f && avx512dq && (xcr0 & 0xE6) == 0xE6) return Isa::avx512;  // + opmask and ZMM state
  return Isa::avx2;
}
#elif defined(IKDR_HAVE_X86_ARCHS) && defined(__GNUC__)
Isa cpu_isa() {
  __builtin_cpu_init();
  Isa best = Isa::baseline;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) best = Isa::avx2;
  if (best == Isa::avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq"))
    best = Isa::avx512;
  return best;
}
#else
Isa cpu_isa() { return Isa::baseline; }
#endif

Isa detect_isa() {
  Isa best = cpu_isa();
  const char* forced = std::getenv("IKDR_SIMD");
  if (forced != nullptr) {
    const std::string f(forced);
    if (f == "baseline") best = Isa::baseline;
    else if (f == "avx2" && best == Isa::avx512) best = Isa::avx2;
  }
  return best;
}

// Decided once: the CPU does not change under a running process.
Isa isa() {
  static const Isa chosen = detect_isa();
  return chosen;
}
}  // namespace

#if defined(IKDR_HAVE_X86_ARCHS)
#define IKDR_PICK(fn)                                  \
  switch (isa()) {                                     \
    case Isa::avx512: return arch_avx512::fn();        \
    case Isa::avx2: return arch_avx2::fn();            \
    default: return arch_baseline::fn();               \
  }
#else
#define IKDR_PICK(fn) return arch_baseline::fn();
#endif

template <>
const TileKernels<double>& tile_kernels<double>() { IKDR_PICK(kernels_double) }
template <>
const TileKernels<float>& tile_kernels<float>() { IKDR_PICK(kernels_float) }
template <>
const SneKernels<double>& sne_kernels<double>() { IKDR_PICK(sne_kernels_double) }
template <>
const SneKernels<float>& sne_kernels<float>() { IKDR_PICK(sne_kernels_float) }
const TileKernels<double>& tile_kernels_double() { return tile_kernels<double>(); }
const TileKernels<float>& tile_kernels_float() { return tile_kernels<float>(); }

}  // namespace ikdr
