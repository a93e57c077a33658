// The OpenMP runtime the core was linked with: what it is, and releasing its
// threads before a fork (parallel.hpp).
#include "ikdr/parallel.hpp"

#if defined(IKDR_OPENMP) && (defined(__unix__) || defined(__APPLE__))
#include <dlfcn.h>
#define IKDR_HAVE_DLADDR 1
#endif

namespace ikdr {

OpenMPInfo openmp_info() {
  OpenMPInfo info;
#if defined(IKDR_OPENMP)
  info.enabled = true;
  info.version = _OPENMP;
  info.max_threads = omp_get_max_threads();
#if defined(IKDR_HAVE_DLADDR)
  Dl_info where;
  if (dladdr(reinterpret_cast<void*>(&omp_get_max_threads), &where) != 0 && where.dli_fname != nullptr)
    info.library = where.dli_fname;
#endif
#endif
  return info;
}

int openmp_max_threads() {
#if defined(IKDR_OPENMP)
  return omp_get_max_threads();
#else
  return 1;
#endif
}

int openmp_pause_threads() {
#if defined(IKDR_OPENMP) && defined(IKDR_HAVE_OMP_PAUSE)
  return omp_pause_resource_all(omp_pause_hard);
#elif defined(IKDR_OPENMP)
  return -1;
#else
  return 1;
#endif
}

}  // namespace ikdr
