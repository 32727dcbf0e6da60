// make_model() over the shards of model_shard.cpp.
#include "any_model.hpp"

#include <array>
#include <utility>

#include "model_sizes.hpp"

namespace examples {

namespace detail {
// Defined in model_shard.cpp, one translation unit per shard.
template <std::size_t Shard>
std::unique_ptr<posenc::AnyModel> make_model_in_shard(const posenc::ModelShape& shape,
                                                      const posenc::ModelConfig& config);
}  // namespace detail

std::unique_ptr<posenc::AnyModel> make_model(const posenc::ModelShape& shape, const posenc::ModelConfig& config) {
  constexpr auto shards = []<std::size_t... Shard>(std::index_sequence<Shard...>) {
    return std::array<posenc::MakeModelInShard, sizeof...(Shard)>{&detail::make_model_in_shard<Shard>...};
  }(std::make_index_sequence<POSENC_MODEL_SHARDS>{});
  return posenc::make_any_model_from_shards<ModelSizes>(shards, shape, config, model_size_recipe());
}

}  // namespace examples
