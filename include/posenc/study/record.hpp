// RunRecord: what one finished run of a study leaves in its JSON file, and where a study keeps its files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "posenc/config.hpp"
#include "posenc/encodings/rope_scaling.hpp"
#include "posenc/io/atomic_file.hpp"
#include "posenc/io/checkpoint.hpp"
#include "posenc/study/design.hpp"
#include "posenc/train/run_config.hpp"
#include "posenc/train/trainer.hpp"
#include "posenc/train/training_run.hpp"

namespace posenc {

// The batches a task run's final losses are estimated over: a fixed sample of 50 × the batch
// examples, the same for every run of a study, as a task has no split to pass over whole.
inline constexpr std::size_t task_loss_batches = 50;

// What one finished run leaves in its JSON file.
struct RunRecord {
  RunConfig config;
  std::vector<EvalRecord> curve;  // the estimates at every evaluation
  // Deterministic full passes over the training and the validation split; a task study's: the
  // loss on the answers over task_loss_batches batches of each split, drawn from the design's
  // task_seed (training) and task_seed + 1 (validation: other examples, where the task's splits differ
  // only in their draws).
  double final_train_loss = 0;
  double final_val_loss = 0;
  // How many bytes a target of each split stands for: 1 for char and byte tokens (and a task's
  // characters), BPE's mean bytes a token; the final losses over them are bits per byte.
  BytesPerTarget bytes_per_target;
  double wall_seconds = 0;
  double tokens_per_second = 0;
  std::string checkpoint;
  // The final model's validation loss at other lengths: one entry per length (and RoPE scaling)
  // with its stride, the non-overlapping and sliding-window losses (null where the model cannot
  // take the length) and, when the study asks, the loss by position (evaluate_at_length,
  // per_position_at_length).
  nlohmann::json extrapolation = nlohmann::json::array();
  // The copy probe: one entry per distance (and RoPE scaling), copy_probe_at's row.
  nlohmann::json copy_probe = nlohmann::json::array();
  // A task study's: one entry per tested length (and RoPE scaling), to_json(TaskScore) with the
  // seed its examples were drawn from.
  nlohmann::json task = nlohmann::json::array();
  // An entry made under a RoPE scaling names it in "rope_scaling" (the study's spec, as JSON);
  // one without was made with the trained angles.

  // The extrapolation entry of a length under a scaling (none: the trained angles), if the record has one.
  const nlohmann::json* extrapolation_at(std::size_t length, const RopeScaling& scaling = {}) const {
    return find_entry(extrapolation, "length", length, scaling);
  }
  nlohmann::json* extrapolation_at(std::size_t length, const RopeScaling& scaling = {}) {
    return find_entry(extrapolation, "length", length, scaling);
  }
  // The copy-probe entry of a distance under a scaling, if the record has one.
  const nlohmann::json* copy_probe_at(std::size_t distance, const RopeScaling& scaling = {}) const {
    return find_entry(copy_probe, "distance", distance, scaling);
  }
  nlohmann::json* copy_probe_at(std::size_t distance, const RopeScaling& scaling = {}) {
    return find_entry(copy_probe, "distance", distance, scaling);
  }
  // The task entry of a length under a scaling, if the record has one.
  const nlohmann::json* task_at(std::size_t length, const RopeScaling& scaling = {}) const {
    return find_entry(task, "length", length, scaling);
  }
  nlohmann::json* task_at(std::size_t length, const RopeScaling& scaling = {}) {
    return find_entry(task, "length", length, scaling);
  }
  // The scaling an entry was made under.
  static RopeScaling entry_scaling(const nlohmann::json& entry) {
    return entry.contains("rope_scaling") ? rope_scaling_from_json(entry.at("rope_scaling"), "a run record's entry")
                                          : RopeScaling{};
  }
  double generalization_gap() const { return final_val_loss - final_train_loss; }
  double final_train_bits_per_byte() const { return bits_per_byte(final_train_loss, bytes_per_target.train); }
  double final_val_bits_per_byte() const { return bits_per_byte(final_val_loss, bytes_per_target.validation); }
  const std::string& variant() const { return config.posenc; }
  std::uint64_t seed() const { return config.train.seed; }
  std::int64_t steps() const { return config.train.steps; }

