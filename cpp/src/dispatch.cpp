// Run-time choice of the panel kernels' instruction set. IKDR_SIMD
// (baseline | avx2 | avx512) forces a lower level, e.g. to compare them.
#include <cstdlib>
#include <cstring>
#include <string>

#include "ikdr/panel_ops.hpp"

namespace ikdr {
#define IKDR_DECLARE_ARCH(name)                  \
  namespace arch_##name {                        \
  const PanelOps<double>& ops_double();          \
  const PanelOps<float>& ops_float();            \
  }
IKDR_DECLARE_ARCH(baseline)
IKDR_DECLARE_ARCH(avx2)
IKDR_DECLARE_ARCH(avx512)

namespace {
enum class Isa { baseline, avx2, avx512 };

Isa detect_isa() {
  Isa best = Isa::baseline;
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
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

Isa isa() {
  static const Isa chosen = detect_isa();
  return chosen;
}
}  // namespace

const PanelOps<double>& panel_ops_double() {
  switch (isa()) {
    case Isa::avx512: return arch_avx512::ops_double();
    case Isa::avx2: return arch_avx2::ops_double();
    default: return arch_baseline::ops_double();
  }
}
const PanelOps<float>& panel_ops_float() {
  switch (isa()) {
    case Isa::avx512: return arch_avx512::ops_float();
    case Isa::avx2: return arch_avx2::ops_float();
    default: return arch_baseline::ops_float();
  }
}
template <>
const PanelOps<double>& panel_ops<double>() { return panel_ops_double(); }
template <>
const PanelOps<float>& panel_ops<float>() { return panel_ops_float(); }

}  // namespace ikdr
