// set_num_threads() and default_num_threads(): how many cores posenc's kernels use (OpenMP threads, each running single-threaded OpenBLAS).
#pragma once

#include <atomic>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>

#include "posenc/config.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif
#if defined(__linux__)
#include <sched.h>
#endif

// OpenBLAS's own control, declared weak so that posenc still links against another BLAS.
extern "C" __attribute__((weak)) void openblas_set_num_threads(int);

namespace posenc {

inline constexpr const char* threads_env_var = "POSENC_NUM_THREADS";

// The cores this process may run on: its CPU affinity (taskset, or an MPI launcher's binding) on
// Linux, otherwise every core of the machine.
inline int available_cores() {
#if defined(__linux__)
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
#endif
  const unsigned cores = std::thread::hardware_concurrency();
  return cores == 0 ? 1 : static_cast<int>(cores);
}

// POSENC_NUM_THREADS, when it is set.
inline std::optional<int> env_num_threads() {
  const char* env = std::getenv(threads_env_var);
  if (env == nullptr || *env == '\0') return std::nullopt;
  char* end = nullptr;
  const long n = std::strtol(env, &end, 10);
  if (end == env || *end != '\0' || n < 1 || n > 4096)
    fail(threads_env_var, "='", env, "' is not a thread count; expected a whole number ≥ 1");
  return static_cast<int>(n);
}

// POSENC_NUM_THREADS when set, otherwise every core this process may run on.
inline int default_num_threads() { return env_num_threads().value_or(available_cores()); }

namespace detail {
// Atomic: models built in several std::threads at once may each apply the default first.
inline std::atomic<int>& configured_threads() {
  static std::atomic<int> n{0};  // 0: not configured yet
  return n;
}
}  // namespace detail

// With OpenMP (the build posenc's CMake target gives): n OpenMP threads split every kernel, GEMMs
// included, and OpenBLAS runs single-threaded inside them, so the two thread pools never compete
// for the cores. Without OpenMP: the kernels run on one thread and OpenBLAS uses n.
inline void set_num_threads(int n) {
  if (n < 1) fail("thread count must be at least 1, got ", n);
#if defined(_OPENMP)
  omp_set_num_threads(n);
  if (openblas_set_num_threads != nullptr) openblas_set_num_threads(1);
#else
  if (openblas_set_num_threads != nullptr) openblas_set_num_threads(n);
#endif
  detail::configured_threads() = n;
}

// The thread count in force; the first call without a set_num_threads() before it applies
// default_num_threads(). Models call it when built, so an unconfigured program still gets
// every core and no oversubscription.
inline int num_threads() {
  if (detail::configured_threads() == 0) set_num_threads(default_num_threads());
  return detail::configured_threads();
}

}  // namespace posenc
