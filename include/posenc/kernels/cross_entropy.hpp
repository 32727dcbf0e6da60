// cross_entropy_forward / cross_entropy_backward: softmax cross-entropy, mean over the scored targets.
#pragma once

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>

#include "posenc/config.hpp"
#include "posenc/tensor.hpp"

namespace posenc {

// probs (N,V) saved for backward, logits (N,V), targets (N) in [0,V), mask (N) or nullptr; returns
// the mean loss over the rows the mask scores (every row without one; 0 when it scores none), as
// PyTorch's cross_entropy with ignore_index. An unscored row's probs are left as they were.
template <std::floating_point S>
S cross_entropy_forward(S* probs, const S* logits, const TokenId* targets, std::size_t N,
                        std::size_t V, const std::uint8_t* mask = nullptr) {
  double total = 0;  // a sum over N·V terms in float would lose the last digits of the loss
  std::size_t scored = 0;
  for (std::size_t n = 0; n < N; ++n) {
    if (mask != nullptr && mask[n] == 0) continue;
    ++scored;
    const TokenId target = targets[n];
    if (target < 0 || static_cast<std::size_t>(target) >= V)
      fail("cross_entropy_forward: target id ", target, " at row ", n,
           " is outside the vocabulary [0, ", V, ")");
    const S* z = logits + n * V;
    S* p = probs + n * V;
    const S zmax = *std::max_element(z, z + V);
    S sum = 0;
    for (std::size_t v = 0; v < V; ++v) {
      p[v] = std::exp(z[v] - zmax);
      sum += p[v];
    }
    for (std::size_t v = 0; v < V; ++v) p[v] /= sum;
    // -log softmax computed from the logits, not from a probability that may underflow to 0
    total += static_cast<double>(std::log(sum) + zmax - z[target]);
  }
  return scored == 0 ? S(0) : static_cast<S>(total / static_cast<double>(scored));
}

// How many of the N rows `mask` scores (N without a mask).
inline std::size_t scored_rows(const std::uint8_t* mask, std::size_t N) {
  if (mask == nullptr) return N;
  std::size_t scored = 0;
  for (std::size_t n = 0; n < N; ++n) scored += mask[n] != 0;
  return scored;
}

// dlogits (N,V) is added into (unscored rows get nothing); dloss is the upstream gradient of the
// mean loss
template <std::floating_point S>
void cross_entropy_backward(S* dlogits, const S* probs, const TokenId* targets, std::size_t N,
                            std::size_t V, S dloss = S(1), const std::uint8_t* mask = nullptr) {
  // loss = (1/M) Σ_scored −log p[n, target]  →  dz = (p − onehot(target)) · dloss / M
  const std::size_t scored = scored_rows(mask, N);
  if (scored == 0) return;
  const S scale = dloss / static_cast<S>(scored);
  for (std::size_t n = 0; n < N; ++n) {
    if (mask != nullptr && mask[n] == 0) continue;
    const S* p = probs + n * V;
    S* dz = dlogits + n * V;
    for (std::size_t v = 0; v < V; ++v) dz[v] += p[v] * scale;
    dz[static_cast<std::size_t>(targets[n])] -= scale;
  }
}

}  // namespace posenc
