// shakespeare: train, evaluate and sample posenc's transformers (character or subword tokens) from the command line.
//   shakespeare train   --posenc rope --steps 2000 --out runs/rope
//   shakespeare eval    --checkpoint runs/rope/model.safetensors --data data/tinyshakespeare/input.txt
//   shakespeare sample  --checkpoint runs/rope/model.safetensors --prompt "ROMEO:" --tokens 500
//   shakespeare prepare --tokenizer bpe --vocab-size 1024 --out data/shakespeare-bpe1024
// Bad input prints one line naming what was wrong and exits with status 2.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <utility>

#include <posenc/io/atomic_file.hpp>
#include <posenc/io/checkpoint.hpp>
#include <posenc/threads.hpp>
#include <posenc/train/training_run.hpp>
#include <posenc/transformer.hpp>

#include "../common/any_model.hpp"
#include "../common/compute.hpp"
#include "../common/corpus.hpp"
#include "../common/eval_rows.hpp"
#include "../common/rope_options.hpp"
#include "../common/run_options.hpp"
#include "../common/shell_quote.hpp"
#include "../common/stop_signal.hpp"
#include "../common/task_options.hpp"
#include "../common/train_run.hpp"
#include "../common/world.hpp"
#include "progress.hpp"

namespace shakespeare {

inline constexpr const char* default_data = "data/tinyshakespeare/input.txt";
inline const char* program_name = "shakespeare";  // argv[0], for the message that says how to resume

using examples::TrainOptions;

struct PrepareOptions {
  std::string data = default_data;
  posenc::TokenizerSpec tokenizer;
  std::string tokenizer_name = "char";
  std::string out;
};

struct EvalOptions {
  std::string checkpoint;
  std::string data = default_data;
  std::size_t estimate = 0;  // 0: the deterministic full pass
  std::size_t context = 0;   // 0: the checkpoint's
  std::size_t batch = 32;
  bool json = false;
  std::vector<std::size_t> contexts;  // length extrapolation: evaluate at each length
  std::size_t stride = 0;             // sliding-window stride; 0: half the length
  bool per_position = false;          // with contexts: the mean loss by position in the window
  std::size_t bins = 16;              // … in this many equal ranges of positions
  std::vector<std::size_t> copy_distances;  // the copy probe at each distance
  std::size_t copy_segments = 64;
  std::optional<posenc::TaskSpec> task;     // a task's accuracy at each length
  std::size_t task_examples = 100;
  std::uint64_t task_seed = 1337;

