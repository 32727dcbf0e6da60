// The Python module posenc._posenc: the registry, and a checkpoint's model with numpy in and out (issue 42, first
// part).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <posenc/transformer.hpp>
#include <regex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "../examples/common/any_model.hpp"
#include "../examples/common/compute.hpp"
#include "../examples/common/corpus.hpp"
#include "../examples/common/eval_rows.hpp"
#include "../examples/common/model_sizes.hpp"
#include "../examples/common/stage_text.hpp"
#include "../examples/common/stop_signal.hpp"
#include "../examples/common/rope_options.hpp"
#include "../examples/common/run_options.hpp"
#include "../examples/common/study_summary.hpp"
#include "../examples/common/task_options.hpp"
#include "../examples/common/train_run.hpp"

namespace py = pybind11;

namespace {

// A checkpoint's model, as `shakespeare eval` loads it, with its description and tokenizer.
class Model {
 public:
  explicit Model(const std::string& path, std::size_t max_context) : path_(path) {
    const posenc::SafetensorsFile file = posenc::read_safetensors(path);
    info_ = posenc::read_checkpoint_info(file);
    model_ = examples::make_model({info_.policy, info_.layers, info_.dim, info_.heads},
                                  info_.model_config(std::max(max_context, info_.max_context)));
    model_->load_parameters(file);
  }

  const posenc::CheckpointInfo& info() const { return info_; }
  posenc::AnyModel& model() { return *model_; }
  const posenc::AnyModel& model() const { return *model_; }
  const std::string& path() const { return path_; }

  // Token ids as a (B, T) batch: a 1-D array is one sequence; every id must be in the vocabulary
  // and a sequence no longer than the model takes.
  posenc::Tokens tokens(const py::object& ids_like, const char* what) const {
    const py::array given = py::array::ensure(ids_like);  // a list of ints too
    if (!given) throw py::type_error(std::string(what) + ": expected an array of token ids");
    // integers only: numpy would turn 1.7 into 1 without a word
    if (const char kind = given.dtype().kind(); kind != 'i' && kind != 'u')
      throw py::type_error(std::string(what) + ": expected integer token ids, got an array of dtype " +
                           std::string(py::str(given.dtype())));
    const auto ids = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>::ensure(given);
    if (ids.ndim() != 1 && ids.ndim() != 2)
      throw py::value_error(std::string(what) + ": expected a 1-D or 2-D array of token ids, got " +
                            std::to_string(ids.ndim()) + " dimensions");
    const std::size_t B = ids.ndim() == 2 ? static_cast<std::size_t>(ids.shape(0)) : 1;
    const std::size_t T = static_cast<std::size_t>(ids.shape(ids.ndim() - 1));
    if (B == 0 || T == 0) throw py::value_error(std::string(what) + ": the array is empty");
    if (T > model_->max_context())
      throw py::value_error(std::string(what) + ": " + std::to_string(T) + " tokens a sequence, more than this " +
                            info_.policy + " model takes (" + std::to_string(model_->max_context()) +
                            "; posenc.load(..., max_context=N) raises the limit where the encoding allows)");
    posenc::Tokens out({B, T});
    const std::int64_t* data = ids.data();
    const auto V = static_cast<std::int64_t>(model_->vocab_size());
    for (std::size_t i = 0; i < B * T; ++i) {
      if (data[i] < 0 || data[i] >= V)
        throw py::value_error(std::string(what) + ": token id " + std::to_string(data[i]) + " at flat index " +
                              std::to_string(i) + " is outside the vocabulary [0, " + std::to_string(V) + ")");
      out.data()[i] = static_cast<posenc::TokenId>(data[i]);
    }
    return out;
  }

