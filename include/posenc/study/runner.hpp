// StudyRunner: executes a study's runs (fresh, resumed, extended, fine-tuned; N at once), records and evaluates them.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "posenc/config.hpp"
#include "posenc/data/dataset.hpp"
#include "posenc/data/tasks.hpp"
#include "posenc/io/atomic_file.hpp"
#include "posenc/io/checkpoint.hpp"
#include "posenc/io/safetensors.hpp"
#include "posenc/io/token_folder.hpp"
#include "posenc/study/design.hpp"
#include "posenc/study/record.hpp"
#include "posenc/train/any_model.hpp"
#include "posenc/train/run_config.hpp"
#include "posenc/train/stop_check.hpp"
#include "posenc/train/task_evaluation.hpp"
#include "posenc/train/run_start.hpp"
#include "posenc/train/training_run.hpp"

namespace posenc {

// Makes the model of a run: make_any_model<Sizes>, or a program's own (compiled in shards).
using MakeModel = std::function<std::unique_ptr<AnyModel>(const ModelShape&, const ModelConfig&)>;

// How a run ended: recorded, stopped on request (saved, resumable), or failed.
enum class RunEnd { done, stopped, failed };

// What a study reports while it runs. `job` names the slot a run occupies (a job thread, or an MPI
// rank); calls for different jobs may come from different threads at once.
class StudyObserver {
 public:
  virtual ~StudyObserver() = default;
  virtual void started(std::size_t /*job*/, const std::string& /*run*/) {}
  virtual void step(std::size_t /*job*/, const StepReport&) {}
  virtual void eval(std::size_t /*job*/, const EvalRecord&) {}
  // steps_elsewhere: the steps of a run trained where step() was not called (another rank)
  virtual void finished(std::size_t /*job*/, RunEnd, const std::string& /*message*/,
                        std::int64_t /*steps_elsewhere*/ = 0) {}
  // Asked after every step of every run: true stops the runs there, each saved to be resumed, and
  // starts no other (a program's Ctrl-C handler answers it).
  virtual bool stop_requested() { return false; }
};

// The runs that failed, with what went wrong; safe to add to from several threads.
class StudyFailures {
 public:
  void add(std::string what) {
    std::lock_guard lock(mutex_);
    list_.push_back(std::move(what));
  }
  std::vector<std::string> list() const {
    std::lock_guard lock(mutex_);
    return list_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> list_;
};

class StudyRunner {
 public:
  // `corpus` is the text every run trains on (its path is design.run.data), or a task study's
  // text to hide its answers in (passkey's; the other tasks take none: "").
  StudyRunner(StudyDesign design, std::filesystem::path out, const std::string& corpus, MakeModel make_model)
      : StudyRunner(std::move(design), std::move(out), corpus, std::nullopt, std::move(make_model)) {}

  // A study of a token folder's corpus (shakespeare prepare): every run trains on its tokens, so
  // every run's tokenizer must be the folder's.
  StudyRunner(StudyDesign design, std::filesystem::path out, TokenFolder tokens, MakeModel make_model)
      : StudyRunner(std::move(design), std::move(out), "", std::move(tokens), std::move(make_model)) {}