  // The longest sequence these options evaluate (0: none past the checkpoint's own).
  std::size_t longest_length() const {
    std::size_t n = context;
    for (const std::size_t L : contexts) n = std::max(n, L);
    for (const std::size_t d : copy_distances) n = std::max(n, 2 * d);
    if (task) n = std::max(n, posenc::task_context(*task));
    return n;
  }
};

struct SampleOptions {
  std::string checkpoint;
  std::string prompt = "ROMEO:";
  std::size_t tokens = 500;
  std::size_t samples = 1;
  posenc::SamplingOptions sampling;
};

// Trains (or resumes, or fine-tunes) as examples::run_train does, printing its progress; Ctrl-C
// saves the step and prints the command that continues the run (status 130).
int train(TrainOptions options, const std::string& out_given, std::int64_t steps_given,
          posenc::ProcessGroup* group) {
  const bool root = group == nullptr || group->is_root();
  Progress progress(stdout, /*redraw=*/group == nullptr);
  examples::TrainHooks hooks;
  hooks.say = [](const std::string& line) { std::printf("%s\n", line.c_str()); };
  hooks.warn = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  if (root) {  // rank 0 reports for the group
    hooks.callbacks.on_step = [&](const posenc::StepReport& r) { progress.step(r); };
    hooks.callbacks.on_eval = [&](const posenc::EvalRecord& r) { progress.eval(r); };
  }
  hooks.callbacks.should_stop = examples::stop_requested;
  examples::stop_on_signals();
  const examples::TrainResult result = examples::run_train(std::move(options), out_given, steps_given, group, hooks);
  if (!root) return result.interrupted ? 130 : 0;
  progress.line_break();
  if (result.interrupted) {
    // a fixed thread count again, or the resumed run does not repeat the uninterrupted one bit for bit
    const std::string threads =
        posenc::adaptive_thread_ceiling() ? "" : " --threads " + std::to_string(posenc::num_threads());
    std::fprintf(stderr,
                 "interrupted at step %lld of %lld; the run is saved: continue it with\n"
                 "  %s train --resume --out %s%s\n",
                 static_cast<long long>(result.interrupted->step()),
                 static_cast<long long>(result.interrupted->total()), examples::shell_quote(program_name).c_str(),
                 examples::shell_quote(result.out).c_str(), threads.c_str());
    return 130;
  }
  const posenc::EvalRecord& last = result.records.back();
  // a model of other tokens than characters also in bits per byte, the scale any two compare on
  char bits[64] = "";
  if (result.val_bytes_per_target && result.config.tokenizer.kind == posenc::TokenizerKind::bpe)
    std::snprintf(bits, sizeof bits, " = %.4f bits per byte",
                  posenc::bits_per_byte(last.val_loss, *result.val_bytes_per_target));
  std::printf("done: step %lld, train loss %.4f, val loss %.4f%s (estimates), %.0f tokens/s, %s\n",
              static_cast<long long>(last.step), last.train_loss, last.val_loss, bits, last.tokens_per_second,
              format_duration(last.elapsed_seconds).c_str());
  std::printf("final checkpoint: %s\n", result.final_model.c_str());
  return 0;
}

// A checkpoint's model, as its metadata describes it, with the checkpoint's parameters.
struct LoadedCheckpoint {
  posenc::CheckpointInfo info;
  posenc::Tokenizer tokenizer;
  std::unique_ptr<posenc::AnyModel> model;
};

// The RoPE options given on the command line replace the checkpoint's settings; the model accepts
// sequences of `longest` tokens if the checkpoint's did not (a learned table still ends where it ends).
LoadedCheckpoint load_checkpoint(const std::string& path, const examples::RopeOptions& rope, std::size_t longest = 0) {
  const posenc::SafetensorsFile file = posenc::read_safetensors(path);
  posenc::CheckpointInfo info = posenc::read_checkpoint_info(file);
  if (rope.any_given() && !posenc::rotary_policy(info.policy))
    posenc::fail("--rope-base and --rope-scaling apply to rotary policies (",
                 posenc::name_list(posenc::rotary_policy_names()), "); this checkpoint's is ", info.policy);
  info.rope = rope.apply(info.rope);
  posenc::Tokenizer tokenizer = info.tokenizer;
  auto model = examples::make_model({info.policy, info.layers, info.dim, info.heads},
                                    info.model_config(std::max(longest, info.max_context)));
  model->load_parameters(file);
  return {std::move(info), std::move(tokenizer), std::move(model)};
}

std::string describe_rope(const posenc::CheckpointInfo& info) {
  return info.rope.describe(posenc::rotary_base(info.policy), info.context);
}

// The validation loss at several lengths, in both protocols; a length a model cannot take (past
// a learned table) is reported as not applicable, never clipped.
void evaluate_lengths(posenc::AnyModel& model, const posenc::CheckpointInfo& info, const posenc::TextDataset& data,
                      const EvalOptions& o) {
  const double val_bytes = data.bytes_per_target(posenc::Split::validation);
  if (!o.json)
    std::printf(
        "%s\n%s (%s, step %lld), trained context %zu, validation split (%zu targets, %.3f bytes each: bits per "
        "byte = loss / %.4f)\n%8s  %16s  %22s\n",
        examples::compute_summary().c_str(), o.checkpoint.c_str(), info.policy.c_str(),
        static_cast<long long>(info.step), info.context, data.val().size() - 1, val_bytes,
        val_bytes * std::log(2.0), "length", "non-overlapping", "sliding window");
  if (!o.json && info.rope.changes_anything()) std::printf("rope: %s\n", describe_rope(info).c_str());
  const nlohmann::json rows = examples::length_rows(
      model, data, o.contexts, o.stride, o.per_position ? o.bins : 0, [&](const nlohmann::json& row) {
        if (o.json) return;
        const std::size_t L = row["length"].get<std::size_t>();
        if (row.contains("note"))
          std::printf("%8zu  %s\n", L, row["note"].get<std::string>().c_str());
        else
          std::printf("%8zu  %16.4f  %13.4f (stride %zu)\n", L, row["non_overlapping"].get<double>(),
                      row["sliding"].get<double>(), row["stride"].get<std::size_t>());
        if (row.contains("per_position"))
          for (const nlohmann::json& bin : row["per_position"]["bins"])
            std::printf("          positions %5zu-%-5zu %8.4f\n", bin["first"].get<std::size_t>(),
                        bin["last"].get<std::size_t>(), bin["loss"].get<double>());
      });
  if (o.json) {
    nlohmann::json result = {{"checkpoint", o.checkpoint}, {"posenc", info.policy}, {"step", info.step},
                             {"trained_context", info.context}, {"split", "val"}, {"lengths", rows},
                             {"compute", examples::compute_json()}};
    if (info.rope.changes_anything()) result["rope_scaling"] = posenc::to_json(info.rope);
    std::printf("%s\n", result.dump(2).c_str());
  }
}

// The copy probe (posenc::copy_probe) on the validation split at each distance.
void probe_copies(posenc::AnyModel& model, const posenc::CheckpointInfo& info, const posenc::TextDataset& data,
                  const EvalOptions& o) {
  examples::check_copy_probe_distances(model, data, o.copy_distances, o.copy_segments, "--copy-probe");
  if (!o.json)
    std::printf("%s (%s, step %lld), trained context %zu: the copy probe, %zu segments of the validation split\n"
                "%8s  %18s  %18s  %18s\n",
                o.checkpoint.c_str(), info.policy.c_str(), static_cast<long long>(info.step), info.context,
                o.copy_segments, "distance", "control", "second copy", "drop");
  const nlohmann::json rows = examples::copy_probe_rows(
      model, data, o.copy_distances, o.copy_segments, "--copy-probe", [&](const nlohmann::json& row) {
        if (o.json) return;
        const std::size_t n = row["distance"].get<std::size_t>();
        if (row.contains("note"))
          std::printf("%8zu  %s\n", n, row["note"].get<std::string>().c_str());
        else
          std::printf("%8zu  %9.4f ± %6.4f  %9.4f ± %6.4f  %9.4f ± %6.4f\n", n, row["control_loss"].get<double>(),
                      row["control_sd"].get<double>(), row["second_copy_loss"].get<double>(),
                      row["second_copy_sd"].get<double>(), row["drop"].get<double>(), row["drop_sd"].get<double>());
      });
  if (o.json) {
    nlohmann::json result = {{"checkpoint", o.checkpoint}, {"posenc", info.policy}, {"step", info.step},
                             {"trained_context", info.context}, {"split", "val"}, {"copy_probe", rows}};
    if (info.rope.changes_anything()) result["rope_scaling"] = posenc::to_json(info.rope);
    std::printf("%s\n", result.dump(2).c_str());
  }
}

// A task's exact-match accuracy and answer loss at each length (posenc::evaluate_task); a length
// past what the model accepts (a learned table's rows) is reported as not applicable.
void evaluate_task(posenc::AnyModel& model, const LoadedCheckpoint& checkpoint, const EvalOptions& o) {
  const posenc::TaskSpec& spec = *o.task;
  const std::string text = spec.kind == posenc::TaskKind::passkey ? posenc::read_corpus(o.data) : std::string();
  const posenc::Task task(spec.kind, text);
  task.check(spec.lengths);  // before the header (task_rows checks again)
  task.check_vocabulary(checkpoint.tokenizer);
  const posenc::CheckpointInfo& info = checkpoint.info;
  if (!o.json)
    std::printf("%s\n%s (%s, step %lld), trained context %zu: task %s, %zu examples a length (seed %llu)\n"
                "%8s  %10s  %9s  %15s  %11s\n",
                examples::compute_summary().c_str(), o.checkpoint.c_str(), info.policy.c_str(),
                static_cast<long long>(info.step), info.context, posenc::to_string(spec).c_str(), o.task_examples,
                static_cast<unsigned long long>(o.task_seed), "length", "characters", "accuracy",
                "char accuracy", "answer loss");
  const nlohmann::json rows = examples::task_rows(
      model, checkpoint.tokenizer, task, spec.lengths, o.task_examples, o.task_seed, [&](const nlohmann::json& row) {
        if (o.json) return;
        const std::size_t length = row["length"].get<std::size_t>(), chars = row["characters"].get<std::size_t>();
        if (row.contains("note"))
          std::printf("%8zu  %10zu  %s\n", length, chars, row["note"].get<std::string>().c_str());
        else
          std::printf("%8zu  %10zu  %9.3f  %15.3f  %11.4f\n", length, chars, row["accuracy"].get<double>(),
                      row["char_accuracy"].get<double>(), row["answer_loss"].get<double>());
      });
  if (o.json) {
    nlohmann::json result = {{"checkpoint", o.checkpoint}, {"posenc", info.policy}, {"step", info.step},
                             {"trained_context", info.context}, {"task", posenc::task_name(spec.kind)},
                             {"lengths", posenc::to_string(spec.lengths)}, {"examples", o.task_examples},
                             {"seed", o.task_seed}, {"scores", rows}, {"compute", examples::compute_json()}};
    if (spec.kind == posenc::TaskKind::passkey) result["data"] = o.data;
    if (info.rope.changes_anything()) result["rope_scaling"] = posenc::to_json(info.rope);
    std::printf("%s\n", result.dump(2).c_str());
  }
}

// Tokenizes a corpus once into a token folder that train and eval read as --data (nanoGPT's
// prepare.py): BPE is trained once, and every run on the folder has the same tokens.
int prepare(const PrepareOptions& o) {
  if (std::filesystem::exists(o.out) && !std::filesystem::is_empty(o.out))
    posenc::fail("--out '", o.out, "' already exists and is not empty; choose another folder");
  const auto start = std::chrono::steady_clock::now();
  const std::string text = posenc::read_corpus(o.data);
  std::optional<posenc::TextDataset> data;
  try {
    data.emplace(text, o.tokenizer);
  } catch (const posenc::Error& e) {
    posenc::fail("data file '", o.data, "': ", e.what());
  }
  posenc::save_token_folder(o.out, *data, posenc::corpus_digest(text), o.data);
  std::printf("%s: %zu bytes in tokens of %s: %zu to train, %zu to validate (%.3f bytes a token), in %.2f s -> %s\n",
              o.data.c_str(), text.size(), data->tokenizer().describe().c_str(), data->train().size(),
              data->val().size(), data->bytes_per_target(posenc::Split::validation),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), o.out.c_str());
  return 0;
}