 private:
  std::string path_;
  posenc::CheckpointInfo info_;
  std::unique_ptr<posenc::AnyModel> model_;
};

std::string as_bytes(const py::object& text) {
  if (py::isinstance<py::bytes>(text)) return text.cast<std::string>();
  if (py::isinstance<py::str>(text)) return text.cast<std::string>();  // UTF-8
  throw py::type_error("expected str or bytes, got " + std::string(py::str(py::type::of(text).attr("__name__"))));
}

py::array_t<std::int32_t> as_array(const std::vector<posenc::TokenId>& ids) {
  py::array_t<std::int32_t> out(static_cast<py::ssize_t>(ids.size()));
  std::copy(ids.begin(), ids.end(), out.mutable_data());
  return out;
}

// JSON as plain Python (dicts, lists, numbers, strings, None).
py::object to_python(const nlohmann::json& j) { return py::module_::import("json").attr("loads")(j.dump()); }

// A Python value of a setting as JSON (None: "no value", as grad_clip=None).
nlohmann::json setting_json(const char* caller, const std::string& key, const py::handle& value) {
  if (value.is_none()) return nullptr;
  if (py::isinstance<py::bool_>(value)) return value.cast<bool>();
  if (py::isinstance<py::int_>(value)) return value.cast<std::int64_t>();
  if (py::isinstance<py::float_>(value)) return value.cast<double>();
  if (py::isinstance<py::str>(value)) return value.cast<std::string>();
  throw py::type_error(std::string(caller) + ": setting " + key + " takes a number, a bool, a string or None, not " +
                       std::string(py::str(py::type::of(value).attr("__name__"))));
}

// A setting's name as Python callers write it: task_lengths for --task-lengths.
std::string python_name(std::string_view option) {
  std::string name(option);
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

// posenc's message with the programs' option names as Python's keywords (the library and the code
// the programs share name the command-line options): --warmup-steps → warmup_steps, --resume →
// resume=True; a path's dashes (inside a word or quotes) stay.
std::string python_message(const std::string& message) {
  static const std::regex option(R"((^|[\s(,;:'"])--([a-z][a-z0-9-]*))");
  std::string out;
  std::size_t copied = 0;
  for (auto it = std::sregex_iterator(message.begin(), message.end(), option); it != std::sregex_iterator(); ++it) {
    const std::smatch& m = *it;
    const std::string name = python_name(m[2].str());
    out.append(message, copied, static_cast<std::size_t>(m.position(0)) - copied)
        .append(m[1].str())
        .append(name == "resume" ? "resume=True" : name);
    copied = static_cast<std::size_t>(m.position(0) + m.length(0));
  }
  return out.append(message, copied, std::string::npos);
}

// The config.json key a Python setting names: its own, or the key of the program's option of that
// name where the two differ (adam_eps: eps, decay_on: weight_decay_scope).
std::string config_key(const std::string& name) {
  static const std::map<std::string, std::string> aliases = [] {
    CLI::App app;
    posenc::RunConfig run;
    const examples::RunOptions options(app, run);
    std::map<std::string, std::string> found;
    for (const auto& [option, key] : options.config_keys())
      if (const std::string python = python_name(std::string_view(option).substr(2)); python != key)
        found.emplace(python, key);
    return found;
  }();
  const auto it = aliases.find(name);
  return it == aliases.end() ? name : it->second;
}

// The task named `name`; a ValueError listing the tasks (`prefix` before it) for any other name.
posenc::TaskKind task_kind(const std::string& prefix, const std::string& name) {
  const auto names = posenc::task_names();
  if (std::find(names.begin(), names.end(), name) == names.end())
    throw py::value_error(prefix + "task '" + name + "': expected one of " + posenc::name_list(names));
  return posenc::parse_task_kind(name);
}

// The programs' options that are not config.json keys, under their CLI names: the task and the
// rotary settings (task="copy", task_lengths="1-16", rope_scaling="yarn", rope_factor=4, ...).
struct ProgramOptions {
  std::optional<std::string> task, task_lengths, task_curriculum, rope_method, init_from;
  std::vector<std::pair<std::string, double>> rope_numbers;  // by option name: rope-base, ...

  // Takes `key` (a Python name) if it is one of them; false otherwise.
  bool take(const char* caller, const std::string& key, const py::handle& value) {
    const auto text = [&]() {
      if (!py::isinstance<py::str>(value))
        throw py::type_error(std::string(caller) + ": setting " + key + " takes a string, not " +
                             std::string(py::str(py::type::of(value).attr("__name__"))));
      return value.cast<std::string>();
    };
    if (key == "task") return task = text(), true;
    if (key == "task_lengths") return task_lengths = text(), true;
    if (key == "task_curriculum") return task_curriculum = text(), true;
    if (key == "rope_scaling") return rope_method = text(), true;
    if (key == "init_from") return init_from = text(), true;
    std::vector<std::string_view> options = {"rope-factor"};  // and each setting of the library's table
    for (const posenc::RopeScalingSetting& setting : posenc::rope_scaling_settings) options.push_back(setting.option);
    for (const std::string_view option : options) {
      if (key != python_name(option)) continue;
      if (py::isinstance<py::bool_>(value) || !(py::isinstance<py::int_>(value) || py::isinstance<py::float_>(value)))
        throw py::type_error(std::string(caller) + ": setting " + key + " takes a number, not " +
                             std::string(py::str(py::type::of(value).attr("__name__"))));
      rope_numbers.emplace_back(std::string(option), value.cast<double>());
      return true;
    }
    return false;
  }

