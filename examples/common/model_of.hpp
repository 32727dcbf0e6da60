// ModelOf<Model>: AnyModel implemented by one CharTransformer, and the shards that create them.
#pragma once

// Included only by model_shard.cpp: whoever includes it compiles CharTransformer for every policy
// of its shard and every size in ModelSizes.

#include <cstddef>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

#include <posenc/model/dispatch.hpp>
#include <posenc/io/checkpoint.hpp>

#include "any_model.hpp"
#include "model_sizes.hpp"

namespace examples {

template <class Model>
class ModelOf final : public AnyModel {
 public:
  explicit ModelOf(const posenc::ModelConfig& config) : model_(config) {}

  std::size_t parameter_count() const override { return model_.parameter_count(); }
  std::size_t max_context() const override { return model_.max_context(); }
  std::vector<posenc::EvalRecord> train(const posenc::CharDataset& data, const posenc::TrainConfig& config,
                                        const posenc::RunDirectory& run, bool resume,
                                        const posenc::TrainingCallbacks& callbacks,
                                        posenc::ProcessGroup* group) override {
    return posenc::run_training(model_, data, config, run, resume, callbacks, group);
  }
  posenc::LossResult evaluate_loss(const std::vector<posenc::TokenId>& tokens, std::size_t context,
                                   std::size_t batch) override {
    return posenc::evaluate_loss(model_, tokens, context, batch);
  }
  posenc::LossResult evaluate_loss_sliding(const std::vector<posenc::TokenId>& tokens, std::size_t length,
                                           std::size_t stride) override {
    return posenc::evaluate_loss_sliding(model_, tokens, length, stride);
  }
  double estimate_loss(const std::vector<posenc::TokenId>& tokens, std::size_t batch, std::size_t context,
                       std::size_t iterations, std::uint64_t seed, std::string_view split_name) override {
    return posenc::estimate_loss(model_, tokens, batch, context, iterations, seed, split_name);
  }
  void load_parameters(const posenc::SafetensorsFile& file) override { posenc::load_parameters(model_, file); }
  std::vector<posenc::TokenId> generate(const std::vector<posenc::TokenId>& prompt, std::size_t count,
                                        const posenc::SamplingOptions& options) override {
    return posenc::generate(model_, prompt, count, options);
  }

 private:
  Model model_;
};

namespace detail {

template <class Policy>
std::unique_ptr<AnyModel> make_model_of_policy(const ModelShape& shape, const posenc::ModelConfig& config) {
  std::unique_ptr<AnyModel> made;
  posenc::with_model_size<ModelSizes>(shape.layers, shape.dim, shape.heads, [&]<class Size>() {
    made = std::make_unique<ModelOf<posenc::CharTransformer<Policy, Size::layers, Size::dim, Size::heads>>>(config);
  });
  return made;
}

template <std::size_t Shard, std::size_t Shards>
std::unique_ptr<AnyModel> make_model_in_shard(const ModelShape& shape, const posenc::ModelConfig& config) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    std::unique_ptr<AnyModel> made;
    (
        [&] {
          using Policy = std::tuple_element_t<I, posenc::AllPolicies>;
          if constexpr (I % Shards == Shard)
            if (!made && shape.posenc == Policy::name) made = make_model_of_policy<Policy>(shape, config);
        }(),
        ...);
    return made;
  }(std::make_index_sequence<std::tuple_size_v<posenc::AllPolicies>>{});
}

}  // namespace detail
}  // namespace examples
