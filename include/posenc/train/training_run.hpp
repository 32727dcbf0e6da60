// run_training(): a Trainer bound to a run directory — JSON-lines log, checkpoints at every eval, exact resume.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include <nlohmann/json.hpp>

#include "posenc/config.hpp"
#include "posenc/data/dataset.hpp"
#include "posenc/io/atomic_file.hpp"
#include "posenc/io/checkpoint.hpp"
#include "posenc/io/directory_lock.hpp"
#include "posenc/train/optimizer_state.hpp"
#include "posenc/train/process_group.hpp"
#include "posenc/train/trainer.hpp"

namespace posenc {

// The files of one run:
//   log.jsonl                          one record per evaluation (EvalRecord as JSON)
//   checkpoint-step<N>.safetensors     the model at every evaluation
//   optimizer.safetensors              AdamW's moments, step and the sampler's position at the
//                                      latest evaluation: what --resume continues from
//   model.safetensors                  the final model
//   lock                               held by the process writing the run (DirectoryLock)
// Checkpoints are kept for the newest `keep_checkpoints` evaluations and for the one with the
// lowest validation estimate; older ones are deleted as new ones are written (0 keeps them all).
class RunDirectory {
 public:
  static constexpr std::size_t default_keep_checkpoints = 5;
  explicit RunDirectory(std::filesystem::path dir, std::size_t keep_checkpoints = default_keep_checkpoints)
      : dir_(std::move(dir)), keep_(keep_checkpoints) {}
  const std::filesystem::path& dir() const { return dir_; }
  std::size_t keep_checkpoints() const { return keep_; }
  std::string log() const { return (dir_ / "log.jsonl").string(); }
  std::string optimizer() const { return (dir_ / "optimizer.safetensors").string(); }
  std::string final_model() const { return (dir_ / "model.safetensors").string(); }
  std::string checkpoint(std::int64_t step) const {
    char name[64];
    std::snprintf(name, sizeof name, "checkpoint-step%06lld.safetensors", static_cast<long long>(step));
    return (dir_ / name).string();
  }
  // Takes the directory for this process until this RunDirectory and its later copies are gone;
  // another process's run there is refused (DirectoryLock). A second call keeps the lock taken,
  // so a program may lock before it writes its own files and run_training again.
  void lock() const {
    if (!lock_) lock_ = std::make_shared<const DirectoryLock>(dir_);
  }
  // The steps of the checkpoints in the directory, ascending.
  std::vector<std::int64_t> checkpoint_steps() const {
    std::vector<std::int64_t> steps;
    std::error_code missing;  // no directory yet: no checkpoints
    for (const auto& entry : std::filesystem::directory_iterator(dir_, missing)) {
      const std::string name = entry.path().filename().string();
      long long step = 0;
      int length = 0;
      if (std::sscanf(name.c_str(), "checkpoint-step%lld.safetensors%n", &step, &length) == 1 &&
          length == static_cast<int>(name.size()))
        steps.push_back(step);
    }
    std::sort(steps.begin(), steps.end());
    return steps;
  }
  // The step a resume continues from: the optimizer state's, or nullopt when none is saved yet.
  std::optional<std::int64_t> saved_step() const {
    if (!std::filesystem::exists(optimizer())) return std::nullopt;
    return static_cast<std::int64_t>(detail::metadata_number(read_safetensors(optimizer()), "optimizer_step"));
  }

  // Deletes the checkpoints of `records` (a run's evaluations, oldest first) that are neither
  // among the newest keep_checkpoints() nor the best validation estimate's. The newest, which the
  // optimizer state names, is always kept.
  void prune_checkpoints(const std::vector<EvalRecord>& records) const {
    if (keep_ == 0 || records.size() <= keep_) return;
    std::size_t best = 0;
    for (std::size_t i = 1; i < records.size(); ++i)
      if (records[i].val_loss < records[best].val_loss) best = i;
    for (std::size_t i = 0; i + keep_ < records.size(); ++i) {
      if (i == best) continue;
      std::error_code ignored;  // already gone (an earlier prune, or by hand) is fine
      std::filesystem::remove(checkpoint(records[i].step), ignored);
    }
  }

 private:
  std::filesystem::path dir_;
  std::size_t keep_;
  mutable std::shared_ptr<const DirectoryLock> lock_;  // taking it changes no file of the run
};

inline nlohmann::json to_json(const EvalRecord& r) {
  nlohmann::json j = {{"step", r.step},
                      {"train_loss", r.train_loss},
                      {"val_loss", r.val_loss},
                      {"elapsed_seconds", r.elapsed_seconds},
                      {"tokens_per_second", r.tokens_per_second}};
  if (r.stage_loss) j["stage_loss"] = *r.stage_loss;              // absent: outside a curriculum stage
  if (r.skipped_steps != 0) j["skipped_steps"] = r.skipped_steps;  // absent: none
  return j;
}

inline EvalRecord eval_record_from_json(const nlohmann::json& j) {
  EvalRecord r{j.at("step").get<std::int64_t>(), j.at("train_loss").get<double>(), j.at("val_loss").get<double>(),
               j.at("elapsed_seconds").get<double>(), j.at("tokens_per_second").get<double>()};
  if (j.contains("stage_loss")) r.stage_loss = j.at("stage_loss").get<double>();
  r.skipped_steps = j.value("skipped_steps", std::int64_t{0});
  return r;
}

// The records of a run's log; a malformed line is an error naming the file and line.
inline std::vector<EvalRecord> read_eval_log(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail("cannot open the run log '", path, "'");
  std::vector<EvalRecord> records;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty()) continue;
    try {
      records.push_back(eval_record_from_json(nlohmann::json::parse(line)));
    } catch (const nlohmann::json::exception& e) {
      fail("run log '", path, "' line ", number, " is not an evaluation record: ", e.what());
    }
  }
  return records;
}