  // Puts them over `c`, as shakespeare train does (the task, a fine-tune's source, then the rotary
  // settings); `given` says whether the caller gave a setting, by its command-line name. A
  // fine-tune's source file goes to `init_source` (train's; none for study).
  void apply(posenc::RunConfig& c, bool context_given, bool data_given,
             const std::function<bool(const std::string&)>& given,
             std::optional<posenc::SafetensorsFile>* init_source) const {
    if (task_lengths && !task) throw py::value_error("task_lengths needs task, the task whose lengths they are");
    if (task_curriculum && !task) throw py::value_error("task_curriculum needs task, the task it trains in stages");
    const auto spelled = [](std::string_view name) { return python_name(name); };
    if (task) {
      posenc::TaskSpec spec{task_kind("", *task), posenc::parse_task_lengths(task_lengths.value_or("1-16")),
                            posenc::parse_task_curriculum(task_curriculum.value_or(""))};
      posenc::check_curriculum(spec);
      examples::set_task(c, spec, context_given, data_given, spelled);
    }
    if (init_from) {
      if (init_source == nullptr)
        throw py::value_error("init_from is a setting of train; a study fine-tunes its runs with fine_tune");
      examples::TrainOptions source;
      source.run = c;
      source.run.init_from.checkpoint = *init_from;
      examples::take_from_source(source, given);
      c = source.run;
      *init_source = std::move(source.init_source);
    }
    if (rope_method || !rope_numbers.empty())
      c.rope = examples::apply_rope_settings(c.rope, rope_method, rope_numbers, spelled);
    if (init_from) c.rope = posenc::rope_for_fine_tuning(c.rope, c.init_from.context);
    if (rope_method || !rope_numbers.empty() || c.rope.changes_anything()) {
      if (!posenc::rotary_policy(c.posenc))
        throw py::value_error("rope_base and rope_scaling apply to rotary policies (" +
                              posenc::name_list(posenc::rotary_policy_names()) + "), not to " + c.posenc);
    }
  }
};

// A run's settings over `run`: config.json's keys and the programs' options that are not keys
// (ProgramOptions) (posenc.train's and posenc.study's **settings); an unknown key is a TypeError, a
// bad value a ValueError.
posenc::RunConfig run_settings(const posenc::RunConfig& run, const py::kwargs& settings, const char* caller,
                               bool data_given, bool policy_given = false,
                               std::optional<posenc::SafetensorsFile>* init_source = nullptr) {
  nlohmann::json j = posenc::complete_json(run);
  ProgramOptions options;
  for (const auto& [name, value] : settings) {
    const std::string key = config_key(python_name(std::string(py::str(name))));
    if (options.take(caller, key, value)) continue;
    if (!posenc::grid_may_set(key))
      throw py::type_error(std::string(caller) + ": unknown setting '" + key +
                           "' (the settings are config.json's keys: lr, lr_schedule, warmup_steps, batch, context, "
                           "dropout, layers, dim, heads, tokenizer, ...; and task, task_lengths, rope_base, "
                           "rope_scaling, rope_factor, ... as the programs' options; posenc, steps, seed and data are " +
                           caller + "'s own arguments)");
    j[key] = setting_json(caller, key, value);
  }
  posenc::RunConfig c;
  try {
    c = posenc::run_config_from_json(j, std::string(caller) + "'s settings");
    const auto given = [&](const std::string& option) {  // --layers: layers=
      const std::string name = python_name(std::string_view(option).substr(2));
      return settings.contains(name) || (name == "posenc" && policy_given);
    };
    options.apply(c, settings.contains("context"), data_given, given, init_source);
  } catch (const posenc::Error& e) {
    throw py::value_error(python_message(e.what()));
  }
  if (settings.contains("init") && !settings.contains("embedding_std"))
    c.embedding_std = posenc::default_embedding_std(c.init);  // as --init does
  // as --vocab-size: kept beside another tokenizer for a grid's bpe points (train refuses it alone)
  if (settings.contains("vocab_size")) c.tokenizer.vocab_size = j.at("vocab_size").get<std::size_t>();
  return c;
}

