// describe_gemm(): the GEMM library and kernel in use, and a warning when OpenBLAS fell back to a generic kernel.
#pragma once

#include <algorithm>
#include <array>
#include <cctype>
#include <iostream>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "posenc/kernels/gemm.hpp"

// OpenBLAS's own query, declared weak so that posenc still links against another BLAS.
extern "C" __attribute__((weak)) char* openblas_get_corename(void);

namespace posenc {

// The instruction sets that decide which GEMM kernels can run (x86 only; elsewhere all false).
struct CpuFeatures {
  bool intel = false, amd = false;
  bool avx2 = false, avx512 = false;
};

inline CpuFeatures cpu_features() {
  CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  f.intel = __builtin_cpu_is("intel");
  f.amd = __builtin_cpu_is("amd");
  f.avx2 = __builtin_cpu_supports("avx2");
  f.avx512 = __builtin_cpu_supports("avx512f");
#endif
  return f;
}

// OpenBLAS's kernel names whose sgemm uses AVX2 or wider vectors; on a CPU with AVX2 any other
// (Prescott, Nehalem, Sandybridge, …) is a fall-back several times slower.
inline bool is_wide_openblas_kernel(std::string_view corename) {
  constexpr std::array<std::string_view, 5> wide{"haswell", "zen", "skylakex", "cooperlake",
                                                 "sapphirerapids"};
  std::string lower(corename);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return std::find(wide.begin(), wide.end(), lower) != wide.end();
}

// What the programs print in their first line and write to config.json.
struct GemmReport {
  std::string backend;  // "onednn" or "openblas": the library float GEMMs run on
  std::string kernel;   // oneDNN's instruction set ("avx512_core_bf16") or OpenBLAS's core name ("Haswell")
  std::optional<std::string> slow_kernel_warning;  // set when OpenBLAS runs a generic kernel on a wide CPU
};

// The advice for a generic OpenBLAS kernel on a CPU with AVX2 or AVX-512, or nothing. Separate
// from describe_gemm() so that every (core name, CPU) case can be tested on any machine.
inline std::optional<std::string> slow_openblas_kernel_warning(std::string_view corename,
                                                               const CpuFeatures& cpu) {
  if (!cpu.avx2 || is_wide_openblas_kernel(corename)) return std::nullopt;
  // SkylakeX's kernels need AVX-512; older OpenBLAS builds misbehave with them on some AMD CPUs,
  // where Haswell's AVX2 kernels are the safe choice.
  const char* coretype = cpu.avx512 && cpu.intel ? "SkylakeX" : "Haswell";
  return detail::concat(
      "OpenBLAS runs its generic '", corename, "' kernels on a CPU with ",
      cpu.avx512 ? "AVX-512" : "AVX2",
      " (this OpenBLAS does not know the CPU), several times slower than it could; set ",
      "OPENBLAS_CORETYPE=", coretype, " in the environment, or build posenc with oneDNN ",
      "(install libdnnl-dev and reconfigure)");
}

inline GemmReport describe_gemm() {
  GemmReport report;
  report.backend = gemm_backend_name(gemm_backend);
#if defined(POSENC_GEMM_ONEDNN)
  report.kernel = dnnl_cpu_isa2str(dnnl_get_effective_cpu_isa());
#else
  const char* corename = openblas_get_corename != nullptr ? openblas_get_corename() : nullptr;
  report.kernel = corename != nullptr ? corename : "unknown (not OpenBLAS)";
  if (corename != nullptr) report.slow_kernel_warning = slow_openblas_kernel_warning(corename, cpu_features());
#endif
  return report;
}

// Prints the slow-kernel warning to `out` the first time it is called in the process, if there
// is one; models call it when they are built, so no program trains on a generic kernel silently.
inline void warn_once_about_slow_gemm(std::ostream& out = std::cerr) {
  static std::once_flag once;
  std::call_once(once, [&] {
    if (const auto warning = describe_gemm().slow_kernel_warning) out << "posenc: warning: " << *warning << '\n';
  });
}

}  // namespace posenc
