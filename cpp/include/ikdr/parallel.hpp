// Threads for one call. Every parallel pass of the core is one call of
// parallel_for: it starts n_threads - 1 std::threads, runs tasks on them and
// on the calling thread, joins them and returns. No pool outlives the call,
// so a process that forks after using ikdr gets a child that works (a
// persistent OpenMP pool does not survive fork), and the core links no
// OpenMP runtime of its own. Starting a thread costs tens of microseconds,
// so small passes run on the calling thread alone.
#pragma once
#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "ikdr/common.hpp"

namespace ikdr {

// Runs task(t, worker) for every t in [0, n_tasks), worker in [0, threads):
// one round of parallel_rounds below. Tasks are taken in order from a shared
// counter (a busy core simply takes fewer of them); what a task writes must
// depend on t only, which keeps results independent of the thread count. The
// first exception thrown by any task stops the others and is rethrown here, on
// the calling thread; the calling thread polls cfg.check_interrupt between its
// tasks (at most every 20 ms) and an interrupt stops the pass with `Interrupted`.
template <class Task>
void parallel_for(Index n_tasks, const RunConfig& cfg, Task&& task);

// Runs rounds of tasks: every task of round r finishes before any task of
// round r + 1 starts (tasks_in(r) of them; task(r, t, worker)). The threads
// are started once for all the rounds and wait for each other at the end of
// every round, so a pass of many short rounds does not pay a thread start per
// round. Exceptions and interrupts as in parallel_for: the first error stops
// the remaining work (every thread still reaches every round's end, so none
// waits forever) and is rethrown here.
template <class TasksIn, class Task>
void parallel_rounds(Index n_rounds, TasksIn&& tasks_in, const RunConfig& cfg, Task&& task) {
  if (n_rounds <= 0) return;
  Index most = 0;
  for (Index r = 0; r < n_rounds; ++r) most = std::max<Index>(most, tasks_in(r));
  const int threads = static_cast<int>(std::max<Index>(1, std::min<Index>(cfg.n_threads, most)));
  std::vector<std::atomic<Index>> next(static_cast<std::size_t>(n_rounds));
  for (auto& c : next) c.store(0, std::memory_order_relaxed);
  std::atomic<int> team{0};           // threads that started: set once all are started
  std::atomic<int> arrived{0};
  std::atomic<Index> round_done{-1};  // the last round every thread has finished
  std::atomic<bool> stop{false};
  bool interrupted = false;
  std::exception_ptr error;
  std::mutex error_mutex;
  auto work = [&](int worker) {
    using clock = std::chrono::steady_clock;
    auto last_poll = clock::now();
    int members;
    while ((members = team.load(std::memory_order_acquire)) == 0) std::this_thread::yield();
    for (Index r = 0; r < n_rounds; ++r) {
      const Index n_tasks = tasks_in(r);
      try {
        while (!stop.load(std::memory_order_relaxed)) {
          const Index t = next[static_cast<std::size_t>(r)].fetch_add(1, std::memory_order_relaxed);
          if (t >= n_tasks) break;
          task(r, t, worker);
          if (worker == 0 && cfg.check_interrupt &&
              clock::now() - last_poll > std::chrono::milliseconds(20)) {
            last_poll = clock::now();
            if (cfg.check_interrupt()) {
              interrupted = true;
              stop.store(true);
            }
          }
        }
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        stop.store(true);
      }
      // end of round r: the last thread to arrive releases the others
      if (arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == members) {
        arrived.store(0, std::memory_order_relaxed);
        round_done.store(r, std::memory_order_release);
      } else {
        while (round_done.load(std::memory_order_acquire) < r) std::this_thread::yield();
      }
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(threads - 1));
  int started = 1;
  for (int w = 1; w < threads; ++w) {
    try {
      pool.emplace_back(work, w);
      ++started;
    } catch (const std::system_error&) {
      break;
    }
  }
  team.store(started, std::memory_order_release);  // fewer than planned if the system refused some
  work(0);
  for (auto& th : pool) th.join();
  if (error) std::rethrow_exception(error);
  if (interrupted) throw Interrupted();
  if (cfg.check_interrupt && cfg.check_interrupt()) throw Interrupted();
}

template <class Task>
void parallel_for(Index n_tasks, const RunConfig& cfg, Task&& task) {
  if (n_tasks <= 0) return;
  parallel_rounds(
      1, [n_tasks](Index) { return n_tasks; }, cfg,
      [&task](Index, Index t, int worker) { task(t, worker); });
}

}  // namespace ikdr
