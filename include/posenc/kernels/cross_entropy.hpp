// cross_entropy_forward / cross_entropy_backward: softmax cross-entropy, mean over all targets.
#pragma once

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstddef>

#include "posenc/config.hpp"
#include "posenc/tensor.hpp"

namespace posenc {

// probs (N,V) saved for backward, logits (N,V), targets (N) in [0,V); returns the mean loss
template <std::floating_point S>
S cross_entropy_forward(S* probs, const S* logits, const TokenId* targets, std::size_t N,
                        std::size_t V) {
  double total = 0;  // a sum over N·V terms in float would lose the last digits of the loss
  for (std::size_t n = 0; n < N; ++n) {
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
  return static_cast<S>(total / static_cast<double>(N));
}

// dlogits (N,V) is added into; dloss is the upstream gradient of the mean loss
template <std::floating_point S>
void cross_entropy_backward(S* dlogits, const S* probs, const TokenId* targets, std::size_t N,
                            std::size_t V, S dloss = S(1)) {
  // loss = (1/N) Σ_n −log p[n, target]  →  dz = (p − onehot(target)) · dloss / N
  const S scale = dloss / static_cast<S>(N);
  for (std::size_t n = 0; n < N; ++n) {
    const S* p = probs + n * V;
    S* dz = dlogits + n * V;
    for (std::size_t v = 0; v < V; ++v) dz[v] += p[v] * scale;
    dz[static_cast<std::size_t>(targets[n])] -= scale;
  }
}

}  // namespace posenc