 private:
  StudyRunner(StudyDesign design, std::filesystem::path out, const std::string& corpus,
              std::optional<TokenFolder> tokens, MakeModel make_model)
      : design_(validated(std::move(design))),
        paths_{std::move(out)},
        digest_(tokens                       ? tokens->corpus_digest
                : design_.run.reads_corpus() ? corpus_digest(corpus)
                                             : std::string()),
        make_model_(std::move(make_model)),
        plan_(plan_runs(design_)) {
    if (tokens && design_.run.task)
      fail("task ", to_string(*design_.run.task), " reads text, not a token folder: give the text it was made from");
    // the data of each tokenizer the runs use, made once (a BPE tokenizer is trained here)
    const std::optional<TokenizerSpec> folder_tokens =
        tokens ? std::optional(tokens->data.tokenizer().spec()) : std::nullopt;
    for (const RunSpec& spec : plan_) {
      const RunConfig c = config(spec);
      if (folder_tokens && c.tokenizer != *folder_tokens)
        fail("run ", spec.id(), ": the token folder holds tokens of ", to_string(*folder_tokens), ", not of the run's ",
             to_string(c.tokenizer));
      if (find_data(c.tokenizer) != nullptr) continue;
      try {
        if (tokens) data_.emplace_back(c.tokenizer, std::make_unique<TextDataset>(std::move(tokens->data)));
        else data_.emplace_back(c.tokenizer, make_training_data(c, corpus));
      } catch (const Error& e) {
        fail("run ", spec.id(), ": ", e.what());
      }
    }
    if (const auto* task = data_.empty() ? nullptr : dynamic_cast<const TaskData*>(data_.front().second.get())) {
      const std::vector<std::size_t> tested = tested_task_lengths(design_);
      task->task().check({tested.front(), tested.back()});
      if (task->context() > design_.run.train.context)
        fail("--context ", design_.run.train.context, ": task ", to_string(*design_.run.task),
             " has examples of up to ", task->context(), " inputs; leave --context out to train on all of them");
    }
    // Each configuration trains, as far as its memory, settings and size go: a grid value out of
    // range or a size the program is not built for fails here, not hours later when its runs start.
    std::vector<RunConfig> checked;
    for (const RunSpec& spec : plan_) {
      RunConfig c = config(spec);
      const std::size_t vocab_size = data(c).vocab_size();
      check_training_memory(c, vocab_size);
      if (spec.fine_tune) continue;  // its settings are its base run's, but for the context and steps
      c.train.seed = 0;
      if (std::find(checked.begin(), checked.end(), c) != checked.end()) continue;
      try {
        c.train.check();
        make_model_(c.shape(), c.model_config(vocab_size));
      } catch (const Error& e) {
        fail("run ", spec.id(), ": ", e.what());
      }
      checked.push_back(c);
    }
  }

 public:
  const StudyDesign& design() const { return design_; }
  const StudyPaths& paths() const { return paths_; }
  const std::vector<RunSpec>& plan() const { return plan_; }
  // A fine-tune starts from its base run's final model: the checkpoint its record names (which
  // may be another study's), or where this study will write it.
  RunConfig config(const RunSpec& spec) const {
    if (!spec.fine_tune) return run_config(design_, spec, digest_);
    const auto base = load_record(paths_.record(spec.base()));
    return run_config(design_, spec, digest_,
                      base ? base->checkpoint : RunDirectory(paths_.run_dir(spec.base())).final_model());
  }

  // The indices into plan() of the runs without a record. A record made with another
  // configuration is an error, never silently reused.
  std::vector<std::size_t> pending() const {
    std::vector<std::size_t> pending;
    for (std::size_t i = 0; i < plan_.size(); ++i) {
      const RunSpec& spec = plan_[i];
      if (const auto record = load_record(paths_.record(spec))) {
        if (const RunConfig now = config(spec); !record->config.same_run(now))
          fail("'", paths_.record(spec).string(), "' holds a run made with another configuration (",
               record->config.differences(now), "); use another --out or delete it");
        continue;
      }
      pending.push_back(i);
    }
    return pending;
  }

  // The steps those runs still train: an extended run continues its base run, so only its steps
  // past the base run count, and a run with a saved state only its steps past that state. A state
  // that cannot be read counts as none here; the run itself reports it.
  std::int64_t steps_to_train(const std::vector<std::size_t>& pending) const {
    std::int64_t steps = 0;
    for (std::size_t i : pending) {
      const RunSpec& spec = plan_[i];
      const std::int64_t total = spec.fine_tune ? spec.fine_tune->steps : spec.steps;
      std::int64_t done = !spec.fine_tune && spec.steps > design_.steps ? design_.steps : 0;
      try {
        if (const auto saved = RunDirectory(paths_.run_dir(spec)).saved_step()) done = std::max(done, *saved);
      } catch (const Error&) {
      }
      steps += std::max<std::int64_t>(0, total - done);
    }
    return steps;
  }

