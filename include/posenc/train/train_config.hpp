// TrainConfig: a training loop's settings — length, batch, optimizer, schedule, clipping, accumulation, evaluations.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "posenc/train/adamw.hpp"
#include "posenc/train/schedule.hpp"

namespace posenc {

// The defaults are the published study's: constant rate 1e-3, PyTorch's AdamW otherwise, no
// clipping, no accumulation.
struct TrainConfig {
  std::int64_t steps = 2000;
  std::size_t batch = 32;  // windows per micro-batch; a step takes grad_accum of them
  std::size_t context = 128;
  double lr = 1e-3;  // the peak rate; `schedule` gives each step's
  LearningRateSchedule schedule{};
  double weight_decay = 0.01;
  WeightDecayScope weight_decay_scope = WeightDecayScope::all;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;  // torch.optim.AdamW's
  // Scale the gradients so their global L2 norm is at most this (torch.nn.utils.clip_grad_norm_);
  // none: never.
  std::optional<double> max_grad_norm{};
  // Micro-batches per optimizer step, as nanoGPT's gradient_accumulation_steps: the step's gradient
  // is their mean, which equals one batch of grad_accum·batch windows to float rounding.
  std::size_t grad_accum = 1;
  std::int64_t eval_every = 250;
  std::size_t eval_iters = 200;
  std::uint64_t seed = 1337;  // the batch sampler's; the model's initialisation has its own
  bool operator==(const TrainConfig&) const = default;

  AdamWConfig adamw() const {
    return {.lr = lr, .beta1 = beta1, .beta2 = beta2, .eps = eps, .weight_decay = weight_decay};
  }
  std::size_t windows_per_step() const { return batch * grad_accum; }

  // Throws posenc::Error naming the first setting out of its range (the optimizer's included).
  void check() const {
    if (steps <= 0) fail("training: steps must be positive, got ", steps);
    if (batch == 0) fail("training: batch must be positive");
    if (context == 0) fail("training: context must be positive");
    if (eval_every <= 0) fail("training: eval_every must be positive, got ", eval_every);
    if (eval_iters == 0) fail("training: eval_iters must be positive");
    if (grad_accum == 0) fail("training: grad_accum must be positive");
    if (max_grad_norm && !(*max_grad_norm > 0 && std::isfinite(*max_grad_norm)))
      fail("training: the gradient-clipping norm must be a positive number, got ", *max_grad_norm);
    schedule.check(steps);
    adamw().check();
  }
};

inline nlohmann::json to_json(const TrainConfig& c) {
  return {{"steps", c.steps},
          {"batch", c.batch},
          {"context", c.context},
          {"lr", c.lr},
          {"lr_schedule", schedule_kind_name(c.schedule.kind)},
          {"warmup_steps", c.schedule.warmup_steps},
          {"min_lr_fraction", c.schedule.min_lr_fraction},
          {"decay_fraction", c.schedule.decay_fraction},
          {"weight_decay", c.weight_decay},
          {"weight_decay_scope", weight_decay_scope_name(c.weight_decay_scope)},
          {"beta1", c.beta1},
          {"beta2", c.beta2},
          {"eps", c.eps},
          {"grad_clip", c.max_grad_norm ? nlohmann::json(*c.max_grad_norm) : nlohmann::json(nullptr)},
          {"grad_accum", c.grad_accum},
          {"eval_every", c.eval_every},
          {"eval_iters", c.eval_iters},
          {"seed", c.seed}};
}

// Reads what to_json wrote. The keys past lr and weight_decay came later: each takes its default,
// what runs made before it used, when missing. nlohmann::json's exceptions and posenc::Error say
// what else is wrong.
inline TrainConfig train_config_from_json(const nlohmann::json& j) {
  const TrainConfig defaults;
  TrainConfig c;
  c.steps = j.at("steps").get<std::int64_t>();
  c.batch = j.at("batch").get<std::size_t>();
  c.context = j.at("context").get<std::size_t>();
  c.lr = j.at("lr").get<double>();
  c.schedule.kind =
      parse_schedule_kind(j.value("lr_schedule", std::string(schedule_kind_name(defaults.schedule.kind))));
  c.schedule.warmup_steps = j.value("warmup_steps", defaults.schedule.warmup_steps);
  c.schedule.min_lr_fraction = j.value("min_lr_fraction", defaults.schedule.min_lr_fraction);
  c.schedule.decay_fraction = j.value("decay_fraction", defaults.schedule.decay_fraction);
  c.weight_decay = j.at("weight_decay").get<double>();
  c.weight_decay_scope = parse_weight_decay_scope(
      j.value("weight_decay_scope", std::string(weight_decay_scope_name(defaults.weight_decay_scope))));
  c.beta1 = j.value("beta1", defaults.beta1);
  c.beta2 = j.value("beta2", defaults.beta2);
  c.eps = j.value("eps", defaults.eps);
  if (const auto clip = j.find("grad_clip"); clip != j.end() && !clip->is_null()) c.max_grad_norm = clip->get<double>();
  c.grad_accum = j.value("grad_accum", defaults.grad_accum);
  c.eval_every = j.at("eval_every").get<std::int64_t>();
  c.eval_iters = j.at("eval_iters").get<std::size_t>();
  c.seed = j.at("seed").get<std::uint64_t>();
  return c;
}

}  // namespace posenc
