// T5Bias: learned per-head biases on the scores over log-spaced relative-distance buckets (Raffel et al.).
#pragma once

#include <cmath>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "posenc/encodings/concept.hpp"

namespace posenc {

// T5's bucket of a distance n = i − j ≥ 0 (causal, so only non-negative distances): distances
// below half the buckets get a bucket each; the rest share log-spaced buckets up to max_distance,
// and everything beyond lands in the last bucket. The same rule as Hugging Face's
// _relative_position_bucket(−n, bidirectional=False, num_buckets, max_distance).
inline std::size_t t5_bucket(std::size_t distance, std::size_t buckets = 32, std::size_t max_distance = 128) {
  const std::size_t exact = buckets / 2;
  if (distance < exact) return distance;
  const double log_ratio = std::log(static_cast<double>(distance) / static_cast<double>(exact)) /
                           std::log(static_cast<double>(max_distance) / static_cast<double>(exact));
  const auto large = exact + static_cast<std::size_t>(log_ratio * static_cast<double>(buckets - exact));
  return std::min(large, buckets - 1);
}

// Each layer has its own (Buckets, Heads) table, "transformer.h.{l}.attn.relative_attention_bias.weight"
// (T5 shares one table across layers; a table per layer is the common reimplementation).
template <std::size_t Buckets = 32, std::size_t MaxDistance = 128>
struct BasicT5Bias {
  static_assert(Buckets >= 2 && MaxDistance > Buckets / 2, "T5Bias: needs max_distance > buckets / 2");
  static constexpr std::string_view name = "t5";
  static constexpr std::string_view summary =
      "learned per-head biases over log-spaced distance buckets (Raffel et al. 2020)";

  template <std::floating_point S, std::size_t Dim>
  using Embedding = NoPositionSignal<S, Dim>;

  template <std::floating_point S, std::size_t Heads, std::size_t HeadDim>
  class Attention {
   public:
    Attention(ParameterTable& table, std::string_view prefix, std::size_t context)
        : table_(table.add(std::string(prefix) + "relative_attention_bias.weight", {Buckets, Heads}, Init::normal, 0,
                           TorchInit::embedding())) {  // an nn.Embedding in T5's code
      extend(context);
    }

    struct Hooks : TrainableBiasHooks {
      const S* bias;                   // (Buckets, Heads)
      S* grad;                         // (Buckets, Heads)
      const std::uint16_t* bucket_of;  // distance → bucket

      // row[j] += bias[bucket(|i − key|), h], key = first_key + j
      void add_bias(S* row, std::size_t head, std::size_t query, std::size_t first_key, std::size_t keys) const {
        for (std::size_t j = 0; j < keys; ++j)
          row[j] += bias[bucket_of[relative_distance(query, first_key + j)] * Heads + head];
      }
      // s_ij += bias[bucket, h]  →  grad[bucket, h] += ds_ij
      void bias_backward(const S* drow, std::size_t head, std::size_t query, std::size_t keys) {
        for (std::size_t j = 0; j < keys; ++j)
          grad[bucket_of[relative_distance(query, j)] * Heads + head] += drow[j];
      }
    };

    Hooks bind(ParameterStore<S>& store, std::size_t T) {
      extend(T);
      return Hooks{{}, store.values[table_], store.grads[table_], buckets_.data()};
    }

   private:
    void extend(std::size_t T) {
      for (std::size_t d = buckets_.size(); d < T; ++d)
        buckets_.push_back(static_cast<std::uint16_t>(t5_bucket(d, Buckets, MaxDistance)));
    }
    Slot table_;
    std::vector<std::uint16_t> buckets_;
  };
};

using T5Bias = BasicT5Bias<>;

}  // namespace posenc
