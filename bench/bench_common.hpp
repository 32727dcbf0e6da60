// Shared setup for posenc's benchmarks: seeded float buffers, the study model's shapes and the thread count.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <posenc/random.hpp>
#include <posenc/threads.hpp>

namespace posenc_bench {

inline constexpr std::size_t study_batch = 32;
inline constexpr std::size_t study_context = 128;
inline constexpr std::size_t study_dim = 192;
inline constexpr std::size_t study_heads = 4;
inline constexpr std::size_t study_vocab = 65;

inline std::vector<float> random_floats(std::size_t n, std::uint64_t seed, double scale = 1.0) {
  posenc::Rng rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(rng.normal(0.0, scale));
  return v;
}

// The "min" statistic over --benchmark_repetitions: on a shared machine the fastest repetition is
// the one least disturbed by other processes.
inline double minimum(const std::vector<double>& v) {
  return v.empty() ? 0.0 : *std::min_element(v.begin(), v.end());
}

// Threads as the programs use them: --threads is not a Google Benchmark flag, so the count comes
// from POSENC_NUM_THREADS (default: every core).
inline int setup_threads() { return posenc::num_threads(); }

}  // namespace posenc_bench
