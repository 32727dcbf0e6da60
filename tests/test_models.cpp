// make_test_model() over the shards of test_models_shard.cpp.
#include "test_models.hpp"

#include <array>
#include <utility>

namespace posenc_test {

template <std::size_t Shard>
std::unique_ptr<posenc::AnyModel> make_test_model_in_shard(const posenc::ModelShape& shape,
                                                           const posenc::ModelConfig& config);

std::unique_ptr<posenc::AnyModel> make_test_model(const posenc::ModelShape& shape, const posenc::ModelConfig& config) {
  constexpr auto shards = []<std::size_t... Shard>(std::index_sequence<Shard...>) {
    return std::array<posenc::MakeModelInShard, sizeof...(Shard)>{&make_test_model_in_shard<Shard>...};
  }(std::make_index_sequence<POSENC_TEST_MODEL_SHARDS>{});
  return posenc::make_any_model_from_shards<TestModelSizes>(shards, shape, config);
}

}  // namespace posenc_test
