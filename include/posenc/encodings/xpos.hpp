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
  static constexpr std::string_view summary = "RoPE with a per-dimension decay of q.k with distance (Sun et al. 2022)";
  static constexpr double base = RoPE::base;  // the turn's, before any --rope-base

  template <std::floating_point S, std::size_t Dim>
  using Embedding = NoPositionSignal<S, Dim>;

  template <std::floating_point S, std::size_t Heads, std::size_t HeadDim>
  class Attention {
    // The turn is the study's RoPE's (its angle table, rotate-half pairs); xPos adds the scale.
    using Rotary = typename RoPE::template Attention<S, Heads, HeadDim>;
    static constexpr std::size_t half = HeadDim / 2;

   public:
    Attention(ParameterTable& table, std::string_view prefix, std::size_t context) : rotary_(table, prefix, context) {
      extend(context);
    }

    struct Hooks : RotaryHooks {
      static constexpr bool rotates_keys_separately = true;  // keys are scaled by ζ^(−m/ScaleBase)
      typename Rotary::Hooks rope;
      const S* scale;  // (positions, hd/2): ζ^(p/ScaleBase)

      void rotate(S* q, std::size_t pos) const { rope.rotate(q, pos); scale_pairs(q, pos, false); }
      void unrotate(S* g, std::size_t pos) const { rope.unrotate(g, pos); scale_pairs(g, pos, false); }
      void rotate_key(S* k, std::size_t pos) const { rope.rotate(k, pos); scale_pairs(k, pos, true); }
      void unrotate_key(S* g, std::size_t pos) const { rope.unrotate(g, pos); scale_pairs(g, pos, true); }

     private:
      // x ← s·x on both members of each pair; s commutes with the turn, so the transpose of
      // s·R(θ) is s·R(−θ).
      void scale_pairs(S* x, std::size_t pos, bool key) const {
        const S* z = scale + pos * half;
        for (std::size_t i = 0; i < half; ++i) {
          const S s = key ? S(1) / z[i] : z[i];
          x[i] *= s;
          x[i + half] *= s;
        }
      }
    };

    Hooks bind(ParameterStore<S>& store, std::size_t T) {
      extend(T);
      return Hooks{{}, rotary_.bind(store, T), scale_.data()};
    }

    // The turn's base and stretch (rope_scaling.hpp); the decay ζ^(n/ScaleBase) stays as it is.
    void set_rope_scaling(const RopeScaling& scaling) { rotary_.set_rope_scaling(scaling); }
    const RopeScaling& rope_scaling() const { return rotary_.rope_scaling(); }

   private:
    void extend(std::size_t T) {
      for (std::size_t p = scale_.size() / half; p < T; ++p)
        for (std::size_t i = 0; i < half; ++i) {
          const double zeta = (2.0 * static_cast<double>(i) / HeadDim + 0.4) / 1.4;
          scale_.push_back(static_cast<S>(std::pow(zeta, static_cast<double>(p) / ScaleBase)));
        }
    }
    Rotary rotary_;
    std::vector<S> scale_;
  };
};

using XPos = BasicXPos<>;

}  // namespace posenc