  // Pending runs as the jobs take them: each with the pending fine-tunes of it, which the same job
  // runs right after it (a fine-tune needs its base run's final model). A fine-tune whose base
  // run is finished is an item of its own.
  struct WorkItem {
    std::size_t run;                     // an index into plan()
    std::vector<std::size_t> followers;  // its fine-tunes, indices into plan()
  };
  std::vector<WorkItem> work_items(const std::vector<std::size_t>& pending) const {
    std::vector<WorkItem> items;
    const auto is_pending = [&](const RunSpec& spec) {
      return std::any_of(pending.begin(), pending.end(), [&](std::size_t i) { return plan_[i].id() == spec.id(); });
    };
    for (std::size_t i : pending) {
      if (plan_[i].fine_tune && is_pending(plan_[i].base())) continue;  // its base run's follower
      WorkItem item{i, {}};
      if (!plan_[i].fine_tune)
        for (std::size_t j : pending)
          if (plan_[j].fine_tune && plan_[j].base().id() == plan_[i].id()) item.followers.push_back(j);
      items.push_back(std::move(item));
    }
    return items;
  }

  // Trains one run (resuming its directory if it was interrupted; an extended run starts from the
  // finished base run of the same variant and seed, a fine-tune from its base run's final model),
  // evaluates the final model by full passes (a task's: task_loss_batches batches) (and a base run or a fine-tune as
  // evaluate_final_model does, its record written before and after each entry) and returns the
  // run's record.
  RunRecord execute(const RunSpec& spec, StudyObserver& observer, std::size_t job) const {
    if (spec.fine_tune && !std::filesystem::exists(paths_.record(spec.base())))
      fail("its base run ", spec.base().id(), " has not finished");
    const RunConfig config = this->config(spec);
    const RunDirectory run(paths_.run_dir(spec));
    run.lock();
    if (spec.steps > design_.steps && !std::filesystem::exists(run.optimizer())) {
      // The first `steps` of an extended run are the base run (same seed, constant learning rate).
      const RunSpec base{spec.variant, spec.seed, design_.steps, spec.setting};
      const RunDirectory base_run(paths_.run_dir(base));
      if (std::filesystem::exists(paths_.record(base)) && std::filesystem::exists(base_run.optimizer())) {
        for (const auto& entry : std::filesystem::directory_iterator(base_run.dir())) {
          const std::string name = entry.path().filename().string();
          if (name == "lock" || name == "study-run.json" || entry.path() == run_config_path(base_run)) continue;
          std::filesystem::copy_file(entry.path(), run.dir() / name, std::filesystem::copy_options::overwrite_existing);
        }
        record_run_config(run, config);  // the copied state continues as this run
      }
    }
    const bool saved = start_or_resume(run, config);

    const TrainingData& data = this->data(config);
    const auto model = make_model_(config.shape(), config.model_config(data.vocab_size()));
    if (spec.fine_tune && !saved) {  // a resumed run's state replaces it
      const SafetensorsFile source = read_safetensors(config.init_from.checkpoint);
      model->initialize_from(source, read_checkpoint_info(source));
    }
    TrainingCallbacks callbacks;
    callbacks.on_step = [&](const StepReport& r) { observer.step(job, r); };
    callbacks.on_eval = [&](const EvalRecord& r) { observer.eval(job, r); };
    const StopCheck should_stop = [&] { return observer.stop_requested(); };
    callbacks.should_stop = should_stop;
    // resume: the saved state if there is one (run_training refuses a damaged one), else step 0
    const auto curve = model->train(data, config.train, run, /*resume=*/true, callbacks, nullptr);
    RunRecord record;
    record.config = config;
    record.curve = curve;
    const std::size_t T = config.train.context, B = config.train.batch;
    if (const auto* corpus = dynamic_cast<const TextDataset*>(&data)) {
      record.final_train_loss = model->evaluate_loss(corpus->train(), T, B, should_stop).loss;
      record.final_val_loss = model->evaluate_loss(corpus->val(), T, B, should_stop).loss;
      record.bytes_per_target = {corpus->bytes_per_target(Split::train), corpus->bytes_per_target(Split::validation)};
    } else {
      record.final_train_loss =
          model->estimate_loss(data, Split::train, B, T, task_loss_batches, design_.task_seed, should_stop);
      record.final_val_loss =
          model->estimate_loss(data, Split::validation, B, T, task_loss_batches, design_.task_seed + 1, should_stop);
    }
    record.wall_seconds = curve.back().elapsed_seconds;
    record.tokens_per_second = curve.back().tokens_per_second;
    record.checkpoint = run.final_model();
    if (spec.steps == design_.steps) {
      // Recorded before the evaluation after training (which records each entry): a stop there
      // keeps the run finished with what it evaluated, and records() adds the rest.
      write_record(record, paths_.record(spec));
      evaluate_final_model(record, spec, should_stop);
    }
    return record;
  }

