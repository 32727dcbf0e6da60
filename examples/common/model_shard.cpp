// One shard of the programs' models: compiled once per shard, POSENC_MODEL_SHARD of POSENC_MODEL_SHARDS.
#include "any_model.hpp"
#include "model_sizes.hpp"

namespace examples::detail {

template <std::size_t Shard>
std::unique_ptr<posenc::AnyModel> make_model_in_shard(const posenc::ModelShape& shape,
                                                      const posenc::ModelConfig& config);

template <>
std::unique_ptr<posenc::AnyModel> make_model_in_shard<POSENC_MODEL_SHARD>(const posenc::ModelShape& shape,
                                                                         const posenc::ModelConfig& config) {
  return posenc::make_any_model_in_shard<POSENC_MODEL_SHARD, POSENC_MODEL_SHARDS, ModelSizes>(shape, config);
}

}  // namespace examples::detail