struct TrainingCallbacks {
  std::function<void(const StepReport&)> on_step = [](const StepReport&) {};
  std::function<void(const EvalRecord&)> on_eval = [](const EvalRecord&) {};
  // Asked after every step and before every batch of an evaluation: true stops the run there,
  // saved (a program's Ctrl-C handler sets it); a stopped evaluation is made when the run resumes.
  std::function<bool()> should_stop = [] { return false; };
};

// What run_training throws when should_stop ended a run early: the run directory holds the
// state after `step`, and --resume (resume = true) continues it as if it had never stopped.
class Interrupted : public Error {
 public:
  // step: the steps trained; total: the steps the whole run trains (its schedule's, less those a
  // curriculum stage that ended at its loss skipped)
  Interrupted(std::int64_t step, std::int64_t total)
      : Error("training stopped at step " + std::to_string(step) + " of " + std::to_string(total) +
              " on request, its state saved"),
        step_(step),
        total_(total) {}
  std::int64_t step() const { return step_; }
  std::int64_t total() const { return total_; }

 private:
  std::int64_t step_;
  std::int64_t total_;
};

namespace detail {
// The newest step a run's log or checkpoints hold, 0 when none.
inline std::int64_t latest_saved_step(const RunDirectory& run) {
  std::int64_t latest = 0;
  for (const std::int64_t step : run.checkpoint_steps()) latest = std::max(latest, step);
  if (std::filesystem::exists(run.log()))
    for (const EvalRecord& r : read_eval_log(run.log())) latest = std::max(latest, r.step);
  return latest;
}

// Reads the run's saved state into `model` and `optimizer`; a missing or unreadable file is an
// error naming it and what to do.
template <class Model, class S>
void restore_saved_state(const RunDirectory& run, Model& model, AdamW<S>& optimizer, std::string& sampler_state,
                         double& elapsed, double& train) {
  const std::string cannot = "run '" + run.dir().string() + "' cannot be resumed: ";
  std::optional<SafetensorsFile> state;
  try {
    state = read_safetensors(run.optimizer());
    load_optimizer_state(*state, optimizer);
    sampler_state = metadata_field(*state, "sampler_state");
    elapsed = std::stod(metadata_field(*state, "elapsed_seconds"));
    train = std::stod(metadata_field(*state, "train_seconds"));
  } catch (const std::exception& e) {  // Error, or std::stod's invalid_argument
    fail(cannot, "its optimizer state '", run.optimizer(), "' cannot be read (", e.what(),
         "); delete the run directory to start over");
  }
  const std::int64_t step = optimizer.steps();
  const std::string checkpoint = run.checkpoint(step);
  if (!std::filesystem::exists(checkpoint))
    fail(cannot, "the checkpoint of its saved step ", step, " '", checkpoint,
         "' is missing; delete the run directory to start over");
  try {
    load_parameters(model, read_safetensors(checkpoint));
  } catch (const Error& e) {
    fail(cannot, "the checkpoint of its saved step ", step, " cannot be read (", e.what(),
         "); delete the run directory to start over");
  }
}

// Rank 0's restored training state, copied to the other processes of a data-parallel group.
template <class Model, class S>
void share_restored_state(ProcessGroup& group, Model& model, AdamW<S>& optimizer, std::string& sampler_state,
                          double& elapsed, double& train, std::int64_t& last_evaluated, std::int64_t& skipped) {
  auto& values = model.store().values;
  group.broadcast(values.data(), values.size() * sizeof(S));
  group.broadcast(optimizer.first_moment().data(), optimizer.first_moment().size() * sizeof(S));
  group.broadcast(optimizer.second_moment().data(), optimizer.second_moment().size() * sizeof(S));
  std::int64_t steps = optimizer.steps();
  group.broadcast_value(steps);
  optimizer.set_steps(steps);
  group.broadcast(sampler_state);
  group.broadcast_value(elapsed);
  group.broadcast_value(train);
  group.broadcast_value(last_evaluated);
  group.broadcast_value(skipped);
}
}  // namespace detail

