// How many cores posenc's kernels use (OpenMP threads): fixed, or adaptive to what other processes leave free.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "posenc/config.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif
#if defined(__linux__)
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>
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
struct ThreadSetting {
  // Atomic: models built in several std::threads at once may each apply the default first, and
  // study --jobs adapts the count from several std::threads.
  std::atomic<int> threads{0};  // 0: not configured yet
  std::atomic<int> ceiling{0};  // adaptive: the most threads to use; 0: the count is fixed
};
inline ThreadSetting& thread_setting() {
  static ThreadSetting setting;
  return setting;
}

inline void apply_num_threads(int n) {
#if defined(_OPENMP)
  omp_set_num_threads(n);
  if (openblas_set_num_threads != nullptr) openblas_set_num_threads(1);
#else
  if (openblas_set_num_threads != nullptr) openblas_set_num_threads(n);
#endif
  thread_setting().threads = n;
}
}  // namespace detail

// A fixed thread count. With OpenMP (the build posenc's CMake target gives): n OpenMP threads
// split every kernel, GEMMs included, and each GEMM call runs on its calling thread alone, so the
// thread pools never compete for the cores. Without OpenMP: the kernels run on one thread and
// OpenBLAS uses n.
inline void set_num_threads(int n) {
  if (n < 1) fail("thread count must be at least 1, got ", n);
  detail::thread_setting().ceiling = 0;
  detail::apply_num_threads(n);
}

// Up to `ceiling` threads, fewer while other processes keep cores busy (adapt_num_threads()):
// every kernel ends in a barrier, so a team with one thread on a shared core waits for that
// core's time slice at every step of the model (one busy process on one of two cores made a
// 2-thread evaluation 1.8× to 14× slower than 1 thread, by machine). POSENC_NUM_THREADS, when
// set, fixes the count.
inline void set_adaptive_num_threads(int ceiling) {
  if (ceiling < 1) fail("thread count must be at least 1, got ", ceiling);
  if (const std::optional<int> n = env_num_threads()) return set_num_threads(*n);
  detail::apply_num_threads(ceiling);
  detail::thread_setting().ceiling = ceiling;
}

// The thread count in force; the first call without a set_num_threads() or
// set_adaptive_num_threads() before it makes it adaptive up to every core this process may run
// on (or fixes POSENC_NUM_THREADS). Models call it when built, so an unconfigured program still
// gets every free core and no oversubscription.
inline int num_threads() {
  if (detail::thread_setting().threads == 0) set_adaptive_num_threads(available_cores());
  return detail::thread_setting().threads;
}

// The most threads the count may adapt up to, or nothing when the count is fixed.
inline std::optional<int> adaptive_thread_ceiling() {
  num_threads();
  const int ceiling = detail::thread_setting().ceiling;
  return ceiling > 0 ? std::optional<int>(ceiling) : std::nullopt;
}

// The thread count for `free_cores` (the cores this process may use less those other processes
// kept busy): the free cores rounded, a core more than half busy counting as taken; 1 to ceiling.
inline int threads_for_free_cores(double free_cores, int ceiling) {
  const int n = static_cast<int>(std::floor(free_cores + 0.5));
  return std::clamp(n, 1, std::max(1, ceiling));
}

namespace detail {
// The busy time, in clock ticks, that /proc/stat's text gives the CPUs in `cpus` (user, nice,
// system, irq, softirq and steal: everything but idle and I/O wait); nothing if one is missing.
inline std::optional<double> busy_ticks(const std::string& proc_stat, const std::vector<int>& cpus) {
  std::istringstream lines(proc_stat);
  std::string line;
  double busy = 0;
  std::size_t found = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("cpu", 0) != 0 || line.size() < 4 || line[3] < '0' || line[3] > '9') continue;
    std::istringstream fields(line.substr(3));
    int cpu = -1;
    double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
    fields >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq;
    if (!fields) continue;
    fields >> steal;  // absent on old kernels
    if (std::find(cpus.begin(), cpus.end(), cpu) == cpus.end()) continue;
    busy += user + nice + system + irq + softirq + (fields ? steal : 0);
    ++found;
  }
  if (found != cpus.size() || cpus.empty()) return std::nullopt;
  return busy;
}

#if defined(__linux__)
// The CPUs this process may run on, the seconds they were busy and this process's CPU seconds.
struct CoreUsageSample {
  std::chrono::steady_clock::time_point when;
  double busy_seconds = 0, self_seconds = 0;
  std::size_t cpus = 0;
};

inline std::optional<CoreUsageSample> sample_core_usage() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return std::nullopt;
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  std::ifstream in("/proc/stat");
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  const auto ticks = busy_ticks(text.str(), cpus);
  const long hz = sysconf(_SC_CLK_TCK);
  rusage self{};
  if (!ticks || hz <= 0 || getrusage(RUSAGE_SELF, &self) != 0) return std::nullopt;
  const auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec);
  };
  return CoreUsageSample{std::chrono::steady_clock::now(), *ticks / static_cast<double>(hz),
                         seconds(self.ru_utime) + seconds(self.ru_stime), cpus.size()};
}
#endif
}  // namespace detail

// With an adaptive count: at most every `interval`, measures how much of the cores this process
// may use other processes kept busy since the last call, and sets the count to the cores they
// left free (threads_for_free_cores). Models call it before each forward pass, so a model's count
// changes between its passes (with models in several std::threads, between another's too: the
// kernels size their scratch for the count of the moment). Returns whether it measured. A no-op
// for a fixed count.
inline bool adapt_num_threads(std::chrono::milliseconds interval = std::chrono::milliseconds(250)) {
#if defined(__linux__)
  const std::optional<int> ceiling = adaptive_thread_ceiling();
  if (!ceiling || *ceiling == 1) return false;
  struct Monitor {
    std::mutex mutex;
    std::optional<detail::CoreUsageSample> last;
  };
  static Monitor monitor;
  std::unique_lock lock(monitor.mutex, std::try_to_lock);  // another thread is measuring already
  if (!lock) return false;
  const auto now = std::chrono::steady_clock::now();
  if (monitor.last && now - monitor.last->when < interval) return false;
  const std::optional<detail::CoreUsageSample> sample = detail::sample_core_usage();
  if (!sample) return false;
  bool measured = false;
  if (monitor.last) {
    const double wall = std::chrono::duration<double>(sample->when - monitor.last->when).count();
    const double others = (sample->busy_seconds - monitor.last->busy_seconds) -
                          (sample->self_seconds - monitor.last->self_seconds);
    const int n = threads_for_free_cores(static_cast<double>(sample->cpus) - std::max(0.0, others) / wall, *ceiling);
    if (n != detail::thread_setting().threads) detail::apply_num_threads(n);
    measured = true;
  }
  monitor.last = sample;
  return measured;
#else
  (void)interval;
  return false;
#endif
}

}  // namespace posenc
