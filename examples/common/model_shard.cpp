// One shard of the programs' models: compiled once per shard, POSENC_MODEL_SHARD of POSENC_MODEL_SHARDS.
#include "model_of.hpp"

template std::unique_ptr<examples::AnyModel>
examples::detail::make_model_in_shard<POSENC_MODEL_SHARD, POSENC_MODEL_SHARDS>(const ModelShape&,
                                                                               const posenc::ModelConfig&);
