// Kerple: the logarithmic relative bias −r1_h·log(1 + r2_h·(i − j)), r1 and r2 learned and positive (Chi et al. 2022).
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "posenc/encodings/concept.hpp"

namespace posenc {

// r1 and r2 are kept positive as softplus of the stored parameters
// "transformer.h.{l}.attn.kerple.r1" and "….r2" (Heads each), which start near 0, so r ≈ ln 2;
// under InitScheme::pytorch as the authors' code starts p and a: r1 ~ U(0, 2), r2 ~ U(0, 1), each
// at least the 0.01 it clamps them to.
struct Kerple {
  static constexpr std::string_view name = "kerple";
  static constexpr std::string_view summary =
      "a learned logarithmic distance bias -r1*log(1 + r2*d) per head (Chi et al. 2022)";

  static constexpr double reference_floor = 0.01;

  template <std::floating_point S, std::size_t Dim>
  using Embedding = NoPositionSignal<S, Dim>;

  template <std::floating_point S, std::size_t Heads, std::size_t HeadDim>
  class Attention {
   public:
    Attention(ParameterTable& table, std::string_view prefix, std::size_t)
        : r1_(table.add(std::string(prefix) + "kerple.r1", {Heads}, Init::normal, 0,
                        TorchInit::uniform_through_softplus(0, 2, reference_floor))),
          r2_(table.add(std::string(prefix) + "kerple.r2", {Heads}, Init::normal, 0,
                        TorchInit::uniform_through_softplus(0, 1, reference_floor))) {}

    struct Hooks : TrainableBiasHooks {
      std::array<S, Heads> r1;            // softplus of the parameters
      std::array<S, Heads> dr1, dr2;      // d softplus / d parameter = sigmoid(parameter)
      const S* log_term;                  // (Heads, positions): log(1 + r2·d) for d = 0..positions−1
      const S* ratio;                     // (Heads, positions): d / (1 + r2·d), its derivative in r2
      std::size_t positions;
      S* grad_r1;
      S* grad_r2;

      // row[j] += −r1·log(1 + r2·|i − key|), key = first_key + j
      void add_bias(S* row, std::size_t head, std::size_t query, std::size_t first_key, std::size_t keys) const {
        const S* term = log_term + head * positions;
        for (std::size_t j = 0; j < keys; ++j) row[j] -= r1[head] * term[relative_distance(query, first_key + j)];
      }
      // b = −r1·log(1 + r2·d)  →  db/dr1 = −log(1 + r2·d),  db/dr2 = −r1·d / (1 + r2·d),
      // each times sigmoid(parameter) through the softplus
      void bias_backward(const S* drow, std::size_t head, std::size_t query, std::size_t keys) {
        const S* term = log_term + head * positions;
        const S* r = ratio + head * positions;
        S g1 = 0, g2 = 0;
        for (std::size_t j = 0; j < keys; ++j) {
          const std::size_t d = relative_distance(query, j);
          g1 -= drow[j] * term[d];
          g2 -= drow[j] * r[d];
        }
        grad_r1[head] += g1 * dr1[head];
        grad_r2[head] += g2 * r1[head] * dr2[head];
      }
    };

    // The per-distance terms are computed once per call, for the T distances a sequence of T
    // positions has, instead of a logarithm per score.
    Hooks bind(ParameterStore<S>& store, std::size_t T) {
      Hooks h{};
      const S* p1 = store.values[r1_];
      const S* p2 = store.values[r2_];
      tables_.resize(2 * Heads * T);
      for (std::size_t i = 0; i < Heads; ++i) {
        h.r1[i] = softplus(p1[i]);
        h.dr1[i] = sigmoid(p1[i]);
        h.dr2[i] = sigmoid(p2[i]);
        const S r2 = softplus(p2[i]);
        for (std::size_t d = 0; d < T; ++d) {
          const auto distance = static_cast<S>(d);
          tables_[i * T + d] = std::log1p(r2 * distance);
          tables_[(Heads + i) * T + d] = distance / (S(1) + r2 * distance);
        }
      }
      h.log_term = tables_.data();
      h.ratio = tables_.data() + Heads * T;
      h.positions = T;
      h.grad_r1 = store.grads[r1_];
      h.grad_r2 = store.grads[r2_];
      return h;
    }

   private:
    Slot r1_, r2_;
    std::vector<S> tables_;  // the hooks' log_term, then ratio
  };
};

}  // namespace posenc
