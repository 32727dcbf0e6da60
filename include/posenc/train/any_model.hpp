// AnyModel: a CharTransformer of any policy and size behind one interface; make_any_model(), the runtime dispatcher.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "posenc/config.hpp"
#include "posenc/encodings/all.hpp"
#include "posenc/io/checkpoint.hpp"
#include "posenc/io/safetensors.hpp"
#include "posenc/model/aliases.hpp"
#include "posenc/model/char_transformer.hpp"
#include "posenc/model/model_sizes.hpp"
#include "posenc/model/generation.hpp"
#include "posenc/train/evaluation.hpp"
#include "posenc/train/process_group.hpp"
#include "posenc/train/init_from.hpp"
#include "posenc/train/position_probes.hpp"
#include "posenc/train/stop_check.hpp"
#include "posenc/train/task_evaluation.hpp"
#include "posenc/train/training_run.hpp"

namespace posenc {

// The library's model-generic functions (run_training, evaluate_loss, ...) on one model.
class AnyModel {
 public:
  virtual ~AnyModel() = default;
  virtual std::string_view encoding_name() const = 0;
  virtual std::size_t parameter_count() const = 0;
  virtual std::size_t vocab_size() const = 0;
  // The logits (B, T, V) of `inputs`, no gradient, in a tensor the caller owns.
  virtual Tensor<float, 3> logits(const Tokens& inputs) = 0;
  // The attention probabilities (B, H, T, T) of block `layer` for `inputs` (B, T), in a tensor the
  // caller owns (CharTransformer::attention_probabilities).
  virtual Tensor<float, 4> attention_probabilities(const Tokens& inputs, std::size_t layer) = 0;
  // The mean cross-entropy of `targets` after `inputs` (B, T each), no gradient.
  virtual double loss(const Tokens& inputs, const Tokens& targets) = 0;
  // A parameter tensor of the model: its nanoGPT name and shape, and its values in the model's
  // one buffer (valid while the model lives and is not trained).
  struct NamedParameter {
    const std::string* name;
    const std::vector<std::size_t>* shape;
    const float* values;
  };
  virtual std::vector<NamedParameter> named_parameters() const = 0;
  virtual std::size_t max_context() const = 0;
  // Whether max_context() is the rows of a position table (Learned), not a chosen limit.
  virtual bool context_bounded_by_position_table() const = 0;
  virtual std::vector<EvalRecord> train(const TrainingData& data, const TrainConfig& config, const RunDirectory& run,
                                        bool resume, const TrainingCallbacks& callbacks, ProcessGroup* group) = 0;
  virtual LossResult evaluate_loss(const std::vector<TokenId>& tokens, std::size_t context, std::size_t batch,
                                   const StopCheck& should_stop = {}) = 0;
  virtual LossResult evaluate_loss_sliding(const std::vector<TokenId>& tokens, std::size_t length,
                                           std::size_t stride, const StopCheck& should_stop = {}) = 0;
  virtual double estimate_loss(const std::vector<TokenId>& tokens, std::size_t batch, std::size_t context,
                               std::size_t iterations, std::uint64_t seed, std::string_view split_name) = 0;
  // … or over `iterations` batches of a split of any TrainingData (a task's: the loss on the answers).
  virtual double estimate_loss(const TrainingData& data, Split split, std::size_t batch, std::size_t context,
                               std::size_t iterations, std::uint64_t seed, const StopCheck& should_stop = {}) = 0;
  virtual void load_parameters(const SafetensorsFile& file) = 0;
  // initialize_from_checkpoint: the file's parameters for this model's context (fine-tuning).
  virtual void initialize_from(const SafetensorsFile& file, const CheckpointInfo& source) = 0;
  virtual std::vector<TokenId> generate(const std::vector<TokenId>& prompt, std::size_t count,
                                        const SamplingOptions& options) = 0;
  virtual PositionLoss per_position_loss(const std::vector<TokenId>& tokens, std::size_t length,
                                         const StopCheck& should_stop = {}) = 0;
  virtual CopyProbe copy_probe(const std::vector<TokenId>& tokens, std::size_t distance, std::size_t segments,
                               const StopCheck& should_stop = {}) = 0;
  // evaluate_task: exact-match accuracy and answer loss at each length.
  virtual std::vector<TaskScore> evaluate_task(const Task& task, const Tokenizer& tokenizer,
                                               const TaskLengths& lengths, std::size_t examples, std::uint64_t seed,
                                               const StopCheck& should_stop = {}) = 0;
  // Whether the policy turns q and k (RoPE's kin), and the base and stretch it turns them with.
  virtual bool rotary() const = 0;
  virtual const RopeScaling& rope_scaling() const = 0;
  virtual void set_rope_scaling(const RopeScaling& scaling) = 0;
};

// AnyModel implemented by one CharTransformer.
template <class Model>
class ModelOf final : public AnyModel {
 public:
  explicit ModelOf(const ModelConfig& config) : model_(config) {}

