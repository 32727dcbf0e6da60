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
  posenc::with_policy(shape.posenc, []<class>() {});  // an unknown name fails here, listing the known ones
  constexpr auto shards = []<std::size_t... Shard>(std::index_sequence<Shard...>) {
    return std::array{&detail::make_model_in_shard<Shard>...};
  }(std::make_index_sequence<POSENC_MODEL_SHARDS>{});
  for (auto make_in_shard : shards)
    if (std::unique_ptr<posenc::AnyModel> made = make_in_shard(shape, config)) return made;
  posenc::fail_unbuilt_model_size<ModelSizes>(shape.layers, shape.dim, shape.heads, model_size_recipe);
}

}  // namespace examples
