// TaskOptions: --task, --task-lengths and --task-curriculum, the command-line options that choose a synthetic task.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include <posenc/data/tasks.hpp>
#include <posenc/train/run_config.hpp>

namespace examples {

// run.task = task, with what follows from it: the context, unless `context_given`, the longest
// example's inputs; a task that reads no corpus refuses a corpus given and leaves run.data empty.
// `spelled` writes a setting's name ("data", "task") as the caller's user gives it.
inline void set_task(posenc::RunConfig& run, const std::optional<posenc::TaskSpec>& task, bool context_given,
                     bool data_given, const std::function<std::string(std::string_view)>& spelled) {
  run.task = task;
  if (!task) return;
  if (!context_given) run.train.context = posenc::task_context(*task);
  if (!run.reads_corpus()) {
    if (data_given)
      posenc::fail(spelled("data"), " with ", spelled("task"), " ", posenc::task_name(task->kind),
                   ": the task makes its own examples and reads no corpus");
    run.data.clear();
  }
}

// Adds --task NAME (the names and summaries from posenc::task_infos) and --task-lengths A-B to `app`.
class TaskOptions {
 public:
  TaskOptions(CLI::App& app, const std::string& what, const std::string& default_lengths = "1-16")
      : lengths_(default_lengths) {
    std::string tasks;
    for (const posenc::TaskInfo& info : posenc::task_infos)
      tasks += "; " + std::string(info.name) + ": " + std::string(info.summary);
    task_ = app.add_option("--task", name_, what + tasks)->check(CLI::IsMember(posenc::task_names()));
    lengths_option_ =
        app.add_option_function<std::string>(
               "--task-lengths",
               [this](const std::string& text) {
                 try {
                   posenc::parse_task_lengths(text);
                 } catch (const posenc::Error& e) {
                   throw CLI::ValidationError("--task-lengths", e.what());
                 }
                 lengths_ = text;
               },
               "The lengths of the task's examples, A-B or N (what a length counts depends on the task) [" +
                   default_lengths + "]")
            ->needs(task_);
  }

  // Adds --task-curriculum, for a command that trains.
  void add_curriculum(CLI::App& app) {
    app.add_option_function<std::string>(
           "--task-curriculum",
           [this](const std::string& text) {
             try {
               curriculum_ = posenc::parse_task_curriculum(text);
             } catch (const posenc::Error& e) {
               throw CLI::ValidationError("--task-curriculum", e.what());
             }
           },
           "LENGTHS:STEPS,...: stages trained before --task-lengths, each its steps on examples of its lengths "
           "(none longer than --task-lengths' longest), e.g. 2:30000,2-4:20000 (associative recall finds its "
           "lookup at two pairs first); LENGTHS:STEPS@LOSS ends the stage at the first evaluation whose "
           "validation loss on its examples is below LOSS, skipping the steps it leaves [none]")
        ->needs(task_);
  }

  // Sets run.task from the options `app` was given: the context, unless --context is given, the
  // longest example's inputs; a task that reads no corpus refuses --data and leaves run.data empty.
  void apply(posenc::RunConfig& run, const CLI::App& app) const {
    set_task(run, spec(), app.count("--context") > 0, app.count("--data") > 0,
             [](std::string_view name) { return "--" + std::string(name); });
  }

  // The task given, or none.
  std::optional<posenc::TaskSpec> spec() const {
    if (task_->count() == 0) return std::nullopt;
    posenc::TaskSpec spec{posenc::parse_task_kind(name_), posenc::parse_task_lengths(lengths_), curriculum_};
    posenc::check_curriculum(spec);
    return spec;
  }

 private:
  std::string name_;
  std::string lengths_;
  posenc::TaskCurriculum curriculum_;
  CLI::Option* task_ = nullptr;
  CLI::Option* lengths_option_ = nullptr;
};

}  // namespace examples