  std::string_view encoding_name() const override { return Model::encoding_name(); }
  std::size_t parameter_count() const override { return model_.parameter_count(); }
  std::size_t vocab_size() const override { return model_.vocab_size(); }
  Tensor<float, 3> logits(const Tokens& inputs) override { return model_.forward(inputs); }
  Tensor<float, 4> attention_probabilities(const Tokens& inputs, std::size_t layer) override {
    return model_.attention_probabilities(inputs, layer);
  }
  double loss(const Tokens& inputs, const Tokens& targets) override { return model_.loss(inputs, targets); }
  std::vector<NamedParameter> named_parameters() const override {
    std::vector<NamedParameter> list;
    for (const ParameterInfo& e : model_.parameter_table().entries())
      list.push_back({&e.name, &e.shape, model_.parameters()[e.slot]});
    return list;
  }
  std::size_t max_context() const override { return model_.max_context(); }
  bool context_bounded_by_position_table() const override { return model_.context_bounded_by_position_table(); }
  PositionLoss per_position_loss(const std::vector<TokenId>& tokens, std::size_t length,
                                 const StopCheck& should_stop = {}) override {
    return posenc::per_position_loss(model_, tokens, length, 8, should_stop);
  }
  CopyProbe copy_probe(const std::vector<TokenId>& tokens, std::size_t distance, std::size_t segments,
                       const StopCheck& should_stop = {}) override {
    return posenc::copy_probe(model_, tokens, distance, segments, 8, should_stop);
  }
  std::vector<TaskScore> evaluate_task(const Task& task, const Tokenizer& tokenizer, const TaskLengths& lengths,
                                       std::size_t examples, std::uint64_t seed,
                                       const StopCheck& should_stop = {}) override {
    return posenc::evaluate_task(model_, task, tokenizer, lengths, examples, seed, 32, should_stop);
  }
  bool rotary() const override { return Model::rotary; }
  const RopeScaling& rope_scaling() const override { return model_.config().rope; }
  void set_rope_scaling(const RopeScaling& scaling) override { model_.set_rope_scaling(scaling); }
  std::vector<EvalRecord> train(const TrainingData& data, const TrainConfig& config, const RunDirectory& run,
                                bool resume, const TrainingCallbacks& callbacks, ProcessGroup* group) override {
    return run_training(model_, data, config, run, resume, callbacks, group);
  }
  LossResult evaluate_loss(const std::vector<TokenId>& tokens, std::size_t context, std::size_t batch,
                           const StopCheck& should_stop = {}) override {
    return posenc::evaluate_loss(model_, tokens, context, batch, should_stop);
  }
  LossResult evaluate_loss_sliding(const std::vector<TokenId>& tokens, std::size_t length, std::size_t stride,
                                   const StopCheck& should_stop = {}) override {
    return posenc::evaluate_loss_sliding(model_, tokens, length, stride, 4096, should_stop);
  }
  double estimate_loss(const std::vector<TokenId>& tokens, std::size_t batch, std::size_t context,
                       std::size_t iterations, std::uint64_t seed, std::string_view split_name) override {
    return posenc::estimate_loss(model_, tokens, batch, context, iterations, seed, split_name);
  }
  double estimate_loss(const TrainingData& data, Split split, std::size_t batch, std::size_t context,
                       std::size_t iterations, std::uint64_t seed, const StopCheck& should_stop) override {
    const std::unique_ptr<BatchStream> batches = data.batches(split, batch, context, seed);
    return posenc::estimate_loss(model_, *batches, iterations, nullptr, should_stop);
  }
  void load_parameters(const SafetensorsFile& file) override { posenc::load_parameters(model_, file); }
  void initialize_from(const SafetensorsFile& file, const CheckpointInfo& source) override {
    initialize_from_checkpoint(model_, file, source);
  }
  std::vector<TokenId> generate(const std::vector<TokenId>& prompt, std::size_t count,
                                const SamplingOptions& options) override {
    return posenc::generate(model_, prompt, count, options);
  }


