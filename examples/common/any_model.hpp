// AnyModel: a CharTransformer of any policy and size the programs are built for, behind one virtual interface.
#pragma once

// Why: every (policy, size) pair is a separate CharTransformer instantiation, and compiling all
// of them into each program made shakespeare and study the two slowest files of the build. Behind
// this interface each policy's models are compiled once (model_shard.cpp, a few policies per
// file, in parallel) and both programs link them.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <posenc/config.hpp>
#include <posenc/io/safetensors.hpp>
#include <posenc/model/aliases.hpp>
#include <posenc/model/char_transformer.hpp>
#include <posenc/model/generation.hpp>
#include <posenc/train/evaluation.hpp>
#include <posenc/train/process_group.hpp>
#include <posenc/train/training_run.hpp>

namespace examples {

// What a command line names: the positional encoding and the size.
struct ModelShape {
  std::string posenc = "rope";
  std::size_t layers = posenc::study_layers, dim = posenc::study_dim, heads = posenc::study_heads;
};

// The library's model-generic functions (posenc::run_training, evaluate_loss, ...) on one model.
class AnyModel {
 public:
  virtual ~AnyModel() = default;
  virtual std::size_t parameter_count() const = 0;
  virtual std::size_t max_context() const = 0;
  virtual std::vector<posenc::EvalRecord> train(const posenc::CharDataset& data, const posenc::TrainConfig& config,
                                                const posenc::RunDirectory& run, bool resume,
                                                const posenc::TrainingCallbacks& callbacks,
                                                posenc::ProcessGroup* group) = 0;
  virtual posenc::LossResult evaluate_loss(const std::vector<posenc::TokenId>& tokens, std::size_t context,
                                           std::size_t batch) = 0;
  virtual posenc::LossResult evaluate_loss_sliding(const std::vector<posenc::TokenId>& tokens, std::size_t length,
                                                   std::size_t stride) = 0;
  virtual double estimate_loss(const std::vector<posenc::TokenId>& tokens, std::size_t batch, std::size_t context,
                               std::size_t iterations, std::uint64_t seed, std::string_view split_name) = 0;
  virtual void load_parameters(const posenc::SafetensorsFile& file) = 0;
  virtual std::vector<posenc::TokenId> generate(const std::vector<posenc::TokenId>& prompt, std::size_t count,
                                                const posenc::SamplingOptions& options) = 0;
};

// A new model of that shape; posenc::Error listing the known policies, or the sizes this program
// is built for (examples/common/model_sizes.hpp), when there is none.
std::unique_ptr<AnyModel> make_model(const ModelShape& shape, const posenc::ModelConfig& config);

// The validation loss at one evaluation length in both protocols, as a JSON row {length, stride,
// non_overlapping, sliding}; a length past what the model accepts (a learned table's rows) gives
// nulls and a note saying why — never a clipped number.
nlohmann::json evaluate_at_length(AnyModel& model, std::string_view policy, const std::vector<posenc::TokenId>& tokens,
                                  std::size_t length, std::size_t stride);

namespace detail {
// The models of the policies with index % Shards == Shard in posenc::AllPolicies, defined in
// model_of.hpp and compiled by model_shard.cpp; nullptr when the shape is not among them.
template <std::size_t Shard, std::size_t Shards>
std::unique_ptr<AnyModel> make_model_in_shard(const ModelShape& shape, const posenc::ModelConfig& config);
}  // namespace detail

}  // namespace examples
