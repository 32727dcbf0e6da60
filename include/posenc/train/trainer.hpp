// Trainer<Model>: the training loop — sampled batches, AdamW steps, periodic loss estimates — with resumable state.
#pragma once

#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <tuple>

#include "posenc/config.hpp"
#include "posenc/data/dataset.hpp"
#include "posenc/encodings/position_map.hpp"
#include "posenc/kernels/dropout.hpp"
#include "posenc/kernels/profile.hpp"
#include "posenc/train/adamw.hpp"
#include "posenc/train/evaluation.hpp"
#include "posenc/train/gradient_clipping.hpp"
#include "posenc/train/process_group.hpp"
#include "posenc/train/train_config.hpp"

namespace posenc {

// One evaluation: the nanoGPT-style estimates at a step.
struct EvalRecord {
  std::int64_t step = 0;
  double train_loss = 0;
  double val_loss = 0;
  double elapsed_seconds = 0;    // wall time since the run began, evaluations included
  double tokens_per_second = 0;  // training throughput, evaluations excluded
  // Inside a curriculum stage: the validation loss on the stage's examples (train and val are on
  // the lengths the run is trained for).
  std::optional<double> stage_loss = {};
  // The schedule's steps skipped so far, this evaluation's skip included: stages that ended early
  // (TrainingStage) left them; the schedule's step is step + skipped_steps.
  std::int64_t skipped_steps = 0;
};

struct StepReport {
  std::int64_t step = 0;  // steps done
  std::int64_t total = 0;
  double loss = 0;
  double lr = 0;         // the step's learning rate
  double grad_norm = 0;  // the gradient's global L2 norm before clipping
  double elapsed_seconds = 0;
  double tokens_per_second = 0;
};

template <class Model>
class Trainer {
 public:
  using S = typename Model::scalar_type;

  // A step: grad_accum micro-batches' mean gradient, clipped to max_grad_norm, then AdamW at the
  // schedule's rate. With a process group of more than one process, training is data-parallel:
  // every process draws the same global batches, computes the gradient of its shard of each
  // (batch_shard), and the gradients are summed over the group before the optimizer step, which
  // every process then takes identically — the losses equal one process's to float rounding.
  // The data is a corpus (TextDataset) or a task (TaskData): the loss averages over the targets
  // each batch scores.
  Trainer(Model& model, const TrainingData& data, const TrainConfig& config, ProcessGroup* group = nullptr)
      : model_(model),
        data_(data),
        config_(checked(config, model, group)),
        optimizer_(model, config.adamw(), config.weight_decay_scope),
        sampler_(data.batches(Split::train, config.batch, config.context, config.seed)),
        group_(group != nullptr && group->size() > 1 ? group : nullptr) {}

  std::int64_t step() const { return optimizer_.steps(); }
  // The step of the run's schedule — its learning rate, its curriculum's stage, its end: step()
  // plus the steps skipped by stages that ended early.
  std::int64_t schedule_step() const { return step() + skipped_; }
  std::int64_t skipped_steps() const { return skipped_; }
  // The steps the run trains in all: the schedule's, less those skipped.
  std::int64_t steps_to_train() const { return config_.steps - skipped_; }
  const TrainConfig& config() const { return config_; }
  AdamW<S>& optimizer() { return optimizer_; }
  BatchStream& sampler() { return *sampler_; }

  // Time already spent before this process (when resuming), so reports continue from it.
  void set_previous_time(double elapsed_seconds, double train_seconds) {
    previous_elapsed_ = elapsed_seconds;
    previous_train_ = train_seconds;
  }
  // The step of a restored run's latest evaluation, so run() does not repeat it (a run stopped
  // during an evaluation was saved at a step it has not evaluated: run() evaluates it first).
  void set_last_evaluated_step(std::int64_t step) { last_evaluated_ = step; }
  // The steps a restored run had skipped (its latest evaluation's skipped_steps).
  void set_skipped_steps(std::int64_t skipped) { skipped_ = skipped; }
  double elapsed_seconds() const { return previous_elapsed_ + since(start_); }
  double train_seconds() const { return previous_train_ + train_seconds_; }
  double tokens_per_second() const {
    const double t = train_seconds();
    return t > 0 ? static_cast<double>(step()) * tokens_per_step() / t : 0.0;
  }

