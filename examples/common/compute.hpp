// compute_summary() and compute_json(): the GEMM backend, its kernel and the threads, as the programs report them.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include <posenc/kernels/gemm_report.hpp>
#include <posenc/threads.hpp>

namespace examples {

// "compute: onednn GEMMs (cpu_isa_avx512_core_bf16), up to 2 threads (fewer while other processes
// use the cores; --threads N fixes the count)"
inline std::string compute_summary() {
  const posenc::GemmReport gemm = posenc::describe_gemm();
  const int threads = posenc::num_threads();
  const std::optional<int> ceiling = posenc::adaptive_thread_ceiling();
  std::string line = "compute: " + gemm.backend + " GEMMs (" + gemm.kernel + "), ";
  if (ceiling && *ceiling > 1)
    return line + "up to " + std::to_string(*ceiling) +
           " threads (fewer while other processes use the cores; --threads N fixes the count)";
  return line + std::to_string(threads) + (threads == 1 ? " thread" : " threads");
}

// Recorded beside a run's configuration: where its numbers were computed, not how to rerun it.
inline nlohmann::json compute_json() {
  const posenc::GemmReport gemm = posenc::describe_gemm();
  const std::optional<int> ceiling = posenc::adaptive_thread_ceiling();
  return {{"gemm_backend", gemm.backend}, {"gemm_kernel", gemm.kernel},
          {"threads", ceiling.value_or(posenc::num_threads())}, {"threads_adaptive", ceiling.has_value()}};
}

}  // namespace examples
