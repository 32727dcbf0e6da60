// save_optimizer_state / load_optimizer_state: AdamW's moments and step count in a file beside a checkpoint.
#pragma once

#include <concepts>
#include <cstdint>
#include <map>
#include <string>

#include "posenc/io/checkpoint.hpp"
#include "posenc/io/safetensors.hpp"
#include "posenc/train/adamw.hpp"

namespace posenc {

// The optimizer's state beside a checkpoint: "exp_avg.<name>" and "exp_avg_sq.<name>" for every
// parameter (PyTorch's names for the two moments), the step count, and caller metadata such as
// the sampler's position.
template <std::floating_point S>
void save_optimizer_state(const std::string& path, const AdamW<S>& optimizer,
                          const std::map<std::string, std::string>& extra_metadata = {}) {
  SafetensorsWriter writer;
  writer.add_metadata("format", "posenc-optimizer-1");
  writer.add_metadata("optimizer_step", std::to_string(optimizer.steps()));
  for (const auto& [key, value] : extra_metadata) writer.add_metadata(key, value);
  const ParameterTable& table = optimizer.first_moment().table();
  for (const ParameterInfo& e : table.entries())
    writer.add_tensor("exp_avg." + e.name, e.shape, optimizer.first_moment()[e.slot]);
  for (const ParameterInfo& e : table.entries())
    writer.add_tensor("exp_avg_sq." + e.name, e.shape, optimizer.second_moment()[e.slot]);
  writer.write(path);
}

// Restores both moments and the step count; returns the file's metadata.
template <std::floating_point S>
std::map<std::string, std::string> load_optimizer_state(const SafetensorsFile& file, AdamW<S>& optimizer) {
  if (detail::metadata_field(file, "format") != "posenc-optimizer-1")
    fail("optimizer state '", file.source(), "': format is not 'posenc-optimizer-1'");
  const ParameterTable& table = optimizer.first_moment().table();
  for (const ParameterInfo& e : table.entries()) {
    for (const char* prefix : {"exp_avg.", "exp_avg_sq."})
      if (!file.contains(prefix + e.name))
        fail("optimizer state '", file.source(), "' has no tensor '", prefix, e.name, "'");
    file.read_into("exp_avg." + e.name, e.shape, optimizer.first_moment()[e.slot]);
    file.read_into("exp_avg_sq." + e.name, e.shape, optimizer.second_moment()[e.slot]);
  }
  if (file.entries().size() != 2 * table.entries().size())
    fail("optimizer state '", file.source(), "' holds ", file.entries().size(), " tensors; expected ",
         2 * table.entries().size());
  optimizer.set_steps(static_cast<std::int64_t>(detail::metadata_number(file, "optimizer_step")));
  return file.metadata();
}

}  // namespace posenc
