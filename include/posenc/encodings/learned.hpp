// Learned: a trainable (context × Dim) position table added to the token embeddings, as in GPT-2.
#pragma once

#include <string_view>

#include "posenc/encodings/concept.hpp"

namespace posenc {

struct Learned {
  static constexpr std::string_view name = "learned";
  static constexpr std::string_view summary = "a trainable position table added to the token embeddings (GPT-2)";

  template <std::floating_point S, std::size_t Dim>
  class Embedding {
   public:
    Embedding(ParameterTable& table, std::size_t context)
        : wpe_(table.add("transformer.wpe.weight", {context, Dim}, Init::embedding)), rows_(context) {}
    // The table has one row per trained position and nothing beyond: longer inputs are refused.
    std::size_t max_positions() const { return rows_; }
    const S* positions(const ParameterStore<S>& store, std::size_t) { return store.values[wpe_]; }
    S* position_grads(ParameterStore<S>& store) const { return store.grads[wpe_]; }

   private:
    Slot wpe_;
    std::size_t rows_;
  };

  template <std::floating_point S, std::size_t Heads, std::size_t HeadDim>
  using Attention = NoAttentionSignal<S, Heads, HeadDim>;
};

}  // namespace posenc
