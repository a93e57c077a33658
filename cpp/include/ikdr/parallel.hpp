// The core's threads: OpenMP. Every parallel pass of the core is one call of
// parallel_for or parallel_rounds, which runs its tasks in one OpenMP parallel
// region of exactly the call's thread count (RunConfig::n_threads, passed per
// call; the runtime's own setting, OMP_NUM_THREADS or omp_set_num_threads, is
// what the Python layer reads for its default). The runtime keeps its threads
// between regions, so a pass costs a wake-up, not a thread start.
//
// What the layer guarantees, whatever the thread count:
// - results are bitwise the same: a task writes what depends on its index
//   only, and tasks are taken by index (dynamic schedule, so a busy core just
//   takes fewer); reductions are done by the callers in a fixed order;
// - the first exception thrown by a task stops the remaining tasks (they are
//   skipped) and is rethrown on the calling thread after the region: nothing
//   escapes an OpenMP region;
// - the calling thread (the team's master, thread 0) polls cfg.check_interrupt
//   between its tasks, at most every 20 ms; an interrupt stops the pass with
//   `Interrupted`.
//
// Fork: a child forked while the runtime keeps idle threads would hang in its
// first parallel region (libgomp). The Python layer releases them before every
// fork (os.register_at_fork -> openmp_pause_threads()) unless a call of
// another thread is inside the core (the bindings count them).
//
// Built without OpenMP (IKDR_OPENMP undefined), the same functions run the
// tasks in order on the calling thread.
#pragma once
#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>
#include <utility>

#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__)
#include <immintrin.h>
#endif

#include "ikdr/common.hpp"

#if defined(IKDR_OPENMP)
#include <omp.h>
#endif

namespace ikdr {

namespace detail {

// The first error of a team, and the interrupt poll of its master.
class TeamState {
 public:
  explicit TeamState(const RunConfig& cfg) : cfg_(cfg), last_poll_(clock::now()) {}

  bool stopped() const { return stop_.load(std::memory_order_relaxed); }

  template <class Fn>
  void run(Fn&& fn) noexcept {
    if (stopped()) return;
    try {
      fn();
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = std::current_exception();
      stop_.store(true, std::memory_order_relaxed);
    }
  }

  // Called by the master (the calling thread) only.
  void poll() noexcept {
    if (!cfg_.check_interrupt || clock::now() - last_poll_ < std::chrono::milliseconds(20)) return;
    last_poll_ = clock::now();
    run([this] {
      if (cfg_.check_interrupt()) {
        interrupted_ = true;
        stop_.store(true, std::memory_order_relaxed);
      }
    });
  }

  // After the region, on the calling thread.
  void finish() {
    if (error_) std::rethrow_exception(error_);
    if (interrupted_) throw Interrupted();
    if (cfg_.check_interrupt && cfg_.check_interrupt()) throw Interrupted();
  }

 private:
  using clock = std::chrono::steady_clock;
  const RunConfig& cfg_;
  clock::time_point last_poll_;
  std::atomic<bool> stop_{false};
  bool interrupted_ = false;  // written by the master only
  std::exception_ptr error_;
  std::mutex mutex_;
};

// The barrier between the rounds of parallel_rounds. A round of a small pass
// is tens of microseconds of work per worker; OpenMP's barrier sleeps a worker
// that arrives early after the runtime's short spin (Python sets
// GOMP_SPINCOUNT=1000, _native.IDLE_SPIN_COUNT), and the wake-up costs about
// as much as a round (1,000 x 32 Phi pass, 8 rounds, 2 threads, medians of one
// interleaved run: 1.8 ms with OpenMP's barrier, 1.4 ms with this one). Here
// a waiting worker spins with a pause for kSpins turns (a pause is about 27 ns
// on the Zen 4 measured: about 0.1 ms, a round's length), then yields its core
// on every turn (a busy machine, or more workers than cores). Only members of
// one pass wait here, for each other: idle workers between passes still sleep.
// The last of the team's `members` to arrive runs on_complete() before it
// releases the others.
class RoundBarrier {
 public:
  template <class OnComplete>
  void arrive_and_wait(int members, OnComplete&& on_complete) noexcept {
    const unsigned generation = generation_.load(std::memory_order_acquire);
    // acq_rel: each arrival releases its round's writes, the last acquires them all
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == members) {
      arrived_.store(0, std::memory_order_relaxed);
      on_complete();
      generation_.store(generation + 1, std::memory_order_release);
      return;
    }
    for (int turn = 0; generation_.load(std::memory_order_acquire) == generation;) {
      if (turn < kSpins) {
        pause();
        ++turn;
      } else {
        std::this_thread::yield();
      }
    }
  }

 private:
  static constexpr int kSpins = 4096;

  static void pause() noexcept {
#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__)
    _mm_pause();
#endif
  }

  std::atomic<int> arrived_{0};
  std::atomic<unsigned> generation_{0};
};

}  // namespace detail

