// Shared types of the ikdr core: no Python in here, so the core can be
// embedded elsewhere; the bindings adapt it.
#pragma once
#include <cstddef>
#include <exception>
#include <functional>

namespace ikdr {

using Index = std::ptrdiff_t;

// Polled by the calling thread while a pass runs; returning true aborts the
// computation with `Interrupted` (the bindings turn it into KeyboardInterrupt).
using InterruptCheck = std::function<bool()>;

struct Interrupted : std::exception {
  const char* what() const noexcept override { return "interrupted"; }
};

// How one call runs: its thread count (the OpenMP team of each of its
// parallel regions, see parallel.hpp) and the interrupt poll. Nothing else is global.
struct RunConfig {
  int n_threads = 1;
  InterruptCheck check_interrupt;
};

}  // namespace ikdr
