// One shard of make_test_model(): the policies with index % POSENC_TEST_MODEL_SHARDS == POSENC_TEST_MODEL_SHARD.
#include "test_models.hpp"

namespace posenc_test {

template <std::size_t Shard>
std::unique_ptr<posenc::AnyModel> make_test_model_in_shard(const posenc::ModelShape& shape,
                                                           const posenc::ModelConfig& config);

template <>
std::unique_ptr<posenc::AnyModel> make_test_model_in_shard<POSENC_TEST_MODEL_SHARD>(
    const posenc::ModelShape& shape, const posenc::ModelConfig& config) {
  return posenc::make_any_model_in_shard<POSENC_TEST_MODEL_SHARD, POSENC_TEST_MODEL_SHARDS, TestModelSizes>(shape,
                                                                                                            config);
}

}  // namespace posenc_test
