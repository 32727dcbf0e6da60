// xPos: RoPE with a per-dimension exponential scale, ζ^(n/512) on queries and ζ^(−m/512) on keys (Sun et al. 2022).
#pragma once

#include <cmath>
#include <cstddef>
#include <string_view>
#include <vector>

#include "posenc/encodings/concept.hpp"
#include "posenc/encodings/rope.hpp"

namespace posenc {

// Pair i (rotate-half pairing, as the study's RoPE) is turned as RoPE turns it and scaled by
// ζ_i^(n/ScaleBase) in a query at position n and by ζ_i^(−m/ScaleBase) in a key at position m, with
// ζ_i = (2i/hd + 0.4)/1.4 — torchscale's values. The product q·k then carries ζ_i^((n−m)/ScaleBase):
// a decay with the distance that still depends only on n − m. (torchscale also centres positions
// on the sequence; that shift cancels in q·k, and absolute positions keep the key/value cache valid.)
template <int ScaleBase = 512>
struct BasicXPos {
  static_assert(ScaleBase > 0, "xPos: the scale base must be positive");
  static constexpr std::string_view name = "xpos";

  template <std::floating_point S, std::size_t Dim>
  using Embedding = NoPositionSignal<S, Dim>;

  template <std::floating_point S, std::size_t Heads, std::size_t HeadDim>
  class Attention {
    static_assert(HeadDim % 2 == 0,
                  "xPos rotates pairs of dimensions: the head dimension Dim / Heads must be even");
    static constexpr std::size_t half = HeadDim / 2;

   public:
    Attention(ParameterTable&, std::string_view, std::size_t context) { extend(context); }

    struct Hooks {
      static constexpr bool rotates_qk = true;
      static constexpr bool biases_scores = false;
      static constexpr bool has_bias_parameters = false;
      const S* cos;    // (positions, hd/2)
      const S* sin;
      const S* scale;  // (positions, hd/2): ζ^(p/ScaleBase)

      void rotate(S* q, std::size_t pos) const { turn(q, pos, S(1), false); }
      void unrotate(S* g, std::size_t pos) const { turn(g, pos, S(-1), false); }
      void rotate_key(S* k, std::size_t pos) const { turn(k, pos, S(1), true); }
      void unrotate_key(S* g, std::size_t pos) const { turn(g, pos, S(-1), true); }

     private:
      // x ← s·R(±θ)·x per pair; the scale is the same on both members of a pair, so it commutes
      // with the turn and the transpose is s·R(−θ).
      void turn(S* x, std::size_t pos, S direction, bool key) const {
        const S* c = cos + pos * half;
        const S* sn = sin + pos * half;
        const S* z = scale + pos * half;
        for (std::size_t i = 0; i < half; ++i) {
          const S s = key ? S(1) / z[i] : z[i];
          const S a = x[i];
          const S b = x[i + half];
          const S si = direction * sn[i];
          x[i] = s * (a * c[i] - b * si);
          x[i + half] = s * (a * si + b * c[i]);
        }
      }
    };

    Hooks bind(ParameterStore<S>&, std::size_t T) {
      extend(T);
      return Hooks{cos_.data(), sin_.data(), scale_.data()};
    }

   private:
    void extend(std::size_t T) {
      const std::size_t rows = cos_.size() / half;
      if (rows >= T) return;
      cos_.resize(T * half);
      sin_.resize(T * half);
      scale_.resize(T * half);
      for (std::size_t p = rows; p < T; ++p)
        for (std::size_t i = 0; i < half; ++i) {
          const double angle = rope_angle(p, i, HeadDim);
          const double zeta = (2.0 * static_cast<double>(i) / HeadDim + 0.4) / 1.4;
          cos_[p * half + i] = static_cast<S>(std::cos(angle));
          sin_[p * half + i] = static_cast<S>(std::sin(angle));
          scale_[p * half + i] = static_cast<S>(std::pow(zeta, static_cast<double>(p) / ScaleBase));
        }
    }
    std::vector<S> cos_, sin_, scale_;
  };
};

using XPos = BasicXPos<>;

}  // namespace posenc