// Trains `model` into `run`, or, with resume, continues the run from its latest saved state (an
// evaluation's, or where should_stop stopped it; with none saved yet, from the start): the model,
// AdamW's state, the sampler's position and the clock are restored, so the losses that follow
// equal those of an uninterrupted run. Returns every evaluation of the run; throws Interrupted
// when should_stop ended it early.
// With a process group the training is data-parallel (see Trainer): rank 0 alone reads and writes
// the run's files and sends a restored state to the others; every process calls on_eval (the
// estimates are the group's) and, but rank 0, returns only the evaluations it took part in.
template <class Model>
std::vector<EvalRecord> run_training(Model& model, const TrainingData& data, const TrainConfig& config,
                                     const RunDirectory& run, bool resume,
                                     const TrainingCallbacks& callbacks = {}, ProcessGroup* group = nullptr) {
  const bool shared = group != nullptr && group->size() > 1;
  const bool writes = !shared || group->is_root();
  if (writes) run.lock();  // creates the directory
  Trainer<Model> trainer(model, data, config, group);
  std::vector<EvalRecord> records;
  // a checkpoint saved where the run was stopped, not at an evaluation: deleted once a newer
  // state is saved, since pruning only knows the evaluations' checkpoints
  std::optional<std::int64_t> stopped_at;
  // The optimizer state is written last and atomically, so it names a complete state or is
  // missing. Missing is a fresh start only while nothing past step 0 was saved (the first save
  // never finished: a full disk, a kill); later, starting over would overwrite the run's work.
  if (resume) {
    bool restorable = !writes || std::filesystem::exists(run.optimizer());
    std::string refusal;
    if (writes && !restorable) {
      const std::int64_t saved = detail::latest_saved_step(run);
      if (saved > 0)
        refusal = detail::concat("run '", run.dir().string(), "' cannot be resumed: its optimizer state '",
                                 run.optimizer(), "' is missing, yet the run saved step ", saved,
                                 " (resuming would overwrite it from step 0); restore the file, or delete the "
                                 "run directory to start over");
    }
    if (shared) {
      group->broadcast_value(restorable);
      group->broadcast(refusal);
    }
    if (!refusal.empty()) fail(refusal);
    resume = restorable;
  }
  if (resume) {
    std::string sampler_state;
    double elapsed = 0, train = 0;
    std::int64_t last_evaluated = -1;
    std::int64_t skipped = 0;  // by curriculum stages that ended early: the latest evaluation says
    std::string refusal;
    if (writes) {
      try {
        detail::restore_saved_state(run, model, trainer.optimizer(), sampler_state, elapsed, train);
      } catch (const Error& e) {
        refusal = e.what();
      }
      const std::int64_t step = trainer.step();
      if (refusal.empty())
        for (const EvalRecord& r : read_eval_log(run.log()))
          if (r.step <= step) records.push_back(r);  // drop records written after the saved state
      if (!records.empty()) {
        last_evaluated = records.back().step;
        skipped = records.back().skipped_steps;
      }
      if (last_evaluated != step) stopped_at = step;
    }
    if (shared) group->broadcast(refusal);
    if (!refusal.empty()) fail(refusal);
    if (shared)
      detail::share_restored_state(*group, model, trainer.optimizer(), sampler_state, elapsed, train, last_evaluated,
                                   skipped);
    trainer.set_last_evaluated_step(last_evaluated);  // a stop during an evaluation left it to make
    trainer.set_skipped_steps(skipped);
    trainer.sampler().rng().set_state(sampler_state);
    trainer.set_previous_time(elapsed, train);
  }
  const std::map<std::string, std::string> training = {{"training", to_json(config).dump()}};
  // The checkpoint and the log first, the optimizer state that names their step last: an
  // interruption anywhere leaves a complete state to resume from (records past it are dropped).
  auto save_state = [&](std::int64_t step) {
    save_checkpoint(run.checkpoint(step), model, data.tokenizer(), step, config.seed, training);
    std::string log;
    for (const EvalRecord& rec : records) log += to_json(rec).dump() + "\n";
    write_file_atomically(run.log(), log);
    save_optimizer_state(run.optimizer(), trainer.optimizer(),
                         {{"sampler_state", trainer.sampler().rng().state()},
                          {"elapsed_seconds", std::to_string(trainer.elapsed_seconds())},
                          {"train_seconds", std::to_string(trainer.train_seconds())}});
    run.prune_checkpoints(records);  // only now: the optimizer state names the new checkpoint
    if (stopped_at && *stopped_at != step) {
      std::error_code ignored;
      std::filesystem::remove(run.checkpoint(*stopped_at), ignored);
      stopped_at.reset();
    }
  };
  auto save = [&](const EvalRecord& r) {
    if (stopped_at == r.step) stopped_at.reset();  // stopped in this evaluation: its checkpoint is an evaluation's now
    records.push_back(r);
    if (writes) save_state(r.step);
    callbacks.on_eval(r);
  };
  if (!trainer.run(callbacks.on_step, save, callbacks.should_stop)) {
    const std::int64_t step = trainer.step();
    if (writes && (records.empty() || records.back().step != step)) {
      save_state(step);
      stopped_at = step;
    }
    throw Interrupted(step, trainer.steps_to_train());
  }
  if (writes) save_checkpoint(run.final_model(), model, data.tokenizer(), trainer.step(), config.seed, training);
  return records;
}

}  // namespace posenc
