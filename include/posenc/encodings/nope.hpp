// NoPE: no positional encoding at all, the control; only the causal mask tells positions apart.
#pragma once

#include <string_view>

#include "posenc/encodings/concept.hpp"

namespace posenc {

struct NoPE {
  static constexpr std::string_view name = "nope";
  static constexpr std::string_view summary =
      "no position signal; only the causal mask tells positions apart (the control)";
  template <std::floating_point S, std::size_t Dim>
  using Embedding = NoPositionSignal<S, Dim>;
  template <std::floating_point S, std::size_t Heads, std::size_t HeadDim>
  using Attention = NoAttentionSignal<S, Heads, HeadDim>;
};

}  // namespace posenc
