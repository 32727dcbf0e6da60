// AdamW<S>: the optimizer state (both moments and the step count) as flat buffers laid out by the model's table.
#pragma once

#include <concepts>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "posenc/config.hpp"
#include "posenc/enum_names.hpp"
#include "posenc/kernels/adamw.hpp"
#include "posenc/parameters.hpp"

namespace posenc {

// Which parameters weight decay shrinks: every one (PyTorch's AdamW applied to model.parameters(),
// the published study's), or, as nanoGPT, only those of two or more dimensions (the linear weights
// and embedding tables), leaving biases, layer-norm gains and a policy's scalars undecayed.
enum class WeightDecayScope { all, matrices };

inline constexpr EnumNames<WeightDecayScope, 2> weight_decay_scopes{
    "weight-decay scope", {{{WeightDecayScope::all, "all"}, {WeightDecayScope::matrices, "matrices"}}}};
static_assert(weight_decay_scopes.in_order());

inline constexpr std::string_view weight_decay_scope_name(WeightDecayScope scope) {
  return weight_decay_scopes.name(scope);
}
inline WeightDecayScope parse_weight_decay_scope(std::string_view name) { return weight_decay_scopes.parse(name); }

template <std::floating_point S>
class AdamW {
 public:
  AdamW(std::shared_ptr<const ParameterTable> table, const AdamWConfig& config = {},
        WeightDecayScope scope = WeightDecayScope::all)
      : config_(config), scope_(scope), m_(table), v_(table) {
    config.check();
    // Runs of neighbouring tensors that are decayed alike, so a step is a few calls of the kernel.
    for (const ParameterInfo& e : table->entries()) {
      const bool decayed = scope == WeightDecayScope::all || e.shape.size() >= 2;
      if (!ranges_.empty() && ranges_.back().decayed == decayed) ranges_.back().size += e.slot.size;
      else ranges_.push_back({e.slot.offset, e.slot.size, decayed});
    }
  }
  // The optimizer for a model: AdamW<float> opt(model, {.lr = 1e-3}).
  template <class Model>
    requires requires(const Model& m) { m.parameters().shared_table(); }
  explicit AdamW(const Model& model, const AdamWConfig& config = {}, WeightDecayScope scope = WeightDecayScope::all)
      : AdamW(model.parameters().shared_table(), config, scope) {}

  // p ← AdamW(p, grad); the model's gradients are read, not cleared.
  void step(ParameterStore<S>& store) {
    if (&store.values.table() != &m_.table())
      fail("AdamW::step: the parameters were laid out by another model's table");
    ++steps_;
    AdamWConfig undecayed = config_;
    undecayed.weight_decay = 0;
    for (const Range& r : ranges_)
      adamw_update(store.values.data() + r.offset, store.grads.data() + r.offset, m_.data() + r.offset,
                   v_.data() + r.offset, r.size, steps_, r.decayed ? config_ : undecayed);
  }

  // The rate of the following steps (a schedule sets it before each).
  void set_learning_rate(double lr) {
    if (!(lr >= 0)) fail("AdamW: learning rate must be non-negative, got ", lr);
    config_.lr = lr;
  }
  WeightDecayScope weight_decay_scope() const { return scope_; }

  std::int64_t steps() const { return steps_; }
  void set_steps(std::int64_t steps) { steps_ = steps; }  // when restoring a saved state
  const AdamWConfig& config() const { return config_; }
  ParameterBuffer<S>& first_moment() { return m_; }
  ParameterBuffer<S>& second_moment() { return v_; }
  const ParameterBuffer<S>& first_moment() const { return m_; }
  const ParameterBuffer<S>& second_moment() const { return v_; }

 private:
  struct Range {
    std::size_t offset, size;
    bool decayed;
  };
  AdamWConfig config_;
  WeightDecayScope scope_;
  std::vector<Range> ranges_;
  ParameterBuffer<S> m_;
  ParameterBuffer<S> v_;
  std::int64_t steps_ = 0;
};

// AdamW opt(model) and AdamW opt(model, {.lr = 1e-3}) take the model's scalar type.
template <class Model>
  requires requires(const Model& m) { m.parameters().shared_table(); }
AdamW(const Model&, const AdamWConfig& = {}, WeightDecayScope = WeightDecayScope::all)
    -> AdamW<typename Model::scalar_type>;

}  // namespace posenc
