// save_checkpoint / load_parameters / read_checkpoint_info: a model as safetensors with nanoGPT's names.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "posenc/config.hpp"
#include "posenc/data/tokenizer.hpp"
#include "posenc/io/tokenizer_metadata.hpp"
#include "posenc/io/safetensors.hpp"
#include "posenc/kernels/precision.hpp"
#include "posenc/model/char_transformer.hpp"
#include "posenc/parameters.hpp"

namespace posenc {

inline constexpr const char* checkpoint_format = "posenc-checkpoint-1";

// A RopeScaling as JSON, for checkpoints' metadata and run configurations: the method's name, the
// factor, and each of rope_scaling_settings that has a value (the beta values always; a whole
// setting as an integer).
inline nlohmann::json to_json(const RopeScaling& s) {
  nlohmann::json j = {{"method", rope_scaling_name(s.method)}, {"factor", s.factor}};
  for (const RopeScalingSetting& setting : rope_scaling_settings)
    if (const auto value = setting.value(s)) {
      auto& entry = j[std::string(setting.name)];
      if (setting.whole) entry = static_cast<std::size_t>(*value);
      else entry = *value;
    }
  return j;
}

// Reads what to_json wrote; a missing or mistyped entry, an unknown method or a value out of
// range is an error naming `where`.
inline RopeScaling rope_scaling_from_json(const nlohmann::json& j, std::string_view where) {
  RopeScaling s;
  try {
    const std::string method = j.at("method").get<std::string>();
    const auto parsed = parse_rope_scaling(method);
    if (!parsed) fail("unknown method '", method, "'");
    s.method = *parsed;
    s.factor = j.at("factor").get<double>();
    for (const RopeScalingSetting& setting : rope_scaling_settings) {
      const std::string name(setting.name);
      if (!j.contains(name)) continue;
      const auto value = j.at(name).get<double>();
      if (setting.whole && !(value >= 0 && value == std::floor(value) && value < 0x1p53))
        fail("'", name, "' must be a whole number ≥ 0, got ", value);
      setting.set(s, value);
    }
    s.validate();
  } catch (const nlohmann::json::exception& e) {
    fail(where, ": not a RoPE scaling: ", e.what());
  } catch (const Error& e) {
    fail(where, ": ", e.what());
  }
  return s;
}

// What a checkpoint's __metadata__ says about the model (all stored as strings, as the format
// requires).
struct CheckpointInfo {
  std::string policy;
  std::size_t layers = 0, dim = 0, heads = 0, context = 0, max_context = 0;
  Tokenizer tokenizer;  // metadata "tokenizer" (absent: char) with "vocab" (char) or "merges" (byte, bpe)
  std::int64_t step = 0;
  std::uint64_t seed = 0;
  Precision precision = Precision::fp32;  // of the training GEMMs; the parameters are F32 either way
  bool tie_weights = false;               // ModelConfig::tie_weights: the file has no lm_head.weight
  RopeScaling rope = {};                  // ModelConfig::rope (metadata "rope_scaling", when not the default)
  std::size_t position_range = 0;         // ModelConfig::position_range (metadata, when not 0)

