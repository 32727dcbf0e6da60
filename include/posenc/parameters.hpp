// ParameterTable, ParameterBuffer and ParameterStore: every tensor of a model in one flat buffer, named from one table.
#pragma once

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "posenc/config.hpp"
#include "posenc/enum_names.hpp"
#include "posenc/random.hpp"
#include "posenc/tensor.hpp"

namespace posenc {

// How a parameter starts under InitScheme::normal, posenc's rule and the published study's:
// weights N(0, 0.02), embedding tables (tokens, learned positions) N(0, embedding_std), 0.02
// unless the model is told otherwise, biases 0, layer-norm gains 1; a policy's own scalars may
// start at a constant of their choosing.
enum class Init { normal, embedding, zeros, ones, constant };
inline constexpr double init_std = 0.02;

// How a parameter starts under InitScheme::pytorch: as the PyTorch module that holds it starts it
// (nn.Linear's kaiming_uniform_(a=√5) weight and its bias both U(−1/√fan_in, 1/√fan_in);
// nn.Embedding N(0, embedding_std), PyTorch's being 1), or as the policy's reference code starts a
// scalar it keeps positive through softplus (a uniform draw, floored, stored as softplus⁻¹).
// as_init: the Init rule, e.g. LayerNorm's ones and zeros, which PyTorch shares.
struct TorchInit {
  enum class Kind { as_init, uniform, embedding, uniform_through_softplus };
  Kind kind = Kind::as_init;
  double low = 0, high = 0, floor = 0;
  bool operator==(const TorchInit&) const = default;

  static TorchInit linear(std::size_t fan_in) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
    return {Kind::uniform, -bound, bound};
  }
  static TorchInit embedding() { return {Kind::embedding}; }
  // U(low, high), raised to `floor`, stored as log(expm1(value)) so that softplus gives it back.
  static TorchInit uniform_through_softplus(double low, double high, double floor) {
    return {Kind::uniform_through_softplus, low, high, floor};
  }
};

// nn.Embedding's std, the embedding_std that makes InitScheme::pytorch PyTorch's defaults throughout.
inline constexpr double pytorch_embedding_std = 1.0;

// Which rule starts a model: Init (normal) or TorchInit (pytorch).
enum class InitScheme { normal, pytorch };

// The embedding tables' std that belongs to a scheme: GPT-2's 0.02, or nn.Embedding's 1.
inline constexpr double default_embedding_std(InitScheme scheme) {
  return scheme == InitScheme::normal ? init_std : pytorch_embedding_std;
}

inline constexpr EnumNames<InitScheme, 2> init_schemes{
    "initialisation", {{{InitScheme::normal, "normal"}, {InitScheme::pytorch, "pytorch"}}}};
static_assert(init_schemes.in_order());

inline constexpr std::string_view init_scheme_name(InitScheme scheme) { return init_schemes.name(scheme); }
inline InitScheme parse_init_scheme(std::string_view name) { return init_schemes.parse(name); }

// Where one named tensor lives inside a flat buffer.
struct Slot {
  std::size_t offset = 0;
  std::size_t size = 0;
};

struct ParameterInfo {
  std::string name;                // nanoGPT's name, e.g. "transformer.h.0.attn.c_attn.weight"
  std::vector<std::size_t> shape;  // linear weights are (out, in), as PyTorch stores them
  Init init = Init::zeros;
  Slot slot;
  double init_value = 0;  // for Init::constant
  TorchInit torch_init{};  // under InitScheme::pytorch
};

// The one table from which every flat buffer's named views are generated. Entries are laid out
// in the order they are added.
class ParameterTable {
 public:
  Slot add(std::string name, std::vector<std::size_t> shape, Init init, double init_value = 0,
           TorchInit torch_init = {}) {
    if (contains(name)) fail("ParameterTable: the tensor name '", name, "' is already taken");
    std::size_t size = 1;
    for (std::size_t extent : shape) size *= extent;
    const Slot slot{total_, size};
    entries_.push_back(ParameterInfo{std::move(name), std::move(shape), init, slot, init_value, torch_init});
    total_ += size;
    return slot;
  }

  std::size_t total_size() const { return total_; }
  const std::vector<ParameterInfo>& entries() const { return entries_; }