 private:
  static const nlohmann::json* find_entry(const nlohmann::json& entries, const char* key, std::size_t value,
                                          const RopeScaling& scaling) {
    for (const nlohmann::json& e : entries)
      if (e.at(key).get<std::size_t>() == value && entry_scaling(e) == scaling) return &e;
    return nullptr;
  }
  static nlohmann::json* find_entry(nlohmann::json& entries, const char* key, std::size_t value,
                                    const RopeScaling& scaling) {
    return const_cast<nlohmann::json*>(find_entry(std::as_const(entries), key, value, scaling));
  }
};

inline nlohmann::json to_json(const RunRecord& r) {
  nlohmann::json curve = nlohmann::json::array();
  for (const EvalRecord& e : r.curve) curve.push_back(to_json(e));
  return {{"config", to_json(r.config)},
          {"curve", curve},
          {"final_train_loss", r.final_train_loss},
          {"final_val_loss", r.final_val_loss},
          {"generalization_gap", r.generalization_gap()},
          {"bytes_per_target", {{"train", r.bytes_per_target.train}, {"validation", r.bytes_per_target.validation}}},
          {"final_train_bits_per_byte", r.final_train_bits_per_byte()},
          {"final_val_bits_per_byte", r.final_val_bits_per_byte()},
          {"wall_seconds", r.wall_seconds},
          {"tokens_per_second", r.tokens_per_second},
          {"checkpoint", r.checkpoint},
          {"extrapolation", r.extrapolation},
          {"copy_probe", r.copy_probe},
          {"task", r.task}};
}

inline RunRecord run_record_from_json(const nlohmann::json& j) {
  RunRecord r;
  r.config = run_config_from_json(j.at("config"), "the record's configuration");
  for (const auto& e : j.at("curve")) r.curve.push_back(eval_record_from_json(e));
  r.final_train_loss = j.at("final_train_loss").get<double>();
  r.final_val_loss = j.at("final_val_loss").get<double>();
  if (j.contains("bytes_per_target"))  // absent: a record from before BPE, of characters
    r.bytes_per_target = {j.at("bytes_per_target").at("train").get<double>(),
                          j.at("bytes_per_target").at("validation").get<double>()};
  r.wall_seconds = j.at("wall_seconds").get<double>();
  r.tokens_per_second = j.at("tokens_per_second").get<double>();
  r.checkpoint = j.at("checkpoint").get<std::string>();
  if (j.contains("extrapolation")) r.extrapolation = j.at("extrapolation");
  if (j.contains("copy_probe")) r.copy_probe = j.at("copy_probe");
  if (j.contains("task")) r.task = j.at("task");
  return r;
}

// A study directory: OUT/records/<run>.json, OUT/runs/<run>/ (a shakespeare run directory each),
// OUT/summary.{json,csv,md}.
struct StudyPaths {
  std::filesystem::path out;
  std::filesystem::path record(const RunSpec& r) const { return out / "records" / (r.id() + ".json"); }
  std::filesystem::path run_dir(const RunSpec& r) const { return out / "runs" / r.id(); }
};

// The record at `path`, or nothing when there is none; a file that is not a record is an error.
inline std::optional<RunRecord> load_record(const std::filesystem::path& path) {
  if (!std::filesystem::exists(path)) return std::nullopt;
  std::ifstream in(path);
  try {
    return run_record_from_json(nlohmann::json::parse(in));
  } catch (const nlohmann::json::exception& e) {
    fail("run record '", path.string(), "' is not a run record: ", e.what(), " (delete it to run again)");
  } catch (const Error& e) {
    fail("run record '", path.string(), "': ", e.what(), " (delete it to run again)");
  }
}

inline void write_record(const RunRecord& record, const std::filesystem::path& path) {
  std::filesystem::create_directories(path.parent_path());
  write_file_atomically(path.string(), to_json(record).dump(2) + "\n");
}

}  // namespace posenc
