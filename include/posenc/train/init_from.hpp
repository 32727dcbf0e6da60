// initialize_from_checkpoint(): a model at a new training context started from a checkpoint, for fine-tuning.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <type_traits>
#include <vector>

#include "posenc/config.hpp"
#include "posenc/encodings/rope_scaling.hpp"
#include "posenc/io/checkpoint.hpp"
#include "posenc/io/safetensors.hpp"

namespace posenc {

// Row p of a (new_rows, D) table from an (old_rows, D) one by Position Interpolation (Chen et al.
// 2023) for absolute tables: the old table at the fractional position p·old_rows/new_rows, linear
// between its neighbouring rows (the last row beyond the end). Longer tables stretch the trained
// positions instead of adding rows no step has trained; shorter ones compress them.
inline std::vector<float> interpolate_position_rows(const std::vector<float>& table, std::size_t old_rows,
                                                    std::size_t new_rows, std::size_t D) {
  std::vector<float> out(new_rows * D);
  for (std::size_t p = 0; p < new_rows; ++p) {
    const double x = static_cast<double>(p) * static_cast<double>(old_rows) / static_cast<double>(new_rows);
    const std::size_t lo = std::min(static_cast<std::size_t>(x), old_rows - 1);
    const std::size_t hi = std::min(lo + 1, old_rows - 1);
    const double w = std::min(x - static_cast<double>(lo), 1.0);
    for (std::size_t d = 0; d < D; ++d)
      out[p * D + d] = static_cast<float>((1 - w) * table[lo * D + d] + w * table[hi * D + d]);
  }
  return out;
}

// The RoPE settings of a run fine-tuned from a checkpoint trained at `source_context`: a scaling's
// factor stretches the context the source was trained at, not the fine-tuning one (YaRN's ramp
// and dynamic NTK measure wavelengths against it), unless `rope` names its own.
inline RopeScaling rope_for_fine_tuning(RopeScaling rope, std::size_t source_context) {
  if (rope.scales() && rope.original_context == 0) rope.original_context = source_context;
  return rope;
}

// Fills `model` (built for its own training context) from a checkpoint of the same policy and
// size trained at `source.context`: every tensor as it is, except where a tensor depends on the
// context —
//  - learned's position table, interpolated to the new rows (interpolate_position_rows);
//  - FIRE's threshold multiplier, rescaled so that the learned threshold L = L₀·softplus(m), with
//    L₀ a quarter of the context, stays the same number of positions.
// Every tensor of the model must be in the file and the file may hold no others; the file's policy
// must be the model's.
template <class Model>
void initialize_from_checkpoint(Model& model, const SafetensorsFile& file, const CheckpointInfo& source) {
  check_checkpoint_policy<Model>(file);
  const ParameterTable& table = model.parameter_table();
  const std::size_t old_context = source.context, new_context = model.context();
  for (const ParameterInfo& e : table.entries()) {
    if (!file.contains(e.name))
      fail("fine-tuning from '", file.source(), "': it has no tensor '", e.name, "', which a ", Model::encoding_name(),
           " model needs");
    auto* dst = model.parameters()[e.slot];
    using S = std::remove_pointer_t<decltype(dst)>;
    const SafetensorsEntry& stored = file.find(e.name);
    if (e.name == "transformer.wpe.weight" && stored.shape.size() == 2 && e.shape.size() == 2 &&
        stored.shape[0] == old_context && stored.shape[1] == e.shape[1] && e.shape[0] == new_context) {
      const std::vector<float> rows =
          interpolate_position_rows(file.read_floats(e.name), old_context, new_context, e.shape[1]);
      std::transform(rows.begin(), rows.end(), dst, [](float v) { return static_cast<S>(v); });
      continue;
    }
    file.read_into(e.name, e.shape, dst);
    if (e.name.ends_with("fire.L_multiplier") && old_context != new_context) {
      // softplus(m') = softplus(m)·old/new, so that L₀'·softplus(m') = L₀·softplus(m)
      const double kept = std::log1p(std::exp(static_cast<double>(dst[0]))) * static_cast<double>(old_context) /
                          static_cast<double>(new_context);
      dst[0] = static_cast<S>(std::log(std::expm1(kept)));
    }
  }
  for (const SafetensorsEntry& entry : file.entries())
    if (!table.contains(entry.name))
      fail("fine-tuning from '", file.source(), "': it has a tensor '", entry.name, "' that a ", Model::encoding_name(),
           " model does not have");
}

}  // namespace posenc