// posenc.train: the run `shakespeare train` makes with these settings (config.json's keys), through
// the same code (examples::run_train); Ctrl-C saves the step and raises KeyboardInterrupt.
py::dict train(const std::string& out, const std::optional<std::string>& policy,
               const std::optional<std::int64_t>& steps, const std::optional<std::string>& data,
               const std::optional<std::uint64_t>& seed, bool resume, std::size_t keep_checkpoints,
               const py::object& on_step, const py::object& on_eval, const py::kwargs& settings) {
  if (out.empty()) throw py::value_error("train: out must name the run's folder");
  examples::TrainOptions options;
  options.resume = resume;
  options.keep_checkpoints = keep_checkpoints;
  if (resume) {
    if (policy || data || seed || settings.size() > 0)
      throw py::value_error(
          "train: resume=True takes the run's configuration from its config.json; give only out, "
          "steps (to extend a run at a constant rate), keep_checkpoints and the callbacks");
  } else {
    posenc::RunConfig base;
    base.data = data.value_or("data/tinyshakespeare/input.txt");
    if (policy) base.posenc = *policy;
    if (steps) base.train.steps = *steps;
    if (seed) base.train.seed = *seed;
    options.run = run_settings(base, settings, "train", data.has_value(), policy.has_value(), &options.init_source);
    const std::vector<std::string> names = posenc::policy_names();
    if (std::find(names.begin(), names.end(), options.run.posenc) == names.end())
      throw py::value_error("train: unknown positional encoding '" + options.run.posenc +
                            "'; expected one of: " + posenc::name_list(names));
    options.run.tokenizer.validate();
  }
  examples::TrainHooks hooks;
  // Ctrl-C raises KeyboardInterrupt in whatever Python code runs next (a callback of ours, or the
  // check below); either way it asks the run to stop after its step, saved, and is raised again then
  bool interrupted = false;
  const auto in_python = [&interrupted](const auto& call) {
    py::gil_scoped_acquire gil;
    try {
      call();
    } catch (py::error_already_set& e) {
      if (!e.matches(PyExc_KeyboardInterrupt)) throw;
      interrupted = true;
    }
  };
  hooks.say = [in_python](const std::string& line) { in_python([&] { py::print(line); }); };
  hooks.warn = [in_python](const std::string& line) {
    in_python([&] { py::print(line, py::arg("file") = py::module_::import("sys").attr("stderr")); });
  };
  if (!on_step.is_none())
    hooks.callbacks.on_step = [&on_step, in_python](const posenc::StepReport& r) {
      in_python([&] {
        on_step(py::dict(py::arg("step") = r.step, py::arg("total") = r.total, py::arg("loss") = r.loss,
                         py::arg("lr") = r.lr, py::arg("grad_norm") = r.grad_norm,
                         py::arg("elapsed_seconds") = r.elapsed_seconds,
                         py::arg("tokens_per_second") = r.tokens_per_second));
      });
    };
  const auto eval_dict = [](const posenc::EvalRecord& r) {
    return py::dict(py::arg("step") = r.step, py::arg("train_loss") = r.train_loss, py::arg("val_loss") = r.val_loss,
                    py::arg("stage_loss") = r.stage_loss ? py::object(py::float_(*r.stage_loss)) : py::object(py::none()),
                    py::arg("skipped_steps") = r.skipped_steps, py::arg("elapsed_seconds") = r.elapsed_seconds,
                    py::arg("tokens_per_second") = r.tokens_per_second);
  };
  hooks.callbacks.on_eval = [&on_eval, &eval_dict, in_python](const posenc::EvalRecord& r) {
    in_python([&] {
      if (on_eval.is_none())
        py::print("eval step " + std::to_string(r.step) + ": train loss " + std::to_string(r.train_loss) +
                  ", val loss " + std::to_string(r.val_loss) + examples::stage_text(r) + " (estimates)");
      else
        on_eval(eval_dict(r));
    });
  };
  hooks.callbacks.should_stop = [&interrupted, in_python] {
    in_python([&] {
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();  // runs Python's handler: KeyboardInterrupt
    });
    return interrupted;
  };
  examples::TrainResult result;
  {
    py::gil_scoped_release unlocked;
    result = examples::run_train(std::move(options), out, steps.value_or(0), nullptr, hooks);
  }
  if (result.interrupted) {
    const std::string message = "interrupted at step " + std::to_string(result.interrupted->step()) + " of " +
                                std::to_string(result.interrupted->total()) +
                                "; the run is saved: posenc.train('" + result.out + "', resume=True) continues it";
    PyErr_SetString(PyExc_KeyboardInterrupt, message.c_str());
    throw py::error_already_set();
  }
  py::list records;
  for (const posenc::EvalRecord& r : result.records) records.append(eval_dict(r));
  return py::dict(py::arg("out") = result.out, py::arg("final_model") = result.final_model,
                  py::arg("records") = records,
                  py::arg("config") = py::module_::import("json").attr("loads")(posenc::to_json(result.config).dump()));
}

// What a study from Python reports: each run as it ends (on_run, or a printed line), and a stop
// asked by Ctrl-C, which examples' handler sees while the runs hold no GIL.
class PythonStudyObserver final : public posenc::StudyObserver {
 public:
  explicit PythonStudyObserver(py::object on_run) : on_run_(std::move(on_run)) {}
  void finished(std::size_t, posenc::RunEnd end, const std::string& message, std::int64_t) override {
    py::gil_scoped_acquire gil;
    const char* how = end == posenc::RunEnd::done ? "done" : end == posenc::RunEnd::stopped ? "stopped" : "failed";
    if (on_run_.is_none())
      py::print("study:", message);  // the message says how the run ended
    else
      on_run_(py::dict(py::arg("end") = how, py::arg("message") = message));
  }
  bool stop_requested() override { return examples::stop_requested(); }

