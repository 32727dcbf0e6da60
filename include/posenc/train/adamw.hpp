// AdamW<S>: the optimizer state (both moments and the step count) as flat buffers laid out by the model's table.
#pragma once

#include <concepts>
#include <cstdint>
#include <memory>

#include "posenc/config.hpp"
#include "posenc/kernels/adamw.hpp"
#include "posenc/parameters.hpp"

namespace posenc {

template <std::floating_point S>
class AdamW {
 public:
  AdamW(std::shared_ptr<const ParameterTable> table, const AdamWConfig& config = {})
      : config_(config), m_(table), v_(table) {
    if (!(config.lr >= 0)) fail("AdamW: learning rate must be non-negative, got ", config.lr);
    if (!(config.beta1 >= 0 && config.beta1 < 1 && config.beta2 >= 0 && config.beta2 < 1))
      fail("AdamW: betas must lie in [0, 1), got (", config.beta1, ", ", config.beta2, ")");
    if (!(config.eps > 0)) fail("AdamW: eps must be positive, got ", config.eps);
  }
  // The optimizer for a model: AdamW<float> opt(model, {.lr = 1e-3}).
  template <class Model>
    requires requires(const Model& m) { m.parameters().shared_table(); }
  explicit AdamW(const Model& model, const AdamWConfig& config = {})
      : AdamW(model.parameters().shared_table(), config) {}

  // p ← AdamW(p, grad); the model's gradients are read, not cleared.
  void step(ParameterStore<S>& store) {
    if (&store.values.table() != &m_.table())
      fail("AdamW::step: the parameters were laid out by another model's table");
    ++steps_;
    adamw_update(store.values.data(), store.grads.data(), m_.data(), v_.data(), m_.size(), steps_,
                 config_);
  }

  std::int64_t steps() const { return steps_; }
  void set_steps(std::int64_t steps) { steps_ = steps; }  // when restoring a saved state
  const AdamWConfig& config() const { return config_; }
  ParameterBuffer<S>& first_moment() { return m_; }
  ParameterBuffer<S>& second_moment() { return v_; }
  const ParameterBuffer<S>& first_moment() const { return m_; }
  const ParameterBuffer<S>& second_moment() const { return v_; }

 private:
  AdamWConfig config_;
  ParameterBuffer<S> m_;
  ParameterBuffer<S> v_;
  std::int64_t steps_ = 0;
};

// AdamW opt(model) and AdamW opt(model, {.lr = 1e-3}) take the model's scalar type.
template <class Model>
  requires requires(const Model& m) { m.parameters().shared_table(); }
AdamW(const Model&, const AdamWConfig& = {}) -> AdamW<typename Model::scalar_type>;

}  // namespace posenc
