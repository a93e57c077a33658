// Run-time choice of the tile kernels' instruction set. IKDR_SIMD
// (baseline | avx2 | avx512) forces a lower level, e.g. to compare them.
#include <cstdlib>
#include <string>

#include "ikdr/tile_kernels.hpp"

namespace ikdr {
#define IKDR_DECLARE_ARCH(name)                \
  namespace arch_##name {                      \
  const TileKernels<double>& kernels_double(); \
  const TileKernels<float>& kernels_float();   \
  }
IKDR_DECLARE_ARCH(baseline)
#if defined(IKDR_HAVE_X86_ARCHS)
IKDR_DECLARE_ARCH(avx2)
IKDR_DECLARE_ARCH(avx512)
#endif

namespace {
enum class Isa { baseline, avx2, avx512 };

Isa detect_isa() {
  Isa best = Isa::baseline;
#if defined(IKDR_HAVE_X86_ARCHS) && defined(__GNUC__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) best = Isa::avx2;
  if (best == Isa::avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq"))
    best = Isa::avx512;
#endif
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

template <>
const TileKernels<double>& tile_kernels<double>() {
  switch (isa()) {
#if defined(IKDR_HAVE_X86_ARCHS)
    case Isa::avx512: return arch_avx512::kernels_double();
    case Isa::avx2: return arch_avx2::kernels_double();
#endif
    default: return arch_baseline::kernels_double();
  }
}
template <>
const TileKernels<float>& tile_kernels<float>() {
  switch (isa()) {
#if defined(IKDR_HAVE_X86_ARCHS)
    case Isa::avx512: return arch_avx512::kernels_float();
    case Isa::avx2: return arch_avx2::kernels_float();
#endif
    default: return arch_baseline::kernels_float();
  }
}
const TileKernels<double>& tile_kernels_double() { return tile_kernels<double>(); }
const TileKernels<float>& tile_kernels_float() { return tile_kernels<float>(); }

}  // namespace ikdr