  bool contains(std::string_view name) const {
    return std::any_of(entries_.begin(), entries_.end(),
                       [&](const ParameterInfo& e) { return e.name == name; });
  }

  const ParameterInfo& find(std::string_view name) const {
    for (const ParameterInfo& e : entries_)
      if (e.name == name) return e;
    fail("ParameterTable: no tensor named '", name, "' (the model has ", entries_.size(),
         " tensors, e.g. '", entries_.empty() ? std::string() : entries_.front().name, "')");
  }

 private:
  std::vector<ParameterInfo> entries_;
  std::size_t total_ = 0;
};

// One contiguous buffer laid out by a ParameterTable: the values, the gradients, or an optimizer
// moment. The table is shared, so buffers built from it agree on every offset.
template <std::floating_point S>
class ParameterBuffer {
 public:
  explicit ParameterBuffer(std::shared_ptr<const ParameterTable> table)
      : table_(std::move(table)), data_(std::vector<S>(table_->total_size(), S(0))) {}

  std::size_t size() const { return data_.size(); }
  S* data() { return data_.data(); }
  const S* data() const { return data_.data(); }
  S* operator[](Slot slot) { return data_.data() + slot.offset; }
  const S* operator[](Slot slot) const { return data_.data() + slot.offset; }

  // The named tensor as an xtensor view with its own shape, e.g. view("lm_head.weight") is (V,D).
  TensorView<S> view(std::string_view name) {
    const ParameterInfo& e = table_->find(name);
    return view_of(data() + e.slot.offset, e.shape);
  }
  TensorView<const S> view(std::string_view name) const {
    const ParameterInfo& e = table_->find(name);
    return view_of(data() + e.slot.offset, e.shape);
  }

  void fill(S value) { std::fill(data_.begin(), data_.end(), value); }
  const ParameterTable& table() const { return *table_; }
  const std::shared_ptr<const ParameterTable>& shared_table() const { return table_; }

 private:
  std::shared_ptr<const ParameterTable> table_;
  std::vector<S> data_;
};

// A model's parameter values and their gradients, both laid out by the same table.
template <std::floating_point S>
struct ParameterStore {
  explicit ParameterStore(std::shared_ptr<const ParameterTable> table)
      : values(table), grads(table) {}

  // Draws every value by its entry's rule under `scheme`, in table order, from one seeded
  // generator. A normal draw takes one step of the generator whatever its std, so embedding_std
  // changes the embedding tables and nothing else.
  void initialize(std::uint64_t seed, double embedding_std = init_std, InitScheme scheme = InitScheme::normal) {
    Rng rng(seed);
    for (const ParameterInfo& e : values.table().entries()) {
      S* p = values[e.slot];
      const TorchInit& t = e.torch_init;
      if (scheme == InitScheme::pytorch && t.kind != TorchInit::Kind::as_init) {
        for (std::size_t i = 0; i < e.slot.size; ++i) {
          switch (t.kind) {
            case TorchInit::Kind::uniform: p[i] = static_cast<S>(t.low + (t.high - t.low) * rng.uniform()); break;
            case TorchInit::Kind::embedding: p[i] = static_cast<S>(rng.normal(0.0, embedding_std)); break;
            case TorchInit::Kind::uniform_through_softplus: {
              const double value = std::max(t.floor, t.low + (t.high - t.low) * rng.uniform());
              p[i] = static_cast<S>(std::log(std::expm1(value)));
              break;
            }
            case TorchInit::Kind::as_init: break;
          }
        }
        continue;
      }
      for (std::size_t i = 0; i < e.slot.size; ++i) {
        switch (e.init) {
          case Init::normal: p[i] = static_cast<S>(rng.normal(0.0, init_std)); break;
          case Init::embedding: p[i] = static_cast<S>(rng.normal(0.0, embedding_std)); break;
          case Init::zeros: p[i] = S(0); break;
          case Init::ones: p[i] = S(1); break;
          case Init::constant: p[i] = static_cast<S>(e.init_value); break;
        }
      }
    }
  }

  ParameterBuffer<S> values;
  ParameterBuffer<S> grads;
};

}  // namespace posenc