  // The configuration of the model the checkpoint holds, accepting sequences up to max_context
  // (0: the model's default).
  ModelConfig model_config(std::size_t max_context_wanted = 0) const {
    return ModelConfig{.vocab_size = tokenizer.vocab_size(), .context = context,
                       .max_context = max_context_wanted != 0 ? max_context_wanted : max_context,
                       .tie_weights = tie_weights, .rope = rope, .position_range = position_range};
  }
};

namespace detail {

inline const std::string& metadata_field(const SafetensorsFile& file, const std::string& key) {
  const auto it = file.metadata().find(key);
  if (it == file.metadata().end())
    fail("checkpoint '", file.source(), "': the metadata has no '", key, "' entry");
  return it->second;
}

inline std::uint64_t metadata_number(const SafetensorsFile& file, const std::string& key) {
  const std::string& text = metadata_field(file, key);
  std::size_t used = 0;
  unsigned long long value = 0;
  try {
    value = std::stoull(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || text.front() == '-')
    fail("checkpoint '", file.source(), "': metadata '", key, "' is '", text,
         "', not a non-negative whole number");
  return value;
}

}  // namespace detail

// Reads and checks the model description in a checkpoint's metadata.
inline CheckpointInfo read_checkpoint_info(const SafetensorsFile& file) {
  const std::string& format = detail::metadata_field(file, "format");
  if (format != checkpoint_format)
    fail("checkpoint '", file.source(), "': format '", format, "', expected '", checkpoint_format, "'");
  CheckpointInfo info;
  info.policy = detail::metadata_field(file, "posenc_policy");
  info.layers = detail::metadata_number(file, "layers");
  info.dim = detail::metadata_number(file, "dim");
  info.heads = detail::metadata_number(file, "heads");
  info.context = detail::metadata_number(file, "context");
  info.max_context = detail::metadata_number(file, "max_context");
  info.tokenizer = read_tokenizer_metadata(file.metadata(), "checkpoint '" + file.source() + "'");
  info.step = static_cast<std::int64_t>(detail::metadata_number(file, "step"));
  info.seed = detail::metadata_number(file, "seed");
  // checkpoints written before bf16 training existed have no entry: they were trained in fp32
  if (const auto it = file.metadata().find("precision"); it != file.metadata().end()) {
    try {
      info.precision = parse_precision(it->second);
    } catch (const Error& e) {
      fail("checkpoint '", file.source(), "': metadata 'precision': ", e.what());
    }
  }
  // checkpoints written before weight tying existed have no entry: they are untied
  if (const auto it = file.metadata().find("tie_weights"); it != file.metadata().end()) {
    if (it->second != "true" && it->second != "false")
      fail("checkpoint '", file.source(), "': metadata 'tie_weights' is '", it->second, "', not true or false");
    info.tie_weights = it->second == "true";
  }
  if (const auto it = file.metadata().find("rope_scaling"); it != file.metadata().end()) {
    const nlohmann::json j = nlohmann::json::parse(it->second, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) fail("checkpoint '", file.source(), "': metadata 'rope_scaling' is not JSON");
    info.rope = rope_scaling_from_json(j, "checkpoint '" + file.source() + "': metadata 'rope_scaling'");
  }
  // checkpoints without the entry were trained at positions 0, 1, 2, …
  if (file.metadata().contains("position_range"))
    info.position_range = detail::metadata_number(file, "position_range");
  if (info.layers == 0 || info.dim == 0 || info.heads == 0 || info.context == 0)
    fail("checkpoint '", file.source(), "': layers, dim, heads and context must be positive");
  return info;
}

// Writes the model's parameters (F32, nanoGPT names, linear weights (out, in)) with its
// description and the caller's metadata (a trainer's settings); to a temporary file renamed into
// place.
template <class Model>
void save_checkpoint(const std::string& path, const Model& model, const Tokenizer& tokenizer,
                     std::int64_t step, std::uint64_t seed,
                     const std::map<std::string, std::string>& extra_metadata = {}) {
  if (tokenizer.vocab_size() != model.vocab_size())
    fail("save_checkpoint: the tokenizer has ", tokenizer.vocab_size(), " symbols but the model ",
         model.vocab_size());
  SafetensorsWriter writer;
  writer.add_metadata("format", checkpoint_format);
  writer.add_metadata("posenc_policy", std::string(Model::encoding_name()));
  writer.add_metadata("layers", std::to_string(Model::layers));
  writer.add_metadata("dim", std::to_string(Model::dim));
  writer.add_metadata("heads", std::to_string(Model::heads));
  writer.add_metadata("context", std::to_string(model.context()));
  writer.add_metadata("max_context", std::to_string(model.max_context()));
  for (const auto& [key, value] : tokenizer_metadata(tokenizer)) writer.add_metadata(key, value);
  writer.add_metadata("step", std::to_string(step));
  writer.add_metadata("seed", std::to_string(seed));
  writer.add_metadata("precision", precision_name(model.config().precision));
  writer.add_metadata("tie_weights", model.config().tie_weights ? "true" : "false");
  // the shortest text that reads back as the same double (std::to_string wrote 1e-7 as 0.000000)
  const auto number = [](double x) { return nlohmann::json(x).dump(); };
  writer.add_metadata("dropout", number(model.config().dropout));  // of training; evaluation has none
  writer.add_metadata("init", std::string(init_scheme_name(model.config().init)));
  writer.add_metadata("embedding_std", number(*model.config().embedding_std));
  if (model.config().rope.changes_anything()) writer.add_metadata("rope_scaling", to_json(model.config().rope).dump());
  if (model.config().position_range != 0)
    writer.add_metadata("position_range", std::to_string(model.config().position_range));
  for (const auto& [key, value] : extra_metadata) writer.add_metadata(key, value);
  for (const ParameterInfo& e : model.parameter_table().entries())
    writer.add_tensor(e.name, e.shape, model.parameters()[e.slot]);
  writer.write(path);
}

// A checkpoint's tensors fit a model of another policy whenever neither has position parameters
// (rope and alibi), so the policy its metadata names must be the model's.
template <class Model>
void check_checkpoint_policy(const SafetensorsFile& file) {
  const auto policy = file.metadata().find("posenc_policy");
  if (policy != file.metadata().end() && policy->second != Model::encoding_name())
    fail("checkpoint '", file.source(), "' holds a model of policy '", policy->second, "', not '",
         Model::encoding_name(), "'");
}

// Fills every parameter of `model` from the file: each tensor of the model's table must be there
// with its shape, and the file may hold no others; a policy in its metadata must be the model's.
template <class Model>
void load_parameters(Model& model, const SafetensorsFile& file) {
  check_checkpoint_policy<Model>(file);
  const ParameterTable& table = model.parameter_table();
  for (const ParameterInfo& e : table.entries()) {
    if (!file.contains(e.name))
      fail("checkpoint '", file.source(), "' has no tensor '", e.name, "', which a ",
           Model::encoding_name(), " model needs");
    file.read_into(e.name, e.shape, model.parameters()[e.slot]);
    const auto* values = model.parameters()[e.slot];
    const auto* end = values + e.slot.size;
    if (const auto* bad = std::find_if(values, end, [](auto x) { return !std::isfinite(x); }); bad != end)
      fail("checkpoint '", file.source(), "' tensor '", e.name, "' holds ", *bad, " at element ", bad - values,
           ": the model it saved had diverged, and every output of it would be NaN");
  }
  for (const SafetensorsEntry& entry : file.entries())
    if (!table.contains(entry.name))
      fail("checkpoint '", file.source(), "' has a tensor '", entry.name, "' that a ",
           Model::encoding_name(), " model does not have");
}

}  // namespace posenc