  // Adds what the design evaluates after training and the record of `spec` (a base run or a
  // fine-tune) lacks, from its final checkpoint: the validation loss at each extrapolation length
  // (and by position, with per_position_bins), the copy probe at each distance, a task study's
  // accuracy at each tested length and, for a rotary base run, all again under each of extrapolate_rope (over the
  // checkpoint's own settings: rope_scaling_over). The checkpoint is read only when something is missing. The record is
  // written to its file after each entry it adds, so a stop loses only the entry in progress; should_stop is asked
  // before every batch (EvaluationStopped). Returns the number of entries added or made again.
  std::size_t evaluate_final_model(RunRecord& record, const RunSpec& spec, const StopCheck& should_stop = {}) const {
    std::size_t made = 0;
    const auto saved = [&] {
      write_record(record, paths_.record(spec));
      ++made;
    };
    std::optional<CheckpointInfo> info;
    std::unique_ptr<AnyModel> model;  // made when something is missing
    auto model_under = [&](const RopeScaling& scaling) -> AnyModel& {
      if (!model) {
        const SafetensorsFile file = read_safetensors(record.checkpoint);
        info = read_checkpoint_info(file);
        std::size_t longest = 16 * info->context;
        for (std::size_t L : design_.extrapolate) longest = std::max(longest, L);
        for (std::size_t n : design_.copy_probe) longest = std::max(longest, 2 * n);
        if (const auto tested = tested_task_lengths(design_); !tested.empty())
          longest = std::max(longest, task_context({design_.run.task->kind, {tested.back(), tested.back()}}));
        model = make_model_({info->policy, info->layers, info->dim, info->heads}, info->model_config(longest));
        model->load_parameters(file);
      }
      if (model->rotary()) {
        const RopeScaling applied = scaling.changes_anything() ? rope_scaling_over(info->rope, scaling) : info->rope;
        if (!(model->rope_scaling() == applied)) model->set_rope_scaling(applied);
      }
      return *model;
    };
    const TrainingData& data = this->data(record.config);
    const auto* corpus = dynamic_cast<const TextDataset*>(&data);
    const std::vector<TokenId> no_text;
    const std::vector<TokenId>& val = corpus != nullptr ? corpus->val() : no_text;  // a task study asks for none
    const std::size_t bins = design_.per_position_bins;
    for (const RopeScaling& scaling : evaluated_scalings(design_, spec)) {
      const auto keyed = [&](nlohmann::json row) {
        if (scaling.changes_anything()) row["rope_scaling"] = to_json(scaling);
        return row;
      };
      for (std::size_t L : design_.extrapolate) {
        nlohmann::json* entry = record.extrapolation_at(L, scaling);
        const auto has_bins = [&](const nlohmann::json& e) {
          return bins == 0 || e.contains("note") ||
                 (e.contains("per_position") && e["per_position"]["bins"].size() == std::min(bins, L));
        };
        if (entry != nullptr && has_bins(*entry)) continue;
        AnyModel& m = model_under(scaling);
        if (entry == nullptr) {
          record.extrapolation.push_back(
              keyed(evaluate_at_length(m, val, L, std::max<std::size_t>(1, L / 2), bins, should_stop)));
        } else {  // an entry of a study without the loss by position, or with other bins
          (*entry)["per_position"] = per_position_at_length(m, val, L, bins, should_stop);
        }
        saved();
      }
      for (std::size_t n : design_.copy_probe) {
        nlohmann::json* entry = record.copy_probe_at(n, scaling);
        // made again: an entry of another segment count, or one against the first copy (before 2026-12-03)
        if (entry != nullptr && entry->at("segments").get<std::size_t>() == design_.copy_segments &&
            (entry->contains("note") || entry->contains("control_loss")))
          continue;
        nlohmann::json row = keyed(copy_probe_at(model_under(scaling), val, n, design_.copy_segments, should_stop));
        if (entry != nullptr) *entry = std::move(row);
        else record.copy_probe.push_back(std::move(row));
        saved();
      }
      for (std::size_t n : tested_task_lengths(design_)) {
        nlohmann::json* entry = record.task_at(n, scaling);
        // made again: an entry of another seed or example count
        if (entry != nullptr && entry->value("seed", std::uint64_t{0}) == design_.task_seed &&
            (entry->contains("note") || entry->at("examples").get<std::size_t>() == design_.task_examples))
          continue;
        AnyModel& m = model_under(scaling);
        const TaskScore score = m.evaluate_task(dynamic_cast<const TaskData&>(data).task(), data.tokenizer(), {n, n},
                                                design_.task_examples, design_.task_seed, should_stop)
                                    .front();
        nlohmann::json row = keyed(to_json(score, m.max_context()));
        row["seed"] = design_.task_seed;
        if (entry != nullptr) *entry = std::move(row);
        else record.task.push_back(std::move(row));
        saved();
      }
    }
    return made;
  }

