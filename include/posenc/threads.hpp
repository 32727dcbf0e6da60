// set_num_threads() and default_num_threads(): how many cores posenc's kernels (and OpenBLAS under them) use.
#pragma once

#include <cstdlib>
#include <string>
#include <thread>

#include "posenc/config.hpp"

// OpenBLAS's own control, declared weak so that posenc still links against another BLAS.
extern "C" __attribute__((weak)) void openblas_set_num_threads(int);

namespace posenc {

inline constexpr const char* threads_env_var = "POSENC_NUM_THREADS";

// POSENC_NUM_THREADS when set, otherwise every core of the machine.
inline int default_num_threads() {
  if (const char* env = std::getenv(threads_env_var); env != nullptr && *env != '\0') {
    char* end = nullptr;
    const long n = std::strtol(env, &end, 10);
    if (end == env || *end != '\0' || n < 1 || n > 4096)
      fail(threads_env_var, "='", env, "' is not a thread count; expected a whole number ≥ 1");
    return static_cast<int>(n);
  }
  const unsigned cores = std::thread::hardware_concurrency();
  return cores == 0 ? 1 : static_cast<int>(cores);
}

inline void set_num_threads(int n) {
  if (n < 1) fail("thread count must be at least 1, got ", n);
  if (openblas_set_num_threads != nullptr) openblas_set_num_threads(n);
}

}  // namespace posenc