 private:
  Model model_;
};

// The model of `shape` among the policies of AllPolicies whose index i has i % Shards == Shard and
// the sizes in Sizes; nullptr when it is not among them. Every (policy, size) pair it can return is
// compiled where it is instantiated, so a program can spread the pairs over translation units
// that build in parallel (examples/common/model_shard.cpp).
template <std::size_t Shard, std::size_t Shards, class Sizes = DefaultModelSizes>
std::unique_ptr<AnyModel> make_any_model_in_shard(const ModelShape& shape, const ModelConfig& config) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    std::unique_ptr<AnyModel> made;
    (
        [&] {
          using Policy = std::tuple_element_t<I, AllPolicies>;
          if constexpr (I % Shards == Shard)
            if (!made && shape.posenc == Policy::name)
              with_model_size<Sizes>(shape.layers, shape.dim, shape.heads, [&]<class Size>() {
                made = std::make_unique<ModelOf<CharTransformer<Policy, Size::layers, Size::dim, Size::heads>>>(config);
              });
        }(),
        ...);
    return made;
  }(std::make_index_sequence<std::tuple_size_v<AllPolicies>>{});
}

// One shard's make_any_model_in_shard<Shard, Shards, Sizes>, as a program's shards hand it over.
using MakeModelInShard = std::unique_ptr<AnyModel> (*)(const ModelShape&, const ModelConfig&);

// A new model of `shape` from the first of `shards` that has it; posenc::Error listing the known
// policies, or the sizes in Sizes (and `how_to_add` one), when none has.
template <class Sizes, std::size_t Shards>
std::unique_ptr<AnyModel> make_any_model_from_shards(const std::array<MakeModelInShard, Shards>& shards,
                                                     const ModelShape& shape, const ModelConfig& config,
                                                     std::string_view how_to_add = {}) {
  with_policy(shape.posenc, []<class>() {});  // an unknown name fails here, listing the known ones
  for (const MakeModelInShard make_in_shard : shards)
    if (std::unique_ptr<AnyModel> made = make_in_shard(shape, config)) return made;
  fail_unbuilt_model_size<Sizes>(shape.layers, shape.dim, shape.heads, how_to_add);
}

// A new model of `shape`; posenc::Error listing the known policies, or the sizes in Sizes, when
// there is none. Compiles every policy at every size in Sizes.
template <class Sizes = DefaultModelSizes>
std::unique_ptr<AnyModel> make_any_model(const ModelShape& shape, const ModelConfig& config) {
  return make_any_model_from_shards<Sizes, 1>({&make_any_model_in_shard<0, 1, Sizes>}, shape, config);
}

namespace detail {
// `by_position` over `bins` (> 0) ranges of positions as JSON {windows, bins: [{first, last, loss}]}.
inline nlohmann::json per_position_json(const PositionLoss& by_position, std::size_t bins) {
  nlohmann::json rows = nlohmann::json::array();
  for (const PositionLoss::Bin& b : by_position.binned(bins))
    rows.push_back({{"first", b.first}, {"last", b.last}, {"loss", b.loss}});
  return {{"windows", by_position.windows}, {"bins", rows}};
}
}  // namespace detail

