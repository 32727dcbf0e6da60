// RoPE: rotary position embedding; each head's q and k rotated by position, rotate-half pairing, base 10000.
#pragma once

#include <cmath>
#include <string_view>
#include <vector>

#include "posenc/encodings/concept.hpp"

namespace posenc {

// The angle by which pair i (dimension i with i + hd/2, as GPT-NeoX and Hugging Face LLaMA pair
// them) is rotated at a position: position · base^(−2i/hd).
inline double rope_angle(std::size_t position, std::size_t pair, std::size_t head_dim,
                         double base = 10000.0) {
  return static_cast<double>(position) *
         std::pow(base, -2.0 * static_cast<double>(pair) / static_cast<double>(head_dim));
}

struct RoPE {
  static constexpr std::string_view name = "rope";

  template <std::floating_point S, std::size_t Dim>
  using Embedding = NoPositionSignal<S, Dim>;

  template <std::floating_point S, std::size_t Heads, std::size_t HeadDim>
  class Attention {
    static_assert(HeadDim % 2 == 0,
                  "RoPE rotates pairs of dimensions: the head dimension Dim / Heads must be even");
    static constexpr std::size_t half = HeadDim / 2;

   public:
    Attention(ParameterTable&, std::string_view, std::size_t context) { extend(context); }

    struct Hooks {
      static constexpr bool rotates_qk = true;
      static constexpr bool biases_scores = false;
      static constexpr bool has_bias_parameters = false;
      const S* cos;  // (positions, hd/2)
      const S* sin;

      // (x_i, x_{i+hd/2}) ← (x_i cos θ − x_{i+hd/2} sin θ,  x_i sin θ + x_{i+hd/2} cos θ)
      void rotate(S* x, std::size_t pos) const {
        const S* c = cos + pos * half;
        const S* s = sin + pos * half;
        for (std::size_t i = 0; i < half; ++i) {
          const S a = x[i];
          const S b = x[i + half];
          x[i] = a * c[i] - b * s[i];
          x[i + half] = a * s[i] + b * c[i];
        }
      }
      // the transpose of rotate, which carries gradients back to the unrotated vector
      void unrotate(S* g, std::size_t pos) const {
        const S* c = cos + pos * half;
        const S* s = sin + pos * half;
        for (std::size_t i = 0; i < half; ++i) {
          const S a = g[i];
          const S b = g[i + half];
          g[i] = a * c[i] + b * s[i];
          g[i + half] = -a * s[i] + b * c[i];
        }
      }
    };

    Hooks bind(ParameterStore<S>&, std::size_t T) {
      extend(T);
      return Hooks{cos_.data(), sin_.data()};
    }

   private:
    // Angles are computed in double and grow on demand, so longer sequences are rotated exactly.
    void extend(std::size_t T) {
      const std::size_t rows = cos_.size() / half;
      if (rows >= T) return;
      cos_.resize(T * half);
      sin_.resize(T * half);
      for (std::size_t p = rows; p < T; ++p)
        for (std::size_t i = 0; i < half; ++i) {
          const double angle = rope_angle(p, i, HeadDim);
          cos_[p * half + i] = static_cast<S>(std::cos(angle));
          sin_[p * half + i] = static_cast<S>(std::sin(angle));
        }
    }
    std::vector<S> cos_;
    std::vector<S> sin_;
  };
};

}  // namespace posenc