 private:
  py::object on_run_;
};

// posenc.study: the runs of a design (variants × seeds × grid points), resumable in `out` as the
// study program's, then its summary (summary.json's contents).
py::dict study(const std::string& out, const std::vector<std::string>& variants,
               const std::vector<std::uint64_t>& seeds, std::int64_t steps, const std::optional<std::string>& data,
               std::size_t jobs,
               const std::map<std::string, std::vector<std::string>>& grid, const py::object& on_run,
               const py::kwargs& settings) {
  if (out.empty()) throw py::value_error("study: out must name the study's folder");
  if (jobs == 0) throw py::value_error("study: jobs must be at least 1");
  posenc::StudyDesign design;
  design.variants = variants;
  design.seeds = seeds;
  design.steps = steps;
  design.extended_steps = 0;
  posenc::RunConfig base;
  base.data = data.value_or("data/tinyshakespeare/input.txt");
  design.run = run_settings(base, settings, "study", data.has_value());
  for (const auto& [name, values] : grid) {
    std::string axis = name + "=";
    for (std::size_t i = 0; i < values.size(); ++i) axis += (i ? "," : "") + values[i];
    design.grid.push_back(posenc::parse_grid_axis(axis));
  }
  posenc::validate_design(design);
  const std::string corpus = design.run.reads_corpus() ? posenc::read_corpus(design.run.data) : std::string();
  const posenc::DirectoryLock lock(out);
  const posenc::StudyRunner runner(design, out, corpus, examples::make_model);
  std::filesystem::create_directories(runner.paths().out / "records");
  PythonStudyObserver observer(on_run);
  posenc::StudyFailures failures;
  // Ctrl-C: examples' handler while the runs train (Python's own sees nothing until they return),
  // then Python's again
  struct sigaction python_int {
  }, python_term{};
  sigaction(SIGINT, nullptr, &python_int);
  sigaction(SIGTERM, nullptr, &python_term);
  examples::stop_signal = 0;
  examples::stop_on_signals();
  std::vector<posenc::RunRecord> records;
  {
    py::gil_scoped_release unlocked;
    try {
      runner.run(runner.pending(), jobs, observer, failures);
      if (!examples::stop_requested()) records = runner.records(true, failures, jobs, examples::stop_requested);
    } catch (...) {
      sigaction(SIGINT, &python_int, nullptr);
      sigaction(SIGTERM, &python_term, nullptr);
      throw;
    }
  }
  sigaction(SIGINT, &python_int, nullptr);
  sigaction(SIGTERM, &python_term, nullptr);
  if (examples::stop_requested()) {
    PyErr_SetString(PyExc_KeyboardInterrupt, ("study interrupted: the runs in progress are saved; posenc.study('" +
                                              out + "', ...) with the same design continues them")
                                                 .c_str());
    throw py::error_already_set();
  }
  if (const auto failed = failures.list(); !failed.empty()) {
    std::string list;
    for (const std::string& f : failed) list += "\n  " + f;
    posenc::fail("study: ", failed.size(), " run(s) failed:", list);
  }
  const examples::WrittenSummary summary = examples::write_study_summary(design, records, out);
  return py::module_::import("json").attr("loads")(summary.json.dump());
}

}  // namespace