// The mean loss by position in windows of `length` (per_position_loss) over `bins` ranges of
// positions, as JSON {windows, bins: [{first, last, loss}]}. should_stop is asked before every batch.
inline nlohmann::json per_position_at_length(AnyModel& model, const std::vector<TokenId>& tokens,
                                             std::size_t length, std::size_t bins, const StopCheck& should_stop = {}) {
  if (bins == 0) fail("per-position loss: the number of bins must be positive");
  return detail::per_position_json(model.per_position_loss(tokens, length, should_stop), bins);
}

// The validation loss at one evaluation length in both protocols, as a JSON row {length, stride,
// non_overlapping, sliding}, and with bins > 0 the loss by position too (per_position, as
// per_position_at_length); a length past what the model accepts (a learned table's rows) gives
// nulls and a note saying why — never a clipped number. should_stop is asked before every batch.
inline nlohmann::json evaluate_at_length(AnyModel& model, const std::vector<TokenId>& tokens, std::size_t length,
                                         std::size_t stride, std::size_t bins = 0,
                                         const StopCheck& should_stop = {}) {
  nlohmann::json row = {{"length", length}, {"stride", stride}};
  const std::size_t targets = tokens.empty() ? 0 : tokens.size() - 1;
  const auto not_applicable = [&](const std::string& why) {
    row["non_overlapping"] = nullptr;
    row["sliding"] = nullptr;
    row["note"] = "not applicable: " + why;
    return row;
  };
  if (length > model.max_context())
    return not_applicable(model.context_bounded_by_position_table()
                              ? "the " + std::string(model.encoding_name()) + " table has " +
                                    std::to_string(model.max_context()) + " rows"
                              : "longer than the model's maximum context " + std::to_string(model.max_context()));
  if (length > targets)  // one window of the whole split would be a shorter length in disguise
    return not_applicable("the split has only " + std::to_string(targets) + " targets");
  if (bins > 0) {
    // The loss by position scores the non-overlapping protocol's full windows: its loss is theirs
    // and the shorter last window's, so the split's windows are read once, not twice.
    const PositionLoss by_position = model.per_position_loss(tokens, length, should_stop);
    const std::size_t scored = by_position.windows * length;
    double total = by_position.mean_over(0, length) * static_cast<double>(scored);
    if (const std::size_t rest = targets - scored; rest > 0) {
      const std::vector<TokenId> last(tokens.begin() + static_cast<std::ptrdiff_t>(scored), tokens.end());
      total += model.evaluate_loss(last, rest, 1, should_stop).loss * static_cast<double>(rest);
    }
    row["non_overlapping"] = total / static_cast<double>(targets);
    row["per_position"] = detail::per_position_json(by_position, bins);
  } else {
    // Batches of about 4,096 tokens, as the sliding protocol uses.
    row["non_overlapping"] =
        model.evaluate_loss(tokens, length, std::max<std::size_t>(1, 4096 / length), should_stop).loss;
  }
  row["sliding"] = model.evaluate_loss_sliding(tokens, length, stride, should_stop).loss;
  return row;
}

// The copy probe at one distance as a JSON row {distance, segments, control_loss, control_sd,
// second_copy_loss, second_copy_sd, drop, drop_sd}; {distance, segments, note} when
// the model cannot take the 2 × distance positions it needs. should_stop is asked before every batch.
inline nlohmann::json copy_probe_at(AnyModel& model, const std::vector<TokenId>& tokens, std::size_t distance,
                                    std::size_t segments, const StopCheck& should_stop = {}) {
  if (2 * distance > model.max_context())
    return {{"distance", distance}, {"segments", segments},
            {"note", "not applicable: needs " + std::to_string(2 * distance) + " positions; the model accepts " +
                         std::to_string(model.max_context())}};
  const CopyProbe p = model.copy_probe(tokens, distance, segments, should_stop);
  return {{"distance", distance},
          {"segments", p.segments},
          {"control_loss", p.control_loss},
          {"control_sd", p.control_sd},
          {"second_copy_loss", p.second_copy_loss},
          {"second_copy_sd", p.second_copy_sd},
          {"drop", p.drop},
          {"drop_sd", p.drop_sd}};
}

}  // namespace posenc