  // Executes plan()[index] and records it; a failed run is reported and added to `failures`.
  // Whether it finished. `where` follows the run's name in the messages (an MPI rank).
  bool execute_and_record(std::size_t index, StudyObserver& observer, std::size_t job, StudyFailures& failures,
                          const std::string& where = "") const {
    const RunSpec& spec = plan_[index];
    observer.started(job, spec.id() + where);
    try {
      write_record(execute(spec, observer, job), paths_.record(spec));
      observer.finished(job, RunEnd::done, "done " + spec.id() + where);
      return true;
    } catch (const Interrupted& stopped) {  // asked for: not a failure
      observer.finished(job, RunEnd::stopped,
                        "stopped " + spec.id() + where + " at step " + std::to_string(stopped.step()) + ", saved");
    } catch (const EvaluationStopped&) {  // its training is saved whole, and recorded once its full passes are
      observer.finished(job, RunEnd::stopped,
                        "stopped " + spec.id() + where +
                            (std::filesystem::exists(paths_.record(spec))
                                 ? " in its evaluation after training, its record part-way (the study completes it)"
                                 : " in its final full passes, made again on resuming"));
    } catch (const std::exception& e) {
      failures.add(spec.id() + where + ": " + e.what());
      observer.finished(job, RunEnd::failed, "FAILED " + spec.id() + where + ": " + e.what());
    }
    return false;
  }

  // Executes items[i] for i = next++ until none is left, each run and then its followers (none
  // when it did not finish); a failed run is reported and the job goes on. Several jobs may share
  // `next`.
  void work(std::size_t job, const std::vector<WorkItem>& items, std::atomic<std::size_t>& next,
            StudyObserver& observer, StudyFailures& failures, const std::string& where = "") const {
    for (std::size_t i = next++; i < items.size() && !observer.stop_requested(); i = next++)
      if (execute_and_record(items[i].run, observer, job, failures, where))
        for (std::size_t follower : items[i].followers) {
          if (observer.stop_requested()) break;
          execute_and_record(follower, observer, job, failures, where);
        }
  }

