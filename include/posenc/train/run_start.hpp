// start_or_resume(): before training into a run folder, lock it, check what it holds and record the run.
#pragma once

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "posenc/config.hpp"
#include "posenc/io/atomic_file.hpp"
#include "posenc/train/run_config.hpp"
#include "posenc/train/training_run.hpp"

namespace posenc {

// Where a run folder records what the run is: its RunConfig as JSON (with any extra fields a
// program adds, such as the machine it ran on).
inline std::filesystem::path run_config_path(const RunDirectory& run) { return run.dir() / "config.json"; }

// The configuration a run folder records, or nullopt when it records none. A study's run folders
// named the file study-run.json before 2026-12-05; it is read when config.json is not there.
inline std::optional<RunConfig> recorded_run_config(const RunDirectory& run) {
  for (const std::filesystem::path& path : {run_config_path(run), run.dir() / "study-run.json"}) {
    std::ifstream in(path);
    if (!in) continue;
    try {
      return run_config_from_json(nlohmann::json::parse(in), "'" + path.string() + "'");
    } catch (const nlohmann::json::exception& e) {
      fail("'", path.string(), "' is not JSON: ", e.what());
    }
  }
  return std::nullopt;
}

// Writes `config`, with `extra`'s fields beside it, as the folder's config.json.
inline void record_run_config(const RunDirectory& run, const RunConfig& config,
                              const nlohmann::json& extra = nlohmann::json::object()) {
  nlohmann::json json = to_json(config);
  json.update(extra);
  write_file_atomically(run_config_path(run).string(), json.dump(2) + "\n", "run configuration");
}

// Locks `run` for this process (RunDirectory::lock) and says how training `config` there starts:
// true — it continues a saved state; false — the folder holds none (nothing yet, or a first save
// that never finished). A folder recording a run that `config` does not continue
// (RunConfig::continues), or holding a saved state and no configuration, is an error naming what
// differs: training there would mix two runs. Then records `config` (and `extra`). Training then
// passes resume = true to run_training, which restores the state or refuses a damaged one.
inline bool start_or_resume(const RunDirectory& run, const RunConfig& config,
                            const nlohmann::json& extra = nlohmann::json::object()) {
  run.lock();  // creates the folder
  const bool saved = std::filesystem::exists(run.optimizer());
  if (const std::optional<RunConfig> recorded = recorded_run_config(run)) {
    if (!config.continues(*recorded))
      fail("run folder '", run.dir().string(), "' holds a run of another configuration (",
           recorded->differences(config), "); delete it or choose another folder");
  } else if (saved) {
    fail("run folder '", run.dir().string(), "' holds a saved state but no ", run_config_path(run).filename().string(),
         " saying what run it is; delete it or choose another folder");
  }
  record_run_config(run, config, extra);
  return saved;
}

}  // namespace posenc
