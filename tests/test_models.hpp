// make_test_model(): every policy at the tests' size behind posenc::AnyModel, compiled once for every test.
#pragma once

// Why: make_any_model compiles a CharTransformer per policy; test_any_model and test_study_runner
// each did, and those two files took 480 and 338 s to build under the sanitizers. The twelve
// models are now compiled once, in two files that build in parallel (test_models_shard.cpp).

#include <memory>
#include <tuple>

#include <posenc/train/any_model.hpp>

namespace posenc_test {

using TestModelSizes = std::tuple<posenc::ModelSize<1, 8, 2>>;

// A new model of `shape` (any policy, a size in TestModelSizes), as make_any_model<TestModelSizes>.
std::unique_ptr<posenc::AnyModel> make_test_model(const posenc::ModelShape& shape, const posenc::ModelConfig& config);

}  // namespace posenc_test
