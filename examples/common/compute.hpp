// compute_summary() and compute_json(): the GEMM backend, its kernel and the thread count, as the programs report them first.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include <posenc/kernels/gemm_report.hpp>
#include <posenc/threads.hpp>

namespace examples {

// "compute: onednn GEMMs (avx512_core_bf16), 2 threads"
inline std::string compute_summary() {
  const posenc::GemmReport gemm = posenc::describe_gemm();
  const int threads = posenc::num_threads();
  return "compute: " + gemm.backend + " GEMMs (" + gemm.kernel + "), " + std::to_string(threads) +
         (threads == 1 ? " thread" : " threads");
}

// Recorded beside a run's configuration: where its numbers were computed, not how to rerun it.
inline nlohmann::json compute_json() {
  const posenc::GemmReport gemm = posenc::describe_gemm();
  return {{"gemm_backend", gemm.backend}, {"gemm_kernel", gemm.kernel}, {"threads", posenc::num_threads()}};
}

}  // namespace examples
