// make_model(): posenc::AnyModel for the policies and sizes the programs are built for, compiled in shards.
#pragma once

// Why: every (policy, size) pair is a separate CharTransformer instantiation, and compiling all
// of them into each program made shakespeare and study the two slowest files of the build. Each
// policy's models are compiled once (model_shard.cpp, a few policies per file, in parallel) and
// both programs link them.

#include <memory>

#include <posenc/train/any_model.hpp>

namespace examples {

// A new model of that shape; posenc::Error listing the known policies, or the sizes this program
// is built for (examples/common/model_sizes.hpp), when there is none.
std::unique_ptr<posenc::AnyModel> make_model(const posenc::ModelShape& shape, const posenc::ModelConfig& config);

}  // namespace examples