int evaluate(const EvalOptions& o, const examples::RopeOptions& rope) {
  const LoadedCheckpoint checkpoint = load_checkpoint(o.checkpoint, rope, o.longest_length());
  const posenc::CheckpointInfo& info = checkpoint.info;
  posenc::AnyModel& model = *checkpoint.model;
  if (o.task) {
    evaluate_task(model, checkpoint, o);
    return 0;
  }
  const posenc::TextDataset data = examples::load_corpus(o.data, checkpoint.tokenizer);
  if (!o.copy_distances.empty()) {
    probe_copies(model, info, data, o);
    return 0;
  }
  if (!o.contexts.empty()) {
    evaluate_lengths(model, info, data, o);
    return 0;
  }
  const std::size_t context = o.context != 0 ? o.context : info.context;
  if (context > model.max_context())
    posenc::fail("--context ", context, " is longer than this ", info.policy, " model accepts (", model.max_context(),
                 model.context_bounded_by_position_table() ? ", the rows of its position table)" : ")");
  nlohmann::json result = {{"checkpoint", o.checkpoint}, {"data", o.data}, {"posenc", info.policy},
                           {"step", info.step},          {"context", context}};
  if (info.rope.changes_anything()) result["rope_scaling"] = posenc::to_json(info.rope);
  double train_loss, val_loss;
  if (o.estimate > 0) {
    train_loss = model.estimate_loss(data.train(), o.batch, context, o.estimate, 1337, "training split");
    val_loss = model.estimate_loss(data.val(), o.batch, context, o.estimate, 1338, "validation split");
    result["protocol"] = "estimate";
    result["batches"] = o.estimate;
  } else {
    const posenc::LossResult tr = model.evaluate_loss(data.train(), context, o.batch);
    const posenc::LossResult va = model.evaluate_loss(data.val(), context, o.batch);
    train_loss = tr.loss;
    val_loss = va.loss;
    result["protocol"] = "non-overlapping";
    result["train_targets"] = tr.targets;
    result["val_targets"] = va.targets;
  }
  result["train_loss"] = train_loss;
  result["val_loss"] = val_loss;
  // bits per byte: the scale on which char, byte and BPE models compare
  const double train_bytes = data.bytes_per_target(posenc::Split::train);
  const double val_bytes = data.bytes_per_target(posenc::Split::validation);
  result["tokenizer"] = posenc::tokenizer_name(checkpoint.tokenizer.kind());
  result["vocab_size"] = checkpoint.tokenizer.vocab_size();
  result["bytes_per_target"] = {{"train", train_bytes}, {"validation", val_bytes}};
  result["train_bits_per_byte"] = posenc::bits_per_byte(train_loss, train_bytes);
  result["val_bits_per_byte"] = posenc::bits_per_byte(val_loss, val_bytes);
  result["compute"] = examples::compute_json();
  if (o.json) {
    std::printf("%s\n", result.dump(2).c_str());
  } else {
    std::printf("%s\n", examples::compute_summary().c_str());
    if (info.rope.changes_anything()) std::printf("rope: %s\n", describe_rope(info).c_str());
    std::printf("%s (%s, step %lld), context %zu, %s\n", o.checkpoint.c_str(), info.policy.c_str(),
                static_cast<long long>(info.step), context,
                o.estimate > 0 ? ("estimate over " + std::to_string(o.estimate) + " random batches").c_str()
                               : "every target once, non-overlapping windows");
    std::printf("tokens: %s, %.3f bytes a token in validation\n", checkpoint.tokenizer.describe().c_str(), val_bytes);
    std::printf("train loss %.4f (%.4f bits per byte)\nval loss   %.4f (%.4f bits per byte)\n", train_loss,
                posenc::bits_per_byte(train_loss, train_bytes), val_loss, posenc::bits_per_byte(val_loss, val_bytes));
  }
  return 0;
}

