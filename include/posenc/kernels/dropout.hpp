// DropoutMask and dropout(): inverted dropout whose mask is a hash of its key and each element's index.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>

#include "posenc/kernels/parallel.hpp"

namespace posenc {

// Element i is kept when hash(key, i) ≥ p·2⁶⁴ and then scaled by 1/(1 − p), as torch.nn.Dropout in
// training. Because the mask is a function of (key, index) it needs no storage, the backward
// applies exactly the forward's, and neither the thread count nor how a batch is cut into
// chunks changes it. p = 0 keeps everything unscaled.
struct DropoutMask {
  std::uint64_t key = 0;
  double p = 0;

  // splitmix64's finaliser, a bijection that scrambles every input bit into every output bit
  static constexpr std::uint64_t mix(std::uint64_t x) {
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ULL;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
  }
  // The mask of one site (a layer's place in the network) under this key.
  DropoutMask at(std::uint64_t site) const { return {mix(key ^ mix(site + 0x9E3779B97F4A7C15ULL)), p}; }

  bool active() const { return p > 0; }
  bool keeps(std::uint64_t index) const {
    const auto threshold = static_cast<std::uint64_t>(p * 18446744073709551616.0);
    return mix(key + 0x9E3779B97F4A7C15ULL * (index + 1)) >= threshold;
  }
  template <std::floating_point S>
  S scale() const {
    return static_cast<S>(1.0 / (1.0 - p));
  }
};

// x[i] ← x[i]·m(first + i)/(1 − p) for i < n: the forward, and, applied to the gradient, the
// backward (the map is diagonal).
template <std::floating_point S>
void dropout(S* x, std::size_t n, const DropoutMask& mask, std::uint64_t first = 0) {
  if (!mask.active()) return;
  const S scale = mask.scale<S>();
  parallel_for_chunks(n, [&](std::size_t i0, std::size_t i1) {
    for (std::size_t i = i0; i < i1; ++i) x[i] = mask.keeps(first + i) ? x[i] * scale : S(0);
  }, 4096, 65536);
}

}  // namespace posenc