// The number of workers a parallel call runs its tasks on when its largest
// round has most_tasks tasks: the call's thread count, at most most_tasks, at
// least 1 (1 without OpenMP). Workers are numbered [0, team_size).
inline int team_size(Index most_tasks, const RunConfig& cfg) {
#if defined(IKDR_OPENMP)
  return static_cast<int>(std::max<Index>(1, std::min<Index>(cfg.n_threads, most_tasks)));
#else
  (void)most_tasks;
  (void)cfg;
  return 1;
#endif
}

// Runs rounds of tasks: every task of round r finishes before any task of
// round r + 1 starts (tasks_in(r) of them). One parallel region for all the
// rounds, a barrier between them.
//
// Per-worker state: each worker of the team makes its own slot,
// make_slot(worker), before its first task, and every task it runs gets that
// slot: task(r, t, slot). The slots are made by the call that runs the tasks,
// one per member of the team it actually has, so per-worker scratch can never
// be sized for another number of workers than the one that uses it.
template <class TasksIn, class MakeSlot, class Task>
void parallel_rounds(Index n_rounds, TasksIn&& tasks_in, const RunConfig& cfg,
                     MakeSlot&& make_slot, Task&& task) {
  if (n_rounds <= 0) return;
  Index most = 0;
  for (Index r = 0; r < n_rounds; ++r) most = std::max<Index>(most, tasks_in(r));
  (void)most;  // the team size (unused single-threaded)
  using Slot = std::decay_t<decltype(make_slot(0))>;
  detail::TeamState state(cfg);
#if defined(IKDR_OPENMP)
  const int threads = team_size(most, cfg);
  if (threads > 1) {
    // tasks taken in index order from one counter (a dynamic schedule), which
    // the barrier's last arrival resets for the next round
    std::atomic<Index> next{0};
    detail::RoundBarrier barrier;
#pragma omp parallel num_threads(threads)
    {
      const int worker = omp_get_thread_num();
      const int team = omp_get_num_threads();  // the runtime may give fewer than asked
      // made on the worker's own thread (its memory is touched there first);
      // a worker whose slot failed has stopped the team before any task of its own
      std::optional<Slot> slot;
      state.run([&] { slot.emplace(make_slot(worker)); });
      for (Index r = 0; r < n_rounds; ++r) {
        const Index n_tasks = tasks_in(r);
        for (Index t = next.fetch_add(1, std::memory_order_relaxed); t < n_tasks;
             t = next.fetch_add(1, std::memory_order_relaxed)) {
          state.run([&] { task(r, t, *slot); });
          if (worker == 0) state.poll();
        }
        // the round ends when every worker has arrived (the region's end ends the last)
        if (r + 1 < n_rounds)
          barrier.arrive_and_wait(team, [&next] { next.store(0, std::memory_order_relaxed); });
      }
    }
    state.finish();
    return;
  }
#endif
  std::optional<Slot> slot;
  state.run([&] { slot.emplace(make_slot(0)); });
  for (Index r = 0; r < n_rounds; ++r) {
    const Index n_tasks = tasks_in(r);
    for (Index t = 0; t < n_tasks && !state.stopped(); ++t) {
      state.run([&] { task(r, t, *slot); });
      state.poll();
    }
  }
  state.finish();
}

// Runs task(t, slot) for every t in [0, n_tasks), each worker with its own
// slot made by make_slot(worker): one round of parallel_rounds.
template <class MakeSlot, class Task>
void parallel_for(Index n_tasks, const RunConfig& cfg, MakeSlot&& make_slot, Task&& task) {
  if (n_tasks <= 0) return;
  parallel_rounds(
      1, [n_tasks](Index) { return n_tasks; }, cfg, std::forward<MakeSlot>(make_slot),
      [&task](Index, Index t, auto& slot) { task(t, slot); });
}

// Runs task(t) for every t in [0, n_tasks): tasks without per-worker state.
template <class Task>
void parallel_for(Index n_tasks, const RunConfig& cfg, Task&& task) {
  parallel_for(
      n_tasks, cfg, [](int) { return 0; }, [&task](Index t, int&) { task(t); });
}

// The OpenMP runtime as the bindings report it (runtime.cpp).
struct OpenMPInfo {
  bool enabled = false;  // built with OpenMP
  int version = 0;       // _OPENMP (yyyymm) of the compiler
  int max_threads = 1;   // omp_get_max_threads() of the calling thread
  const char* library = "";  // the runtime's file, where the platform says (dladdr)
};
OpenMPInfo openmp_info();

// omp_get_max_threads() of the calling thread (1 without OpenMP): what the
// Python layer reads for its default thread count before every call, so it
// is not openmp_info(), whose library lookup (dladdr) cost about 6 us a call.
int openmp_max_threads();

// Releases the runtime's idle threads (omp_pause_resource_all(omp_pause_hard)):
// 0 on success, -1 when the runtime refused or lacks it, 1 without OpenMP.
int openmp_pause_threads();

}  // namespace ikdr
