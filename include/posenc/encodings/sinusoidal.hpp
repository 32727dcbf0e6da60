// Sinusoidal: the fixed sin/cos position table of Vaswani et al., added to the token embeddings.
#pragma once

#include <cmath>
#include <string_view>
#include <vector>

#include "posenc/encodings/concept.hpp"

namespace posenc {

// PE[p, 2i] = sin(p · 10000^(−2i/Dim)),  PE[p, 2i+1] = cos(p · 10000^(−2i/Dim))
inline double sinusoidal_value(std::size_t position, std::size_t dim_index, std::size_t dim) {
  const double pair = static_cast<double>(dim_index / 2 * 2);
  const double angle =
      static_cast<double>(position) * std::pow(10000.0, -pair / static_cast<double>(dim));
  return dim_index % 2 == 0 ? std::sin(angle) : std::cos(angle);
}

struct Sinusoidal {
  static constexpr std::string_view name = "sinusoidal";
  static constexpr std::string_view summary =
      "the fixed sin/cos table added to the token embeddings (Vaswani et al. 2017)";

  template <std::floating_point S, std::size_t Dim>
  class Embedding {
   public:
    Embedding(ParameterTable&, std::size_t context) { extend(context); }
    std::size_t max_positions() const { return std::numeric_limits<std::size_t>::max(); }
    // The table is fixed, so it grows on demand for sequences longer than training saw.
    const S* positions(const ParameterStore<S>&, std::size_t T) {
      extend(T);
      return table_.data();
    }
    S* position_grads(ParameterStore<S>&) const { return nullptr; }

   private:
    void extend(std::size_t T) {
      const std::size_t rows = table_.size() / Dim;
      if (rows >= T) return;
      table_.resize(T * Dim);
      for (std::size_t p = rows; p < T; ++p)
        for (std::size_t d = 0; d < Dim; ++d)
          table_[p * Dim + d] = static_cast<S>(sinusoidal_value(p, d, Dim));
    }
    std::vector<S> table_;  // (positions, Dim)
  };

  template <std::floating_point S, std::size_t Heads, std::size_t HeadDim>
  using Attention = NoAttentionSignal<S, Heads, HeadDim>;
};

}  // namespace posenc
