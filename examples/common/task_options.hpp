// TaskOptions: --task and --task-lengths, the command-line options that choose a synthetic task, for both programs.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>

#include <posenc/data/tasks.hpp>
#include <posenc/train/run_config.hpp>

namespace examples {

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

  // Sets run.task from the options `app` was given: the context, unless --context is given, the
  // longest example's inputs; a task that reads no corpus refuses --data and leaves run.data empty.
  void apply(posenc::RunConfig& run, const CLI::App& app) const {
    run.task = spec();
    if (!run.task) return;
    if (app.count("--context") == 0) run.train.context = posenc::task_context(*run.task);
    if (!run.reads_corpus()) {
      if (app.count("--data") > 0)
        posenc::fail("--data with --task ", name_, ": the task makes its own examples and reads no corpus");
      run.data.clear();
    }
  }

  // The task given, or none.
  std::optional<posenc::TaskSpec> spec() const {
    if (task_->count() == 0) return std::nullopt;
    return posenc::TaskSpec{posenc::parse_task_kind(name_), posenc::parse_task_lengths(lengths_)};
  }

 private:
  std::string name_;
  std::string lengths_;
  CLI::Option* task_ = nullptr;
  CLI::Option* lengths_option_ = nullptr;
};

}  // namespace examples
