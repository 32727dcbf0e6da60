// run_train: the train command's run (new, resumed or fine-tuned) with its checks, for shakespeare and Python.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <posenc/transformer.hpp>
#include <string>
#include <utility>
#include <vector>

#include "any_model.hpp"
#include "compute.hpp"
#include "model_sizes.hpp"

namespace examples {

struct TrainOptions {
  posenc::RunConfig run;  // written to the run directory's config.json, read back by --resume
  std::size_t keep_checkpoints = posenc::RunDirectory::default_keep_checkpoints;  // not part of the run's numbers
  bool resume = false;
  bool tokenizer_given = false;                        // --tokenizer or --vocab-size: a token folder's must be the same
  std::optional<posenc::SafetensorsFile> init_source;  // --init-from's file, read once (take_from_source)
};

// What a run says as it starts (the compute line, the line that names the run, a warning about
// its data), and its training callbacks (progress, evaluations, the stop check).
struct TrainHooks {
  std::function<void(const std::string&)> say = [](const std::string&) {};
  std::function<void(const std::string&)> warn = [](const std::string&) {};
  posenc::TrainingCallbacks callbacks;
};

struct TrainResult {
  std::string out;                                 // the run directory
  posenc::RunConfig config;                        // as config.json records it
  std::vector<posenc::EvalRecord> records;         // every evaluation; empty when a stop was asked
  std::optional<posenc::Interrupted> interrupted;  // when a stop was asked: the step saved, of how many
  std::optional<double> val_bytes_per_target;      // a corpus's (bits per byte); none for a task
  std::string final_model;                         // its model.safetensors
};

// --init-from: the run's policy, size, weight tying and RoPE settings are the source checkpoint's
// (an option `given`, by its command-line name, that names another is refused); its step and
// context are recorded, and the file is kept for run_train to start the model from.
inline void take_from_source(TrainOptions& options, const std::function<bool(const std::string&)>& given) {
  posenc::RunConfig& run = options.run;
  const posenc::SafetensorsFile& file = options.init_source.emplace(posenc::read_safetensors(run.init_from.checkpoint));
  const posenc::CheckpointInfo info = posenc::read_checkpoint_info(file);
  auto agree = [&](const char* option, const auto& value, const auto& source) {
    if (given(option) && value != source)
      posenc::fail(option, " ", value, " differs from the --init-from checkpoint's ", source,
                   "; leave it out to take the checkpoint's");
  };
  agree("--posenc", run.posenc, info.policy);
  agree("--layers", run.layers, info.layers);
  agree("--dim", run.dim, info.dim);
  agree("--heads", run.heads, info.heads);
  if ((given("--tokenizer") || given("--vocab-size")) && run.tokenizer != info.tokenizer.spec())
    posenc::fail("--tokenizer ", posenc::to_string(run.tokenizer), " differs from the --init-from checkpoint's ",
                 info.tokenizer.describe(), "; leave it out to take the checkpoint's");
  for (const char* option : {"--init", "--embedding-std"})
    if (given(option)) posenc::fail(option, ": --init-from starts every tensor from the checkpoint; leave it out");
  if (given("--tie-weights") && !info.tie_weights)
    posenc::fail("--tie-weights: the --init-from checkpoint has its own lm_head.weight");
  run.posenc = info.policy;
  run.layers = info.layers;
  run.dim = info.dim;
  run.heads = info.heads;
  run.tokenizer = info.tokenizer.spec();
  run.tie_weights = info.tie_weights;
  run.rope = info.rope;
  run.init_from.step = info.step;
  run.init_from.context = info.context;
}

// With a process group (mpirun -np N), training is data-parallel: rank 0 reads and writes the run
// directory and reports; every rank reads the corpus. A bad setting, corpus or run folder throws
// posenc::Error before anything is written; a stop asked through the callbacks returns the step
// it saved (interrupted).
inline TrainResult run_train(TrainOptions options, const std::string& out_given, std::int64_t steps_given,
                             posenc::ProcessGroup* group, const TrainHooks& hooks) {
  const bool root = group == nullptr || group->is_root();
  posenc::RunConfig& config = options.run;
  // a fine-tune's default folder is not its source's (which used this default if it used any)
  const std::string out =
      out_given.empty()
          ? "runs/" + config.posenc + "-seed" + std::to_string(config.train.seed) +
                (config.init_from.checkpoint.empty() ? "" : "-context" + std::to_string(config.train.context))
          : out_given;
  const posenc::RunDirectory run(out, options.keep_checkpoints);
  // Another process's run in the folder is refused, rather than the two writing one folder (or a
  // resume running beside the run it continues): locked before its files are read or checked, or,
  // for a new folder, once it is created, after the checks (a refused run writes nothing).
  if (root && std::filesystem::exists(run.dir())) run.lock();
  const auto refuse_existing_run = [&] {
    if (std::filesystem::exists(run.optimizer()) || std::filesystem::exists(run.log()))
      posenc::fail("--out '", out, "' already holds a run; pass --resume to continue it or choose another --out");
  };
  if (root && options.resume) {
    std::optional<posenc::RunConfig> recorded;
    try {
      recorded = posenc::recorded_run_config(run);
    } catch (const posenc::Error& e) {
      posenc::fail("--resume: ", e.what());
    }
    if (!recorded)
      posenc::fail("--resume: '", out, "' holds no ", posenc::run_config_path(run).filename().string(),
                   "; is this a run directory?");
    config = *recorded;
    if (steps_given > 0 && steps_given != config.train.steps && config.train.schedule.depends_on_length())
      posenc::fail("--steps ", steps_given, ": the run in '", out, "' decays its learning rate ('",
                   posenc::schedule_kind_name(config.train.schedule.kind), "') over its ", config.train.steps,
                   " steps, so it cannot be extended or shortened; start a new run");
    if (steps_given > 0) config.train.steps = steps_given;  // extending a run is allowed
    if (std::filesystem::exists(run.log()))
      if (const auto log = posenc::read_eval_log(run.log()); !log.empty() && log.back().step > config.train.steps)
        posenc::fail("--steps ", config.train.steps, ": the run in '", out, "' is already at step ", log.back().step,
                     "; give more steps to continue it");
  } else if (root) {
    refuse_existing_run();
  }
  if (group != nullptr) {  // rank 0's configuration (from config.json when resuming) for every rank
    std::string text = root ? posenc::to_json(config).dump() : std::string();
    group->broadcast(text);
    config = posenc::run_config_from_json(nlohmann::json::parse(text), "rank 0's configuration");
  }
  // before anything is written; after the broadcast, since a resuming rank but 0 knows only the
  // default configuration until then
  config.train.schedule.check(config.train.steps);
  check_model_size(config.shape());
  if (config.precision == posenc::Precision::bf16)
    if (const auto reason = posenc::bf16_unsupported_reason()) posenc::fail("--precision bf16: ", *reason);
  const bool reads_corpus = config.reads_corpus();
  // a token folder (shakespeare prepare) stands for the text it was made from, in its own tokens
  std::optional<posenc::TokenFolder> folder;
  if (reads_corpus && posenc::is_token_folder(config.data)) {
    if (config.task)
      posenc::fail("task ", posenc::to_string(*config.task), " reads text; --data '", config.data,
                   "' is a token folder: give the text it was made from");
    folder = posenc::read_token_folder(config.data);
    const posenc::TokenizerSpec tokens = folder->data.tokenizer().spec();
    if (options.tokenizer_given && config.tokenizer != tokens)
      posenc::fail("--tokenizer ", posenc::to_string(config.tokenizer), ": token folder '", config.data,
                   "' holds tokens of ", folder->data.tokenizer().describe(),
                   "; leave --tokenizer out to train on them");
    if (!options.resume && config.init_from.checkpoint.empty()) config.tokenizer = tokens;
  }
  const std::string text = reads_corpus && !folder ? posenc::read_corpus(config.data) : std::string();
  const std::string digest = folder         ? folder->corpus_digest
                             : reads_corpus ? posenc::corpus_digest(text)
                                            : std::string();
  if (options.resume && !config.data_digest.empty() && config.data_digest != digest)
    posenc::fail("--resume: the corpus '", config.data, "' changed since the run started (", config.data_digest,
                 ", now ", digest, "); the run cannot continue on other data");
  config.data_digest = digest;
  if (!reads_corpus) config.data.clear();
  // a resumed run takes its tokenizer from its saved state's checkpoint, a fine-tuning run from its
  // source, so every embedding row means the same token; a new run makes its own (bpe: trained here)
  std::optional<posenc::SafetensorsFile>& source_file = options.init_source;
  std::optional<posenc::CheckpointInfo> source;
  std::optional<posenc::Tokenizer> saved_tokenizer;
  if (const auto saved = options.resume ? run.saved_step() : std::nullopt) {
    saved_tokenizer = posenc::read_checkpoint_info(posenc::read_safetensors(run.checkpoint(*saved))).tokenizer;
  } else if (!config.init_from.checkpoint.empty()) {
    if (!source_file) source_file = posenc::read_safetensors(config.init_from.checkpoint);  // other ranks
    source = posenc::read_checkpoint_info(*source_file);
    saved_tokenizer = source->tokenizer;
  }
  std::unique_ptr<posenc::TrainingData> training_data;
  try {
    if (folder) {
      if (saved_tokenizer && !(*saved_tokenizer == folder->data.tokenizer()))
        posenc::fail("it holds tokens of ", folder->data.tokenizer().describe(), ", not of ",
                     saved_tokenizer->describe(), " as the checkpoint the run continues");
      if (config.tokenizer != folder->data.tokenizer().spec())
        posenc::fail("it holds tokens of ", folder->data.tokenizer().describe(), ", not of the run's ",
                     posenc::to_string(config.tokenizer));
      training_data = std::make_unique<posenc::TextDataset>(std::move(folder->data));
    } else {
      training_data = posenc::make_training_data(config, text, saved_tokenizer);
    }
  } catch (const posenc::Error& e) {
    if (!reads_corpus) throw;
    posenc::fail("data file '", config.data, "': ", e.what());
  }
  const posenc::TrainingData& data = *training_data;
  if (const std::size_t control = posenc::control_byte_count(text); root && control > 0)
    hooks.warn("warning: data file '" + config.data + "' does not look like text: " + std::to_string(control) +
               " of its " + std::to_string(text.size()) +
               " bytes are control bytes such as NUL; posenc models any bytes, but a character model of a binary "
               "file is rarely what was meant");
  posenc::check_training_memory(config, data.vocab_size());
  if (const auto* corpus = dynamic_cast<const posenc::TextDataset*>(&data))
    if (corpus->train().size() < config.train.context + 1 || corpus->val().size() < config.train.context + 1)
      posenc::fail("data file '", config.data, "' is too short: its training split has ", corpus->train().size(),
                   " and its validation split ", corpus->val().size(),
                   " tokens; each needs at least context + 1 = ", config.train.context + 1);
  if (const auto* task = dynamic_cast<const posenc::TaskData*>(&data); task && task->context() > config.train.context)
    posenc::fail("--context ", config.train.context, ": task ", posenc::to_string(*config.task),
                 " has examples of up to ", task->context(), " inputs; leave --context out to train on all of them");
  bool saved = false;  // a state to continue from
  if (root) {
    run.lock();                                  // creates the folder
    if (!options.resume) refuse_existing_run();  // a run that began in it since the check above
    // the machine of this session beside the configuration; not read back on resume
    saved = posenc::start_or_resume(run, config, {{"compute", compute_json()}});
    hooks.say(compute_summary());
  }

  const auto model = make_model(config.shape(), config.model_config(data.vocab_size()));
  if (source) model->initialize_from(*source_file, *source);  // a resumed run's state replaces it
  const std::string from = config.init_from.checkpoint.empty()
                               ? ""
                               : ", from " + config.init_from.checkpoint + " (step " +
                                     std::to_string(config.init_from.step) + ", context " +
                                     std::to_string(config.init_from.context) + ")";
  const std::string on_task =
      (config.task ? " on task " + posenc::to_string(*config.task) : "") +
      (config.tokenizer != posenc::TokenizerSpec{} ? ", tokens " + data.tokenizer().describe() : "");
  // a resume with no state saved yet (its first save never finished) starts from step 0: say so
  const bool from_start = options.resume && !saved;
  if (root)
    hooks.say(std::string(!options.resume ? "training"
                          : from_start    ? "resuming (no state saved yet: from step 0)"
                                          : "resuming") +
              " " + config.posenc + on_task + ": " + std::to_string(model->parameter_count()) + " parameters, " +
              std::to_string(config.layers) + " layers, dim " + std::to_string(config.dim) + ", " +
              std::to_string(config.heads) + " heads, context " + std::to_string(config.train.context) + ", " +
              std::to_string(config.train.steps) + " steps" +
              (group != nullptr ? ", data-parallel over " + std::to_string(group->size()) + " ranks" : "") + from +
              " -> " + out);
  TrainResult result;
  result.out = out;
  result.config = config;
  result.final_model = run.final_model();
  if (const auto* corpus = dynamic_cast<const posenc::TextDataset*>(&data))
    result.val_bytes_per_target = corpus->bytes_per_target(posenc::Split::validation);
  try {
    result.records = model->train(data, config.train, run, options.resume, hooks.callbacks, group);
  } catch (const posenc::Interrupted& stopped) {
    result.interrupted = stopped;
  }
  return result;
}
}  // namespace examples