// The byte at `i` as a reader can see it: "'Z' (byte 90)", or for a byte of a UTF-8 character the
// whole character and its bytes, "'é' (bytes 0xc3 0xa9)", never half a character.
std::string describe_byte(const std::string& text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  if (byte(i) < 0x80) return "the symbol '" + text.substr(i, 1) + "' (byte " + std::to_string(byte(i)) + ")";
  std::size_t start = i;
  while (start > 0 && i - start < 3 && (byte(start) & 0xC0) == 0x80) --start;  // back to the lead byte
  const unsigned char lead = byte(start);
  const std::size_t length = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 0;
  bool valid = length > 0 && start + length <= text.size() && i < start + length;
  for (std::size_t k = start + 1; valid && k < start + length; ++k) valid = (byte(k) & 0xC0) == 0x80;
  const auto hex = [&](std::size_t from, std::size_t to) {
    std::string out;
    char buf[8];
    for (std::size_t k = from; k < to; ++k) {
      std::snprintf(buf, sizeof buf, "%s0x%02x", out.empty() ? "" : " ", byte(k));
      out += buf;
    }
    return out;
  };
  if (!valid) return "the byte " + hex(i, i + 1) + " (not part of a UTF-8 character)";
  return "the character '" + text.substr(start, length) + "' (bytes " + hex(start, start + length) + ")";
}

