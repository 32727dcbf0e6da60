// RoPE and BasicRoPE: each head's q and k rotated by position; base, rotated fraction and pairing as parameters.
#pragma once

#include <cmath>
#include <cstddef>
#include <ratio>
#include <string_view>
#include <vector>

#include "posenc/encodings/concept.hpp"
#include "posenc/encodings/rope_scaling.hpp"

namespace posenc {

// Which dimensions RoPE rotates together.
enum class RopePairing {
  rotate_half,  // dimension i with i + r/2 (GPT-NeoX, Hugging Face LLaMA)
  interleaved,  // dimension 2i with 2i + 1 (GPT-J, the RoFormer paper)
};

// A compile-time string, so a policy's runtime name can be a template argument.
template <std::size_t N>
struct FixedName {
  char text[N]{};
  constexpr FixedName(const char (&s)[N]) {
    for (std::size_t i = 0; i < N; ++i) text[i] = s[i];
  }
  constexpr std::string_view view() const { return {text, N - 1}; }
};

// RoPE with its options as policy parameters: the base, the fraction of each head's dimensions
// rotated as a std::ratio (the first round(fraction·hd / 2)·2; the rest pass through, as GPT-NeoX's
// rotary_pct), and the pairing. Whole numbers and ratios rather than doubles, which clang accepts
// as template arguments only from version 18 (Debian 12 has 14); a fractional base is a run-time
// option (--rope-base, RopeScaling).
template <FixedName Name, std::size_t Base = 10000, class Fraction = std::ratio<1>,
          RopePairing Pairing = RopePairing::rotate_half, FixedName Summary = "rotary position embedding">
struct BasicRoPE {
  static_assert(Base > 1, "RoPE: the base must exceed 1");
  static_assert(Fraction::num > 0 && Fraction::num <= Fraction::den, "RoPE: the rotated fraction must lie in (0, 1]");
  static constexpr std::string_view name = Name.view();
  static constexpr std::string_view summary = Summary.view();
  static constexpr double base = static_cast<double>(Base);
  static constexpr double fraction = static_cast<double>(Fraction::num) / static_cast<double>(Fraction::den);
  static constexpr RopePairing pairing = Pairing;

  template <std::floating_point S, std::size_t Dim>
  using Embedding = NoPositionSignal<S, Dim>;

  template <std::floating_point S, std::size_t Heads, std::size_t HeadDim>
  class Attention {
    static_assert(HeadDim % 2 == 0,
                  "RoPE rotates pairs of dimensions: the head dimension Dim / Heads must be even");

   public:
    static constexpr std::size_t pairs =
        static_cast<std::size_t>(fraction * static_cast<double>(HeadDim) / 2.0 + 0.5);
    static_assert(pairs >= 1, "RoPE: the rotated fraction leaves no pair of dimensions to rotate");
    static constexpr std::size_t rotated = 2 * pairs;

    Attention(ParameterTable&, std::string_view, std::size_t context) : context_(context) { extend(context); }

    struct Hooks : RotaryHooks {
      const S* cos;  // (positions, pairs), times the scaling's magnitude
      const S* sin;

      // Pair p = (a, b) ← (a cos θ − b sin θ,  a sin θ + b cos θ)
      void rotate(S* x, std::size_t pos) const { turn(x, pos, S(1)); }
      // the transpose of rotate (a turn by −θ), which carries gradients back
      void unrotate(S* g, std::size_t pos) const { turn(g, pos, S(-1)); }

     private:
      void turn(S* x, std::size_t pos, S direction) const {
        const S* c = cos + pos * pairs;
        const S* s = sin + pos * pairs;
        for (std::size_t i = 0; i < pairs; ++i) {
          const std::size_t ia = Pairing == RopePairing::rotate_half ? i : 2 * i;
          const std::size_t ib = Pairing == RopePairing::rotate_half ? i + pairs : 2 * i + 1;
          const S a = x[ia];
          const S b = x[ib];
          const S sn = direction * s[i];
          x[ia] = a * c[i] - b * sn;
          x[ib] = a * sn + b * c[i];
        }
      }
    };

    Hooks bind(ParameterStore<S>&, std::size_t T) {
      extend(T);
      return Hooks{{}, cos_.data(), sin_.data()};
    }

    // Another base or a stretch past the trained context (rope_scaling.hpp), from the next bind on.
    void set_rope_scaling(const RopeScaling& scaling) {
      scaling.validate();
      scaling_ = scaling;
      frequencies_ = {};
      extend(context_);
    }
    const RopeScaling& rope_scaling() const { return scaling_; }

   private:
    // Angles are computed in double and grow on demand, so longer sequences are rotated exactly.
    // Dynamic NTK's angles depend on the sequence's length past L: its table is rebuilt for each
    // new length there.
    void extend(std::size_t T) {
      const std::size_t L = scaling_.original_context != 0 ? scaling_.original_context : context_;
      const std::size_t length_key = scaling_.method == RopeScalingMethod::dynamic_ntk && T > L ? T : 0;
      if (frequencies_.per_position.empty() || length_key != frequencies_for_) {
        frequencies_ = rope_frequencies(base, rotated, scaling_, T, context_);
        frequencies_for_ = length_key;
        cos_.clear();
        sin_.clear();
      }
      const std::size_t rows = cos_.size() / pairs;
      if (rows >= T) return;
      cos_.resize(T * pairs);
      sin_.resize(T * pairs);
      for (std::size_t p = rows; p < T; ++p)
        for (std::size_t i = 0; i < pairs; ++i) {
          const double angle = static_cast<double>(p) * frequencies_.per_position[i];
          cos_[p * pairs + i] = static_cast<S>(frequencies_.magnitude * std::cos(angle));
          sin_[p * pairs + i] = static_cast<S>(frequencies_.magnitude * std::sin(angle));
        }
    }
    std::size_t context_;
    RopeScaling scaling_;
    RopeFrequencies frequencies_;
    std::size_t frequencies_for_ = 0;  // dynamic NTK: the length frequencies_ were computed for
    std::vector<S> cos_;
    std::vector<S> sin_;
  };
};

// The study's RoPE: base 10000, every dimension rotated, rotate-half pairing.
using RoPE = BasicRoPE<"rope", 10000, std::ratio<1>, RopePairing::rotate_half,
                       "rotary embedding of q and k, base 10000, rotate-half pairs (Su et al. 2021; GPT-NeoX, LLaMA)">;
// GPT-J's interleaved pairing.
using RoPEInterleaved = BasicRoPE<"rope-interleaved", 10000, std::ratio<1>, RopePairing::interleaved,
                                  "RoPE with interleaved pairs (GPT-J, the RoFormer paper)">;
// GPT-NeoX's partial rotary: a quarter of each head's dimensions rotated.
using RoPEPartial = BasicRoPE<"rope-partial", 10000, std::ratio<1, 4>, RopePairing::rotate_half,
                              "RoPE on a quarter of each head's dimensions (GPT-NeoX's rotary_pct)">;

}  // namespace posenc
