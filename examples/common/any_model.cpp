// make_model() over the shards of model_shard.cpp, and evaluate_at_length().
#include "any_model.hpp"

#include <algorithm>
#include <array>
#include <utility>

#include <posenc/model/dispatch.hpp>

#include "model_sizes.hpp"

namespace examples {

std::unique_ptr<AnyModel> make_model(const ModelShape& shape, const posenc::ModelConfig& config) {
  posenc::with_policy(shape.posenc, []<class>() {});  // an unknown name fails here, listing the known ones
  constexpr auto shards = []<std::size_t... Shard>(std::index_sequence<Shard...>) {
    return std::array{&detail::make_model_in_shard<Shard, POSENC_MODEL_SHARDS>...};
  }(std::make_index_sequence<POSENC_MODEL_SHARDS>{});
  for (auto make_in_shard : shards)
    if (std::unique_ptr<AnyModel> made = make_in_shard(shape, config)) return made;
  posenc::fail_unbuilt_model_size<ModelSizes>(shape.layers, shape.dim, shape.heads);
}

nlohmann::json evaluate_at_length(AnyModel& model, std::string_view policy, const std::vector<posenc::TokenId>& tokens,
                                  std::size_t length, std::size_t stride) {
  nlohmann::json row = {{"length", length}, {"stride", stride}};
  const std::size_t targets = tokens.empty() ? 0 : tokens.size() - 1;
  const auto not_applicable = [&](const std::string& why) {
    row["non_overlapping"] = nullptr;
    row["sliding"] = nullptr;
    row["note"] = "not applicable: " + why;
    return row;
  };
  if (length > model.max_context())
    return not_applicable(policy == "learned"
                              ? "the learned table has " + std::to_string(model.max_context()) + " rows"
                              : "longer than the model's maximum context " + std::to_string(model.max_context()));
  if (length > targets)  // one window of the whole split would be a shorter length in disguise
    return not_applicable("the split has only " + std::to_string(targets) + " targets");
  // Batches of about 4,096 tokens, as the sliding protocol uses.
  row["non_overlapping"] = model.evaluate_loss(tokens, length, std::max<std::size_t>(1, 4096 / length)).loss;
  row["sliding"] = model.evaluate_loss_sliding(tokens, length, stride).loss;
  return row;
}

}  // namespace examples