int sample(const SampleOptions& o, const examples::RopeOptions& rope) {
  const LoadedCheckpoint checkpoint = load_checkpoint(o.checkpoint, rope);
  const posenc::Tokenizer& tokenizer = checkpoint.tokenizer;
  if (const std::size_t i = tokenizer.first_unencodable(o.prompt); i != std::string::npos)
    posenc::fail("--prompt: ", describe_byte(o.prompt, i), " at position ", i,
                 " is not in the checkpoint's vocabulary");
  const std::vector<posenc::TokenId> prompt = tokenizer.encode(o.prompt);
  if (o.sampling.window > checkpoint.model->max_context())
    posenc::fail("--window ", o.sampling.window, " exceeds this ", checkpoint.info.policy, " model's maximum context (",
                 checkpoint.model->max_context(), ")");
  for (std::size_t i = 0; i < o.samples; ++i) {
    // sample i is what a single sample with --seed seed + i gives
    posenc::SamplingOptions options = o.sampling;
    options.seed += i;
    const auto generated = checkpoint.model->generate(prompt, o.tokens, options);
    if (o.samples > 1)
      std::printf("%s---------- sample %zu of %zu (seed %llu) ----------\n", i > 0 ? "\n" : "", i + 1, o.samples,
                  static_cast<unsigned long long>(options.seed));
    // every byte, NUL included (printf's %s would stop at the first)
    const std::string text = o.prompt + tokenizer.decode(generated) + "\n";
    std::fwrite(text.data(), 1, text.size(), stdout);
  }
  return 0;
}

}  // namespace shakespeare