  // Estimated train and val loss at the current step, and inside a curriculum stage the
  // validation loss on the stage's examples. Each estimate's sampler is seeded from the run's seed
  // and the step, so a resumed run evaluates exactly as an uninterrupted one. should_stop is asked
  // before every batch (EvaluationStopped).
  EvalRecord evaluate(const StopCheck& should_stop = {}) {
    const auto s = static_cast<std::uint64_t>(step());
    const std::uint64_t mix = 0x9E3779B97F4A7C15ULL;
    EvalRecord r;
    r.step = step();
    r.skipped_steps = skipped_;
    const auto estimate = [&](Split split, std::uint64_t seed, std::optional<std::int64_t> stage_step) {
      const auto batches = data_.batches(split, config_.batch, config_.context, seed);
      if (stage_step) batches->at_step(*stage_step);
      return estimate_loss(model_, *batches, config_.eval_iters, group_, should_stop);
    };
    r.train_loss = estimate(Split::train, config_.seed ^ (mix * (2 * s + 1)), std::nullopt);
    r.val_loss = estimate(Split::validation, config_.seed ^ (mix * (2 * s + 2)), std::nullopt);
    if (data_.stage_at(schedule_step()))
      r.stage_loss = estimate(Split::validation, config_.seed ^ (0xC2B2AE3D27D4EB4FULL * (s + 1)), schedule_step());
    r.elapsed_seconds = elapsed_seconds();
    r.tokens_per_second = tokens_per_second();
    return r;
  }

  // Trains from step() until the schedule's step reaches config().steps (fewer steps when a
  // curriculum stage ended early). on_step(StepReport) follows every step; on_eval(EvalRecord)
  // follows an evaluation at step 0, every eval_every steps and at the last step (one a restored
  // run made is not repeated). should_stop() is asked after every step,
  // between a step's accumulated micro-batches and before every batch of an evaluation, and may end
  // the run early there — a stopped step or evaluation is abandoned (the sampler back where the
  // step began), to be made when the run resumes; a process group stops when any of its processes
  // asks. Returns whether every step and evaluation was made.
  template <class OnStep, class OnEval, class ShouldStop>
  bool run(OnStep&& on_step, OnEval&& on_eval, ShouldStop&& should_stop) {
    start_ = Clock::now();
    const StopCheck stop_check = [&] { return static_cast<bool>(should_stop()); };
    const StopCheck group_stop_check = [&] {  // the processes of a group stop together
      return group_ != nullptr ? group_->any(should_stop()) : static_cast<bool>(should_stop());
    };
    const auto evaluated = [&] {  // false: stopped during the evaluation
      try {
        EvalRecord r = evaluate(stop_check);
        end_stage_early(r);
        last_evaluated_ = r.step;
        on_eval(r);
        return true;
      } catch (const EvaluationStopped&) {
        return false;
      }
    };
    if (evaluates_now() && last_evaluated_ != step() && !evaluated()) return false;
    while (schedule_step() < config_.steps) {
      const auto t0 = Clock::now();
      const std::optional<StepReport> report = train_one_step(group_stop_check);
      train_seconds_ += since(t0);
      if (!report) return false;
      on_step(StepReport{report->step, report->total, report->loss, report->lr, report->grad_norm, elapsed_seconds(),
                         tokens_per_second()});
      if (evaluates_now() && !evaluated()) return false;
      if (group_stop_check() && schedule_step() < config_.steps) return false;
    }
    return true;
  }
  template <class OnStep, class OnEval>
  bool run(OnStep&& on_step, OnEval&& on_eval) {
    return run(on_step, on_eval, [] { return false; });
  }

 private:
  using Clock = std::chrono::steady_clock;
  static double since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  }
  // every eval_every steps trained, and at the schedule's end
  bool evaluates_now() const { return step() % config_.eval_every == 0 || schedule_step() == config_.steps; }
  // A stage with a loss to end at, reached: the run skips to the stage's end (see TrainingStage).
  void end_stage_early(EvalRecord& r) {
    const std::optional<TrainingStage> stage = data_.stage_at(schedule_step());
    if (!stage || !stage->until_loss || !r.stage_loss || !(*r.stage_loss < *stage->until_loss)) return;
    skipped_ += stage->end - schedule_step();
    r.skipped_steps = skipped_;
  }
  double tokens_per_step() const { return static_cast<double>(config_.windows_per_step() * config_.context); }