PYBIND11_MODULE(_posenc, m) {
  m.doc() = "posenc: positional encodings in small character and subword transformers, trained on the CPU";
  static py::exception<posenc::Error> error(m, "Error", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr raised) {
    try {
      if (raised) std::rethrow_exception(raised);
    } catch (const posenc::Error& e) {
      error(python_message(e.what()).c_str());
    }
  });

  m.def(
      "policies",
      [] {
        py::list list;
        posenc::for_each_policy([&]<class P>() {
          list.append(py::dict(py::arg("name") = std::string(P::name), py::arg("summary") = std::string(P::summary),
                               py::arg("rotary") = posenc::is_rotary_policy<P>));
        });
        return list;
      },
      "Every positional encoding: its name, what it is, and whether it is rotary");
  m.def(
      "model_sizes",
      [] {
        return []<class... Size>(std::tuple<Size...>*) {
          return std::vector<std::tuple<std::size_t, std::size_t, std::size_t>>{
              {Size::layers, Size::dim, Size::heads}...};
        }(static_cast<examples::ModelSizes*>(nullptr));
      },
      "The (layers, dim, heads) this build has models for");
  m.def(
      "set_num_threads",
      [](int n) {
        if (n < 1) throw py::value_error("set_num_threads: expected at least 1 thread, got " + std::to_string(n));
        posenc::set_num_threads(static_cast<std::size_t>(n));
      },
      py::arg("n"), "Fixes the kernels' thread count");
  m.def(
      "num_threads", [] { return posenc::num_threads(); }, "The kernels' thread count");
  m.def(
      "compute", [] { return to_python(examples::compute_json()); },
      "What computes here, as the programs' compute line and a run's config.json record it: the GEMM backend "
      "and kernel, the thread count");
  m.def(
      "compute_line",
      [] {
        std::string line = examples::compute_summary();
        if (const std::size_t at = line.find("--threads N"); at != std::string::npos)
          line.replace(at, std::string_view("--threads N").size(), "posenc.set_num_threads(n)");
        return line;
      },
      "The programs' compute line ('compute: onednn GEMMs (cpu_isa_avx512_core_amx), 2 threads')");
  m.def("study", &study, py::arg("out"), py::arg("variants") = posenc::published_variants,
        py::arg("seeds") = posenc::published_seeds, py::arg("steps") = 2000,
        py::arg("data") = py::none(), py::arg("jobs") = 1,
        py::arg("grid") = std::map<std::string, std::vector<std::string>>{}, py::arg("on_run") = py::none(),
        "Runs a study as the study program does (variants × seeds × the grid's points, **settings as train's, "
        "every run's: config.json's keys, task and the rotary options), resumable in `out`, and returns its summary "
        "(summary.json); Ctrl-C saves the runs in progress and raises KeyboardInterrupt");
  m.def("train", &train, py::arg("out"), py::arg("posenc") = py::none(), py::arg("steps") = py::none(),
        py::arg("data") = py::none(), py::arg("seed") = py::none(), py::arg("resume") = false,
        py::arg("keep_checkpoints") = posenc::RunDirectory::default_keep_checkpoints, py::arg("on_step") = py::none(),
        py::arg("on_eval") = py::none(),
        "Trains a model into the run folder `out` as shakespeare train does (settings: config.json's keys, e.g. "
        "lr=3e-3, lr_schedule='cosine', layers=2, dim=64, heads=4, tokenizer='bpe', vocab_size=1024, and the "
        "program's other options by name: task, task_lengths, rope_base, rope_scaling, rope_factor, init_from); "
        "resume=True continues it. Returns the run's folder, final model, evaluations and configuration");

  py::class_<Model>(m, "Model", "A checkpoint's model (posenc.load)")
      .def(py::init<const std::string&, std::size_t>(), py::arg("path"), py::arg("max_context") = 0)
      .def_property_readonly("path", &Model::path)
      .def_property_readonly("policy", [](const Model& x) { return x.info().policy; })
      .def_property_readonly("layers", [](const Model& x) { return x.info().layers; })
      .def_property_readonly("dim", [](const Model& x) { return x.info().dim; })
      .def_property_readonly("heads", [](const Model& x) { return x.info().heads; })
      .def_property_readonly("context", [](const Model& x) { return x.info().context; })
      .def_property_readonly("max_context", [](const Model& x) { return x.model().max_context(); })
      .def_property_readonly("step", [](const Model& x) { return x.info().step; })
      .def_property_readonly("vocab_size", [](const Model& x) { return x.model().vocab_size(); })
      .def_property_readonly("parameter_count", [](const Model& x) { return x.model().parameter_count(); })
      .def_property_readonly("tokenizer", [](const Model& x) { return x.info().tokenizer.describe(); })
      .def(
          "encode",
          [](const Model& x, const py::object& text) {
            const std::string bytes = as_bytes(text);
            if (const std::size_t i = x.info().tokenizer.first_unencodable(bytes); i != std::string::npos)
              throw py::value_error("encode: byte " + std::to_string(static_cast<unsigned char>(bytes[i])) +
                                    " at offset " + std::to_string(i) + " is not in the checkpoint's vocabulary");
            return as_array(x.info().tokenizer.encode(bytes));
          },
          py::arg("text"), "The text's token ids (str is encoded as UTF-8)")
      .def(
          "decode",
          [](const Model& x, const std::vector<posenc::TokenId>& ids) {
            return py::bytes(x.info().tokenizer.decode(ids));
          },
          py::arg("ids"), "The bytes token ids stand for")
      .def(
          "forward",
          [](Model& x, const py::object& ids) {
            const posenc::Tokens tokens = x.tokens(ids, "forward");
            posenc::Tensor<float, 3> logits;
            {
              py::gil_scoped_release unlocked;
              logits = x.model().logits(tokens);
            }
            std::vector<py::ssize_t> shape = {static_cast<py::ssize_t>(logits.shape(0)),
                                              static_cast<py::ssize_t>(logits.shape(1)),
                                              static_cast<py::ssize_t>(logits.shape(2))};
            py::array_t<float> out(shape);
            std::copy(logits.begin(), logits.end(), out.mutable_data());
            return py::array::ensure(ids).ndim() == 1 ? out[py::int_(0)].cast<py::array_t<float>>() : out;
          },
          py::arg("tokens"), "Logits (B, T, V) as float32 for token ids (B, T), or (T, V) for (T,)")
      .def(
          "attention",
          [](Model& x, const py::object& ids, std::int64_t layer) {
            const auto layers = static_cast<std::int64_t>(x.info().layers);
            if (layer < -layers || layer >= layers)
              throw py::index_error("attention: layer " + std::to_string(layer) + " of a model with " +
                                    std::to_string(layers) + " layers (0 to " + std::to_string(layers - 1) +
                                    ", or -1 for the last)");
            const posenc::Tokens tokens = x.tokens(ids, "attention");
            posenc::Tensor<float, 4> att;
            {
              py::gil_scoped_release unlocked;
              att = x.model().attention_probabilities(tokens, static_cast<std::size_t>(layer < 0 ? layer + layers
                                                                                                 : layer));
            }
            std::vector<py::ssize_t> shape(att.shape().begin(), att.shape().end());
            py::array_t<float> out(shape);
            std::copy(att.begin(), att.end(), out.mutable_data());
            return py::array::ensure(ids).ndim() == 1 ? out[py::int_(0)].cast<py::array_t<float>>() : out;
          },
          py::arg("tokens"), py::arg("layer") = -1,
          "Attention probabilities (B, H, T, T) of a layer (negative counts from the last) for token ids "
          "(B, T), or (H, T, T) for (T,): [b, h, i, j] the weight query i of head h gives key j, 0 for j > i")
      .def(
          "loss",
          [](Model& x, const py::object& inputs, const py::object& targets) {
            const posenc::Tokens in = x.tokens(inputs, "loss inputs"), out = x.tokens(targets, "loss targets");
            if (in.shape() != out.shape()) throw py::value_error("loss: inputs and targets differ in shape");
            py::gil_scoped_release unlocked;
            return x.model().loss(in, out);
          },
          py::arg("inputs"), py::arg("targets"), "Mean cross-entropy (nats a token) of targets after inputs")
      .def(
          "evaluate",
          [](Model& x, const std::string& data, std::size_t context, std::size_t batch) {
            const posenc::TextDataset dataset = examples::load_corpus(data, x.info().tokenizer);
            const std::size_t T = context != 0 ? context : x.info().context;
            if (T > x.model().max_context())
              throw py::value_error("evaluate: context " + std::to_string(T) + " is longer than this model takes (" +
                                    std::to_string(x.model().max_context()) + ")");
            posenc::LossResult train, val;
            {
              py::gil_scoped_release unlocked;
              train = x.model().evaluate_loss(dataset.train(), T, batch);
              val = x.model().evaluate_loss(dataset.val(), T, batch);
            }
            const double train_bytes = dataset.bytes_per_target(posenc::Split::train);
            const double val_bytes = dataset.bytes_per_target(posenc::Split::validation);
            return py::dict(py::arg("train_loss") = train.loss, py::arg("val_loss") = val.loss,
                            py::arg("train_targets") = train.targets, py::arg("val_targets") = val.targets,
                            py::arg("train_bits_per_byte") = posenc::bits_per_byte(train.loss, train_bytes),
                            py::arg("val_bits_per_byte") = posenc::bits_per_byte(val.loss, val_bytes),
                            py::arg("context") = T);
          },
          py::arg("data"), py::arg("context") = 0, py::arg("batch") = 32,
          "Full-pass train and validation loss of a corpus (a text, a folder or a token folder), as shakespeare eval")
      .def(
          "evaluate_contexts",
          [](Model& x, const std::string& data, const std::vector<std::size_t>& contexts, std::size_t stride,
             std::size_t bins) {
            const posenc::TextDataset dataset = examples::load_corpus(data, x.info().tokenizer);
            nlohmann::json rows;
            {
              py::gil_scoped_release unlocked;
              rows = examples::length_rows(x.model(), dataset, contexts, stride, bins);
            }
            return to_python(rows);
          },
          py::arg("data"), py::arg("contexts"), py::arg("stride") = 0, py::arg("bins") = 0,
          "The validation loss at each context length, in non-overlapping and sliding windows (stride 0: half "
          "the length), in nats and bits per byte, with the mean loss by position in `bins` ranges (0: none): "
          "shakespeare eval --contexts's rows; a length past max_context is a row with a note")
      .def(
          "copy_probe",
          [](Model& x, const std::string& data, const std::vector<std::size_t>& distances, std::size_t segments) {
            const posenc::TextDataset dataset = examples::load_corpus(data, x.info().tokenizer);
            nlohmann::json rows;
            {
              py::gil_scoped_release unlocked;
              rows = examples::copy_probe_rows(x.model(), dataset, distances, segments, "distance");
            }
            return to_python(rows);
          },
          py::arg("data"), py::arg("distances"), py::arg("segments") = 64,
          "The copy probe on the validation split at each distance: the loss of a segment's second copy against "
          "an unrelated control, and the drop between them (shakespeare eval --copy-probe's rows)")
      .def(
          "evaluate_task",
          [](Model& x, const std::string& task, const std::string& lengths, std::size_t examples,
             std::uint64_t seed, const std::optional<std::string>& data) {
            const posenc::TaskKind kind = task_kind("evaluate_task: ", task);
            if (examples == 0) throw py::value_error("evaluate_task: examples must be at least 1");
            const bool reads_corpus = posenc::task_info(kind).reads_corpus;
            if (reads_corpus != data.has_value())
              throw py::value_error("evaluate_task: task " + task +
                                    (reads_corpus ? " hides its key in a corpus: give data"
                                                  : " makes its own examples and reads no data"));
            posenc::TaskLengths range;
            try {
              range = posenc::parse_task_lengths(lengths);
            } catch (const posenc::Error& e) {
              throw py::value_error("evaluate_task: " + python_message(e.what()));
            }
            const posenc::Task made(kind, reads_corpus ? posenc::read_corpus(*data) : std::string());
            nlohmann::json rows;
            {
              py::gil_scoped_release unlocked;
              rows = examples::task_rows(x.model(), x.info().tokenizer, made, range, examples, seed);
            }
            return to_python(rows);
          },
          py::arg("task"), py::arg("lengths"), py::arg("examples") = 100, py::arg("seed") = 1337,
          py::arg("data") = py::none(),
          "A task's exact-match accuracy, character accuracy and answer loss at each length of `lengths` (A-B), "
          "`examples` examples a length (shakespeare eval --task's rows); passkey reads `data`")
      .def(
          "sample",
          [](Model& x, const py::object& prompt, std::size_t tokens, double temperature, std::size_t top_k,
             double top_p, std::uint64_t seed) {
            const std::string text = as_bytes(prompt);
            const posenc::Tokenizer& tokenizer = x.info().tokenizer;
            if (text.empty()) throw py::value_error("sample: the prompt is empty; give at least one character");
            if (const std::size_t i = tokenizer.first_unencodable(text); i != std::string::npos)
              throw py::value_error("sample: byte " + std::to_string(static_cast<unsigned char>(text[i])) +
                                    " of the prompt is not in the checkpoint's vocabulary");
            if (!(temperature >= 0)) throw py::value_error("sample: temperature must be ≥ 0");
            if (!(top_p > 0 && top_p <= 1)) throw py::value_error("sample: top_p must lie in (0, 1]");
            posenc::SamplingOptions options;
            options.temperature = temperature;
            options.top_k = top_k;
            options.top_p = top_p;
            options.seed = seed;
            const std::vector<posenc::TokenId> ids = tokenizer.encode(text);
            std::vector<posenc::TokenId> generated;
            {
              py::gil_scoped_release unlocked;
              generated = x.model().generate(ids, tokens, options);
            }
            return py::bytes(text + tokenizer.decode(generated));
          },
          py::arg("prompt"), py::arg("tokens") = 200, py::arg("temperature") = 0.8, py::arg("top_k") = 40,
          py::arg("top_p") = 1.0, py::arg("seed") = 1,
          "The prompt and `tokens` sampled tokens after it, as bytes (the sample command's)")
      .def(
          "parameters",
          [](py::object self) {
            const Model& x = self.cast<const Model&>();
            py::dict out;
            for (const posenc::AnyModel::NamedParameter& p : x.model().named_parameters()) {
              std::vector<py::ssize_t> shape(p.shape->begin(), p.shape->end());
              // a view into the model's one buffer, which it keeps alive; read-only, as the model
              // never changes after loading and a write would change it behind its back
              py::array_t<float> view(shape, p.values, self);
              py::detail::array_proxy(view.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
              out[py::str(*p.name)] = view;
            }
            return out;
          },
          "Every parameter by nanoGPT name: read-only float32 views of the model's buffer (no copy), "
          "each keeping the model alive")
      .def("__repr__", [](const Model& x) {
        return "<posenc.Model " + x.info().policy + " " + std::to_string(x.info().layers) + "x" +
               std::to_string(x.info().dim) + "x" + std::to_string(x.info().heads) + ", " +
               x.info().tokenizer.describe() + ", step " + std::to_string(x.info().step) + " from '" + x.path() + "'>";
      });
}