int main(int argc, char** argv) {
  using namespace shakespeare;
  using namespace examples;
  const examples::World world(argc, argv);  // MPI under mpirun (data-parallel train)
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // redirected too, lines in order with stderr's
  program_name = argv[0];
  CLI::App app{"Train, evaluate and sample small transformers (character or subword tokens) with posenc's positional "
               "encodings."};
  app.require_subcommand(1);
  app.fallthrough();  // --threads may also follow the subcommand
  int threads = 0;
  app.add_option("--threads", threads,
                 "Threads for the kernels, fixed (default: every free core, fewer while other processes busy "
                 "them; or $POSENC_NUM_THREADS)")
      ->check(whole_number_in(1, 4096));
  app.add_flag_callback(
      "--list-posenc",
      [] {
        posenc::for_each_policy([]<class P>() {
          std::printf("%-18.*s %.*s%s\n", static_cast<int>(P::name.size()), P::name.data(),
                      static_cast<int>(P::summary.size()), P::summary.data(),
                      posenc::is_rotary_policy<P> ? " [rotary: takes --rope-base and --rope-scaling]" : "");
        });
        throw CLI::Success();
      },
      "List the positional encodings (name, then what it is; the rotary ones, which take the RoPE options, "
      "marked) and exit");

  TrainOptions t;
  t.run.data = default_data;
  std::string out;
  std::int64_t steps_given = 0;
  auto* train_cmd = app.add_subcommand("train", "Train a model and write its run directory");
  train_cmd->add_option("--posenc", t.run.posenc, "Positional encoding (--list-posenc lists them)")
      ->check(CLI::IsMember(posenc::policy_names()))->capture_default_str();
  train_cmd->add_option("--steps", steps_given, "Training steps [2000]")->check(whole_number_in(1, most_steps));
  train_cmd->add_option("--seed", t.run.train.seed, "Seed of the initialisation and the batch sampler")
      ->check(whole_number_in(0, UINT64_MAX))
      ->capture_default_str();
  examples::RunOptions run_options(*train_cmd, t.run);
  examples::RopeOptions train_rope(*train_cmd);
  examples::TaskOptions train_task(*train_cmd, "Train on a synthetic task instead of --data's text");
  train_task.add_curriculum(*train_cmd);
  train_cmd->add_option(
      "--out", out, "Run directory [runs/<posenc>-seed<seed>, with --init-from runs/<posenc>-seed<seed>-context<L>]");
  train_cmd->add_flag("--resume", t.resume, "Continue the run in --out from its latest checkpoint");
  train_cmd->add_option("--init-from", t.run.init_from.checkpoint,
                        "Fine-tune: start from this checkpoint's parameters (its policy, size and vocabulary; a "
                        "learned table interpolated to --context) with a new optimizer state, in a new run");
  train_cmd->add_option("--keep-checkpoints", t.keep_checkpoints,
                        "Checkpoints kept: those of the newest N evaluations and of the best validation estimate "
                        "(0: all)")
      ->check(whole_number_in(0, std::uint64_t{1} << 20))
      ->capture_default_str();

  EvalOptions e;
  PrepareOptions p;
  auto* prepare_cmd = app.add_subcommand(
      "prepare", "Tokenize a corpus once into a token folder (meta.json, train.bin, val.bin) for --data");
  prepare_cmd->add_option("--data", p.data, "The text: a file, or a folder of files joined in path order")
      ->capture_default_str();
  prepare_cmd->add_option("--tokenizer", p.tokenizer_name, "char, byte or bpe (as train's)")
      ->check(CLI::IsMember(posenc::tokenizer_kinds.names()))
      ->capture_default_str();
  prepare_cmd->add_option("--vocab-size", p.tokenizer.vocab_size, "bpe's vocabulary (as train's)")
      ->check(whole_number_in(257, std::uint64_t{1} << 20));
  prepare_cmd->add_option("--out", p.out, "The token folder to write (new or empty)")->required();
  auto* eval_cmd = app.add_subcommand("eval", "Train and validation loss of a checkpoint");
  eval_cmd->add_option("--checkpoint", e.checkpoint, "A .safetensors checkpoint")->required();
  eval_cmd->add_option("--data", e.data, "Text to evaluate on (split 90/10 as in training)")->capture_default_str();
  eval_cmd->add_option("--estimate", e.estimate, "Average over N random batches instead of the full pass")
      ->check(whole_number_in(1, std::uint64_t{1} << 30));
  eval_cmd->add_option("--context", e.context, "Window length [the checkpoint's context]")
      ->check(whole_number_in(1, longest_context));
  CLI::Option* eval_batch = eval_cmd->add_option("--batch", e.batch, "Windows per forward pass of the --context "
                                                "evaluation (--contexts and --copy-probe size their own passes)")
                                 ->check(whole_number_in(1, longest_context))
                                 ->capture_default_str();
  eval_cmd->add_flag("--json", e.json, "Print JSON");
  examples::RopeOptions eval_rope(*eval_cmd);
  add_number_list(*eval_cmd, "--contexts", e.contexts, 1, longest_context,
                  "Length extrapolation: the validation loss at each of these lengths, non-overlapping and "
                  "sliding-window (e.g. 128,256,512,1024)")
      ->excludes("--estimate")
      ->excludes("--context");
  eval_cmd->add_option("--stride", e.stride, "Sliding-window stride [half the length]")
      ->check(positive_integer)
      ->needs("--contexts");
  eval_cmd->add_flag("--per-position", e.per_position,
                     "With --contexts: the mean loss by position in the window, in --bins ranges")
      ->needs("--contexts");
  eval_cmd->add_option("--bins", e.bins, "Ranges of positions --per-position reports")
      ->check(whole_number_in(1, longest_context))
      ->needs("--per-position")
      ->capture_default_str();
  add_number_list(*eval_cmd, "--copy-probe", e.copy_distances, 2, longest_context,
                  "The long-range copy probe: a validation segment of n characters after itself, its loss against "
                  "that after an unrelated segment, at each distance n (e.g. 64,128,256,512)")
      ->excludes("--estimate")
      ->excludes("--context")
      ->excludes("--contexts");
  eval_batch->excludes("--contexts")->excludes("--copy-probe");
  eval_cmd->add_option("--copy-segments", e.copy_segments, "Segments the copy probe averages over")
      ->check(whole_number_in(1, 1 << 20))
      ->needs("--copy-probe")
      ->capture_default_str();
  examples::TaskOptions eval_task(*eval_cmd, "Exact-match accuracy and answer loss at each of --task-lengths");
  eval_cmd->add_option("--task-examples", e.task_examples, "Examples of each length the task accuracy counts")
      ->check(whole_number_in(1, 1 << 20))
      ->needs("--task")
      ->capture_default_str();
  eval_cmd->add_option("--task-seed", e.task_seed, "Seed of the task's examples (each length's its own stream)")
      ->check(whole_number_in(0, UINT64_MAX))
      ->needs("--task")
      ->capture_default_str();
  for (const char* other : {"--estimate", "--context", "--contexts", "--copy-probe", "--batch"})
    eval_cmd->get_option("--task")->excludes(other);

  SampleOptions s;
  bool no_cache = false;
  auto* sample_cmd = app.add_subcommand("sample", "Generate text from a checkpoint");
  sample_cmd->add_option("--checkpoint", s.checkpoint, "A .safetensors checkpoint")->required();
  sample_cmd->add_option("--prompt", s.prompt, "Text to continue")->capture_default_str();
  sample_cmd->add_option("--tokens", s.tokens, "Characters to generate")
      ->check(positive_integer)
      ->capture_default_str();
  sample_cmd->add_option("--temperature", s.sampling.temperature, "0 picks the most likely character")
      ->check(non_negative_number)
      ->capture_default_str();
  sample_cmd->add_option("--top-k", s.sampling.top_k, "Sample among the k most likely (0: all)")
      ->check(whole_number_in(0, std::uint64_t{1} << 31))
      ->capture_default_str();
  sample_cmd->add_option("--top-p", s.sampling.top_p,
                         "Sample among the fewest most likely characters whose probability reaches p (1: all)")
      ->check(number_in(1e-9, 1, "a number in (0, 1]"))
      ->capture_default_str();
  sample_cmd->add_option("--samples", s.samples, "Independent samples to print, the i-th with --seed + i")
      ->check(whole_number_in(1, 10000))
      ->capture_default_str();
  sample_cmd->add_option("--seed", s.sampling.seed, "Sampling seed (of the first sample)")
      ->check(whole_number_in(0, UINT64_MAX))
      ->capture_default_str();
  sample_cmd->add_option("--window", s.sampling.window,
                         "The most characters each prediction sees (0: the model's maximum context); past it a "
                         "relative policy's cache rolls, learned and sinusoidal re-encode the last half")
      ->check(whole_number_in(0, UINT64_MAX))
      ->capture_default_str();
  sample_cmd->add_flag("--no-cache", no_cache, "Recompute the whole window for every token (slow; the reference)");
  examples::RopeOptions sample_rope(*sample_cmd);

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& done) {  // --help, --help-all or --list-posenc
    return app.exit(done);
  } catch (const CLI::ParseError& error) {
    app.exit(error);
    return 2;
  }
  try {
    world.check();
    if (threads > 0) posenc::set_num_threads(threads);
    else posenc::set_adaptive_num_threads(world.default_threads());
    if (world.size() > 1 && !*train_cmd)
      posenc::fail("only train runs over several MPI ranks; start ",
                   *eval_cmd      ? "eval"
                   : *prepare_cmd ? "prepare"
                                  : "sample",
                   " without mpirun");
    if (*train_cmd) {
      if (t.resume) {
        std::vector<std::string> fixed = run_options.names();
        fixed.insert(fixed.end(), train_rope.names().begin(), train_rope.names().end());
        fixed.insert(fixed.end(),
                     {"--posenc", "--seed", "--init-from", "--task", "--task-lengths", "--task-curriculum"});
        std::string given;  // every one given, so that one correction is enough
        for (const std::string& name : fixed)
          if (train_cmd->count(name) > 0) given += (given.empty() ? "" : ", ") + name;
        if (!given.empty())
          posenc::fail("--resume takes the run's configuration from its config.json; ", given,
                       " cannot be given with it (only --out, --steps, --keep-checkpoints and --threads)");
        if (out.empty()) posenc::fail("--resume needs --out, the run directory to continue");
      }
      if (steps_given > 0) t.run.train.steps = steps_given;
      t.tokenizer_given = train_cmd->count("--tokenizer") > 0 || train_cmd->count("--vocab-size") > 0;
      run_options.apply();
      train_task.apply(t.run, *train_cmd);
      if (!t.run.init_from.checkpoint.empty())
        examples::take_from_source(t, [&](const std::string& option) { return train_cmd->count(option) > 0; });
      t.run.tokenizer.validate();  // before anything is written
      t.run.rope = train_rope.apply(t.run.rope);
      if (!t.run.init_from.checkpoint.empty())
        t.run.rope = posenc::rope_for_fine_tuning(t.run.rope, t.run.init_from.context);
      if ((train_rope.any_given() || t.run.rope.changes_anything()) && !posenc::rotary_policy(t.run.posenc))
        posenc::fail("--rope-base and --rope-scaling apply to rotary policies (",
                     posenc::name_list(posenc::rotary_policy_names()), "), not to ", t.run.posenc);
      return train(std::move(t), out, steps_given, world.group().get());
    }
    if (*prepare_cmd) {
      p.tokenizer.kind = posenc::parse_tokenizer_kind(p.tokenizer_name);
      p.tokenizer.validate();
      return prepare(p);
    }
    if (*eval_cmd) {
      e.task = eval_task.spec();
      return evaluate(e, eval_rope);
    }
    s.sampling.use_cache = !no_cache;
    if (s.sampling.temperature == 0)  // greedy: these would be recorded nowhere and change nothing
      for (const char* option : {"--top-k", "--top-p", "--samples", "--seed"})
        if (sample_cmd->count(option) > 0)
          posenc::fail(option, ": --temperature 0 always picks the most likely character (every sample the same)");
    return sample(s, sample_rope);
  } catch (const std::exception& error) {
    return examples::fail_and_exit(world, "shakespeare", error);
  }
}
