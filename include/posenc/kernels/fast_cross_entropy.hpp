// fast::cross_entropy_forward/backward: cross_entropy.hpp's loss split over rows, with a vectorised softmax.
#pragma once

#include <algorithm>
#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>

#include "posenc/config.hpp"
#include "posenc/kernels/cross_entropy.hpp"
#include "posenc/kernels/fast_softmax.hpp"
#include "posenc/kernels/parallel.hpp"
#include "posenc/tensor.hpp"

namespace posenc::fast {

// probs (N,V) saved for backward (or nullptr: the loss only, for evaluation), logits (N,V),
// targets (N) in [0,V), mask (N) or nullptr; returns the mean loss over the rows the mask scores
// (posenc::cross_entropy_forward's). With probs == nullptr, scratch must hold V scalars per thread
// (max_parallel_threads()·V); otherwise it may be nullptr.
template <std::floating_point S>
S cross_entropy_forward(S* probs, const S* logits, const TokenId* targets, std::size_t N,
                        std::size_t V, S* scratch = nullptr, const std::uint8_t* mask = nullptr) {
  for (std::size_t n = 0; n < N; ++n)  // checked first: nothing may throw inside a parallel region
    if ((mask == nullptr || mask[n] != 0) && (targets[n] < 0 || static_cast<std::size_t>(targets[n]) >= V))
      fail("cross_entropy_forward: target id ", targets[n], " at row ", n,
           " is outside the vocabulary [0, ", V, ")");
  if (probs == nullptr && scratch == nullptr)
    fail("cross_entropy_forward: without probs it needs scratch of threads × V scalars");
  constexpr std::size_t max_parts = 256;
  std::array<double, max_parts> partial{};  // one sum per chunk, added in chunk order below
  const std::size_t parts = std::min(max_parts, max_parallel_threads());
  auto rows = [&](std::size_t part, std::size_t r0, std::size_t r1) {
    double total = 0;  // a float sum over N terms would lose the last digits of the loss
    S* p = probs != nullptr ? nullptr : scratch + parallel_thread_index() * V;
    for (std::size_t n = r0; n < r1; ++n) {
      if (mask != nullptr && mask[n] == 0) continue;
      S* row = probs != nullptr ? probs + n * V : p;
      std::copy(logits + n * V, logits + (n + 1) * V, row);
      const S log_norm = softmax_row(row, V);
      // −log softmax from the logits, not from a probability that may underflow to 0
      total += static_cast<double>(log_norm - logits[n * V + static_cast<std::size_t>(targets[n])]);
    }
    partial[part] = total;
  };
  const std::size_t scored = scored_rows(mask, N);
  const auto mean = [&](double total) {
    return scored == 0 ? S(0) : static_cast<S>(total / static_cast<double>(scored));
  };
  if (parts <= 1 || N < 64) {
    rows(0, 0, N);
    return mean(partial[0]);
  }
  POSENC_OMP(omp parallel num_threads(parts))
  {
    const std::size_t t = parallel_thread_index(), team = parallel_team_size();
    rows(t, N * t / team, N * (t + 1) / team);
  }
  double total = 0;
  for (std::size_t t = 0; t < parts; ++t) total += partial[t];
  return mean(total);
}

// dlogits (N,V) is added into (unscored rows get nothing); dloss is the upstream gradient of the
// mean loss — as posenc::cross_entropy_backward
template <std::floating_point S>
void cross_entropy_backward(S* dlogits, const S* probs, const TokenId* targets, std::size_t N,
                            std::size_t V, S dloss = S(1), const std::uint8_t* mask = nullptr) {
  // loss = (1/M) Σ_scored −log p[n, target]  →  dz = (p − onehot(target)) · dloss / M
  const std::size_t scored = scored_rows(mask, N);
  if (scored == 0) return;
  const S scale = dloss / static_cast<S>(scored);
  parallel_for_chunks(N, [&](std::size_t r0, std::size_t r1) {
    for (std::size_t n = r0; n < r1; ++n) {
      if (mask != nullptr && mask[n] == 0) continue;
      const S* p = probs + n * V;
      S* dz = dlogits + n * V;
      for (std::size_t v = 0; v < V; ++v) dz[v] += p[v] * scale;
      dz[static_cast<std::size_t>(targets[n])] -= scale;
    }
  }, 8, 64);
}

}  // namespace posenc::fast