  // The gradient of the step's batches (this process's shard of each), scaled by `weight`: the
  // shard's share of a batch over the number of batches, so that the sums over batches and
  // processes are the mean of the batches' means. Returns this process's share of the mean loss.
  // A batch that scores only some targets (a task's) weighs its shard by the shard's share of them.
  // nullopt: should_stop asked to stop between two micro-batches; the sampler is put back where
  // the step began, so the step is made whole when the run resumes.
  std::optional<double> accumulate_gradient(const StopCheck& should_stop) {
    std::size_t first = 0, last = config_.batch;
    if (group_ != nullptr) std::tie(first, last) = batch_shard(config_.batch, group_->rank(), group_->size());
    const double rows_share = static_cast<double>(last - first) / static_cast<double>(config_.batch);
    const double weight = rows_share / static_cast<double>(config_.grad_accum);
    model_.zero_grad();
    double loss = 0;
    // the dropout masks of the run's seed and this step, whatever model (and initialisation seed)
    // resumed it
    const std::uint64_t pass = DropoutMask::mix(config_.seed + DropoutMask::mix(static_cast<std::uint64_t>(step())));
    sampler_->at_step(schedule_step());
    const std::string sampler_at_start = config_.grad_accum > 1 ? sampler_->rng().state() : std::string();
    for (std::size_t k = 0; k < config_.grad_accum; ++k) {
      if (k > 0 && should_stop()) {  // a long accumulation must not outlast a stop request
        model_.clear_dropout_pass();
        model_.clear_positions();
        sampler_->rng().set_state(sampler_at_start);
        return std::nullopt;
      }
      sampler_->sample(batch_);
      // the masks of the step's whole batch: micro-batch k holds its sequences k·batch…, a shard first…
      model_.set_dropout_pass(pass, k * config_.batch + first);
      // randomized positions: one draw per micro-batch, shared by its sequences (as Ruoss et al.'s
      // code draws once per forward pass) and by every process's shard of it
      if (const std::size_t range = model_.config().position_range; range != 0)
        model_.set_positions(draw_positions(DropoutMask::mix(pass ^ DropoutMask::mix(k + 1)),
                                            batch_.inputs.shape()[1], range));
      if (group_ != nullptr) copy_rows(shard_, batch_, first, last);
      const Batch& mine = group_ != nullptr ? shard_ : batch_;
      if (!batch_.mask) {
        loss += static_cast<double>(model_.loss_and_backward(mine.inputs, mine.targets));
        continue;
      }
      // its share of the batch's scored targets, not of its rows: the weight below is the rows'
      const double scale = detail::shard_share(batch_, first, last) / rows_share;
      if (scale > 0)
        loss += static_cast<double>(model_.loss_and_backward(mine.inputs, mine.targets, *mine.mask,
                                                             static_cast<S>(scale))) * scale;
    }
    model_.clear_dropout_pass();  // evaluations that follow see the whole model
    model_.clear_positions();     // and draw their positions from their batches
    if (weight != 1) {
      POSENC_PROFILE_SCOPE("optimizer: scale gradients");
      scale_gradients(model_.store().grads, static_cast<S>(weight));
    }
    return loss * weight;
  }

  std::optional<StepReport> train_one_step(const StopCheck& should_stop) {
    StepReport r;
    const std::optional<double> loss = accumulate_gradient(should_stop);
    if (!loss) return std::nullopt;
    r.loss = *loss;
    if (group_ != nullptr) {
      auto& grads = model_.store().grads;
      group_->sum(grads.data(), grads.size());
      group_->sum(&r.loss, 1);
    }
    // Past a non-finite loss every parameter soon is one too: stop rather than train on garbage.
    if (!std::isfinite(r.loss))
      fail("training diverged at step ", step() + 1, ": the training loss is ", r.loss,
           " (a lower learning rate may help)");
    POSENC_PROFILE_SCOPE("optimizer: adamw");
    r.grad_norm = config_.max_grad_norm ? clip_grad_norm(model_.store().grads, *config_.max_grad_norm)
                                        : gradient_norm(model_.store().grads);
    r.lr = config_.schedule.at(config_.lr, schedule_step(), config_.steps);
    optimizer_.set_learning_rate(r.lr);
    optimizer_.step(model_.store());
    r.step = step();
    r.total = steps_to_train();
    return r;
  }

  static TrainConfig checked(const TrainConfig& c, const Model& model, const ProcessGroup* group) {
    if (group != nullptr && c.batch < static_cast<std::size_t>(group->size()))
      fail("training: batch ", c.batch, " cannot be split over ", group->size(),
           " processes; every process needs at least one window");
    c.check();
    if (c.context > model.max_context())
      fail("training: context ", c.context, " exceeds the model's maximum of ", model.max_context());
    return c;
  }

  Model& model_;
  const TrainingData& data_;
  TrainConfig config_;
  AdamW<S> optimizer_;
  std::unique_ptr<BatchStream> sampler_;
  ProcessGroup* group_;  // nullptr: this process alone
  Batch batch_, shard_;
  Clock::time_point start_ = Clock::now();
  double previous_elapsed_ = 0, previous_train_ = 0, train_seconds_ = 0;
  std::int64_t last_evaluated_ = -1;
  std::int64_t skipped_ = 0;  // the schedule's steps stages that ended early left
};

}  // namespace posenc
