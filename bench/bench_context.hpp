// add_compute_context(): the GEMM backend, kernel and threads in a Google Benchmark report's context.
#pragma once

#include <string>

#include <benchmark/benchmark.h>

#include <posenc/kernels/gemm_report.hpp>
#include <posenc/threads.hpp>

namespace posenc_bench {

// What every row ran on, in the report's context: the GEMM backend and kernel, OpenBLAS's kernel
// (it computes the double GEMMs, or all of them), posenc's threads and any slow-kernel warning.
inline void add_compute_context() {
  const posenc::GemmReport report = posenc::describe_gemm();
  benchmark::AddCustomContext("posenc_gemm", report.backend + " (" + report.kernel + ")");
  if (openblas_get_corename != nullptr) benchmark::AddCustomContext("openblas_kernel", openblas_get_corename());
  benchmark::AddCustomContext("posenc_threads", std::to_string(posenc::num_threads()));
  if (report.slow_kernel_warning) benchmark::AddCustomContext("warning", *report.slow_kernel_warning);
}

}  // namespace posenc_bench