  // The pending runs, `jobs` at a time, each handed out when a job is free, so a slow run never
  // idles the others. The caller sets the threads each run's kernels use.
  void run(const std::vector<std::size_t>& pending, std::size_t jobs, StudyObserver& observer,
           StudyFailures& failures) const {
    const std::vector<WorkItem> items = work_items(pending);
    std::atomic<std::size_t> next{0};
    on_jobs(jobs, [&](std::size_t job) { work(job, items, next, observer, failures); });
  }

  // Every finished run's record, in plan order. With `evaluate_finished`, a base run's or a
  // fine-tune's record that lacks an evaluation of the design (evaluate_final_model) gets it and is
  // rewritten (its checkpoint must be here), `jobs` records at a time; a record that cannot be is
  // added to `failures` and kept as it is. A file that is not a record is an error (the first in
  // plan order). When should_stop asks, the records not yet evaluated are returned as they are
  // (the caller, which asked, is expected not to summarize them). on_evaluated(run, entries,
  // checked) follows each run the evaluation added entries to (`checked`: the runs of the plan
  // taken up so far), from the job that evaluated it: a long evaluation phase shows its progress.
  using OnEvaluated = std::function<void(const std::string& run, std::size_t entries, std::size_t checked)>;
  std::vector<RunRecord> records(bool evaluate_finished, StudyFailures& failures, std::size_t jobs = 1,
                                 const StopCheck& should_stop = {}, const OnEvaluated& on_evaluated = {}) const {
    std::vector<std::optional<RunRecord>> found(plan_.size());
    std::vector<std::exception_ptr> errors(plan_.size());
    std::atomic<std::size_t> next{0}, checked{0};
    const auto collect = [&] {
      for (std::size_t i = next++; i < plan_.size(); i = next++) {
        const RunSpec& spec = plan_[i];
        const std::size_t seen = ++checked;
        try {
          found[i] = load_record(paths_.record(spec));
        } catch (...) {
          errors[i] = std::current_exception();
          continue;
        }
        if (!found[i] || !evaluate_finished || spec.steps != design_.steps) continue;
        try {
          const std::size_t entries = evaluate_final_model(*found[i], spec, should_stop);
          if (entries > 0 && on_evaluated) on_evaluated(spec.id(), entries, seen);
        } catch (const EvaluationStopped&) {  // the record keeps what was evaluated before the stop
        } catch (const std::exception& e) {
          failures.add(spec.id() + " (evaluation after training): " + e.what());
        }
      }
    };
    on_jobs(jobs, [&](std::size_t) { collect(); });
    for (const std::exception_ptr& e : errors)
      if (e) std::rethrow_exception(e);
    std::vector<RunRecord> records;
    for (std::optional<RunRecord>& r : found)
      if (r) records.push_back(std::move(*r));
    return records;
  }

 private:
  // Calls job(j) for j = 0 … jobs − 1 at once, job 0 on this thread, and returns when all are done.
  template <class Job>
  static void on_jobs(std::size_t jobs, Job&& job) {
    std::vector<std::thread> threads;
    for (std::size_t j = 1; j < std::max<std::size_t>(1, jobs); ++j) threads.emplace_back([&job, j] { job(j); });
    job(0);
    for (auto& t : threads) t.join();
  }

  static StudyDesign validated(StudyDesign d) {
    validate_design(d);
    return d;
  }

  StudyDesign design_;
  StudyPaths paths_;
  const TrainingData* find_data(const TokenizerSpec& tokenizer) const {
    for (const auto& [spec, data] : data_)
      if (spec == tokenizer) return data.get();
    return nullptr;
  }
  // The data a run of the plan trains on: its tokenizer's.
  const TrainingData& data(const RunConfig& config) const {
    if (const TrainingData* d = find_data(config.tokenizer)) return *d;
    fail("StudyRunner: no data for tokenizer ", to_string(config.tokenizer), ", which no run of the plan uses");
  }

  std::string digest_;
  MakeModel make_model_;
  std::vector<RunSpec> plan_;
  std::vector<std::pair<TokenizerSpec, std::unique_ptr<TrainingData>>> data_;  // one a tokenizer of the plan
};

}  // namespace posenc
