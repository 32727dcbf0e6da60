// RunOptions: the command-line options of a RunConfig that `shakespeare train` and `study` share, and their checks.
#pragma once

#include <CLI/CLI.hpp>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <posenc/lists.hpp>
#include <posenc/train/run_config.hpp>

#include "model_sizes.hpp"

namespace examples {

// A whole number in [min, max], parsed without wrapping or clamping: "-1" for a seed and
// "18446744073709551616" for a step count are errors that name the range, not huge numbers.
inline CLI::Validator whole_number_in(std::uint64_t min, std::uint64_t max) {
  return CLI::Validator(
      [min, max](std::string& text) -> std::string {
        std::uint64_t value = 0;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (text.empty() || error != std::errc() || end != text.data() + text.size() || value < min || value > max)
          return "must be a whole number in [" + std::to_string(min) + ", " + std::to_string(max) + "], got '" + text +
                 "'";
        return {};
      },
      "[" + std::to_string(min) + ", " + std::to_string(max) + "]");
}
inline const std::uint64_t most_steps = std::uint64_t{1} << 40;
inline const std::uint64_t longest_context = std::uint64_t{1} << 20;  // also the most windows per batch
inline const CLI::Validator positive_integer =
    whole_number_in(1, std::uint64_t{1} << 40);  // counts with no tighter bound

// An option taking a comma-separated list of whole numbers in [min, max] into `numbers`, split
// by posenc::split_list: "128,,256" is an error, where CLI11's delimiter drops the empty item.
inline CLI::Option* add_number_list(CLI::App& app, const std::string& name, std::vector<std::size_t>& numbers,
                                    std::uint64_t min, std::uint64_t max, const std::string& description) {
  return app.add_option_function<std::string>(
      name,
      [&numbers, name, each = whole_number_in(min, max)](const std::string& text) {
        std::vector<std::string> items;
        try {
          items = posenc::split_list(text, name);
        } catch (const posenc::Error& e) {
          throw CLI::ValidationError(e.what());
        }
        if (items.empty()) throw CLI::ValidationError(name, "a list of one number or more, got ''");
        numbers.clear();
        for (std::string& item : items) {
          if (const std::string problem = each(item); !problem.empty()) throw CLI::ValidationError(name, problem);
          numbers.push_back(std::stoull(item));
        }
      },
      description);
}

// A finite number in [min, max] (strtod's syntax).
inline CLI::Validator number_in(double min, double max, std::string name) {
  return CLI::Validator(
      [min, max, name](std::string& text) -> std::string {
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        if (text.empty() || *end != '\0' || !(value >= min && value <= max))
          return "must be " + name + ", got '" + text + "'";
        return {};
      },
      name);
}
inline const CLI::Validator non_negative_number = number_in(0, 1e300, "a number ≥ 0");
inline const CLI::Validator positive_number = number_in(1e-300, 1e300, "a number > 0");
inline const CLI::Validator unit_interval = number_in(0, 1, "a number in [0, 1]");

// Adds the options to `app`, writing into `run`; apply() finishes what parsing cannot (the
// clipping norm is present only when given). names() lists them all, for --resume to refuse.
class RunOptions {
 public:
  RunOptions(CLI::App& app, posenc::RunConfig& run) : app_(app), run_(run) {
    posenc::TrainConfig& t = run.train;
    add(app.add_option("--batch", t.batch, "Windows per batch (per micro-batch with --grad-accum)")
            ->check(whole_number_in(1, longest_context)));
    add(app.add_option("--context", t.context, "Tokens per window")->check(whole_number_in(1, longest_context)));
    add(app.add_option("--lr", t.lr, "AdamW's peak learning rate (--lr-schedule shapes it)")
            ->check(non_negative_number));
    add(app.add_option("--lr-schedule", schedule_,
                       "constant, or after --warmup-steps: cosine or linear decay to --min-lr-fraction × lr, or wsd "
                       "(warm-up, stable, then the 1 − √r cool-down over the last --decay-fraction of the steps)")
            ->check(CLI::IsMember(posenc::schedule_kinds.names())));
    add(app.add_option("--warmup-steps", t.schedule.warmup_steps, "Steps of linear warm-up to --lr")
            ->check(whole_number_in(0, most_steps)));
    add(app.add_option("--min-lr-fraction", t.schedule.min_lr_fraction,
                       "Where cosine, linear and wsd end, as a fraction of --lr")
            ->check(unit_interval));
    add(app.add_option("--decay-fraction", t.schedule.decay_fraction, "The share of the steps wsd decays over")
            ->check(number_in(1e-9, 1, "a number in (0, 1]")));
    add(app.add_option("--weight-decay", t.weight_decay, "AdamW's decoupled weight decay")->check(non_negative_number));
    add(app.add_option("--decay-on", decay_on_,
                       "all parameters (PyTorch's AdamW on model.parameters()), or matrices only (nanoGPT: not "
                       "biases, layer norms or an encoding's scalars)")
            ->check(CLI::IsMember(posenc::weight_decay_scopes.names())),
        true, "weight_decay_scope");
    add(app.add_option("--beta1", t.beta1, "AdamW's beta1")->check(number_in(0, 0.999999999, "a number in [0, 1)")));
    add(app.add_option("--beta2", t.beta2, "AdamW's beta2")->check(number_in(0, 0.999999999, "a number in [0, 1)")));
    add(app.add_option("--adam-eps", t.eps, "AdamW's epsilon")->check(positive_number), true, "eps");
    add(app.add_option("--grad-clip", grad_clip_,
                       "Clip the gradients' global L2 norm to this, as torch.nn.utils.clip_grad_norm_ (nanoGPT: 1) "
                       "[none]")
            ->check(positive_number),
        false);
    add(app.add_option("--grad-accum", t.grad_accum,
                       "Micro-batches of --batch windows per optimizer step (equal to one batch of their sum)")
            ->check(whole_number_in(1, 1 << 20)));
    add(app.add_option("--eval-every", t.eval_every, "Steps between loss estimates and checkpoints")
            ->check(whole_number_in(1, most_steps)));
    add(app.add_option("--eval-iters", t.eval_iters, "Batches per loss estimate")
            ->check(whole_number_in(1, std::uint64_t{1} << 30)));
    add(app.add_option("--embedding-std", run.embedding_std,
                       "Std of the token and learned position tables' normal start [0.02; 1, nn.Embedding's, with "
                       "--init pytorch]")
            ->check(positive_number),
        false);
    add(app.add_option("--init", init_,
                       "How tensors start: normal (every weight N(0, 0.02), biases 0: the published study's) or "
                       "pytorch (each PyTorch module's default: nn.Linear's uniform weights and biases, nn.Embedding "
                       "N(0, 1); Kerple's and FIRE's as their authors' code)")
            ->check(CLI::IsMember(posenc::init_schemes.names())));
    add(app.add_option("--dropout", run.dropout,
                       "nanoGPT's dropout probability on the embeddings, the attention probabilities and both "
                       "residual branches, in training only")
            ->check(number_in(0, 0.999, "a number in [0, 1)")));
    add(app.add_option("--random-positions", run.random_positions,
                       "Randomized positions (Ruoss et al. 2023): train and evaluate every sequence at an ordered "
                       "random subset of positions 0 … N−1, N at least --context and the longest sequence tested "
                       "(a learned table gets N rows) [0: positions 0, 1, 2, …]")
            ->check(whole_number_in(0, longest_context)));
    add(app.add_flag("--tie-weights", run.tie_weights,
                     "lm_head.weight is the token embedding, as nanoGPT (vocabulary × dim fewer parameters)"),
        false);
    add(app.add_option("--precision", precision_,
                       "The GEMMs' operands: fp32, or bf16 with float accumulation (needs oneDNN and a CPU with "
                       "AVX512_BF16 or AMX; weights, optimizer and losses stay fp32)")
            ->check(CLI::IsMember(posenc::precisions.names())));
    add(app.add_option("--data", run.data,
                       "Training text: a file of any bytes, a folder (its files, hidden ones left out, "
                       "joined in path order), or several of those joined with ':' (a.txt:b.txt)"));
    add(app.add_option("--tokenizer", tokenizer_,
                       "The tokens: char (the corpus's distinct bytes, one token each), byte (all 256 bytes) or "
                       "bpe (byte-level BPE trained on the training part of the corpus to --vocab-size tokens)")
            ->check(CLI::IsMember(posenc::tokenizer_kinds.names())));
    add(app.add_option("--vocab-size", run.tokenizer.vocab_size,
                       "bpe's vocabulary: the 256 bytes and --vocab-size − 256 merges")
            ->check(whole_number_in(257, std::uint64_t{1} << 20)),
        false);
    add(app.add_option("--layers", run.layers, "Transformer blocks (--layers, --dim and --heads: one of the sizes "
                                               "the program is " + model_sizes_help() + ")"));
    add(app.add_option("--dim", run.dim, "Model width"));
    add(app.add_option("--heads", run.heads, "Attention heads"));
  }

  void apply() {
    run_.train.schedule.kind = posenc::parse_schedule_kind(schedule_);
    run_.train.weight_decay_scope = posenc::parse_weight_decay_scope(decay_on_);
    run_.init = posenc::parse_init_scheme(init_);
    run_.precision = posenc::parse_precision(precision_);
    run_.tokenizer.kind = posenc::parse_tokenizer_kind(tokenizer_);
    if (app_.count("--grad-clip") > 0) run_.train.max_grad_norm = grad_clip_;
    if (app_.count("--embedding-std") == 0) run_.embedding_std = posenc::default_embedding_std(run_.init);
  }
  const std::vector<std::string>& names() const { return names_; }
  // Each option and the config.json key it sets (--adam-eps: eps).
  const std::vector<std::pair<std::string, std::string>>& config_keys() const { return keys_; }
  // The option that sets the config.json key `key` (lr → --lr, weight_decay_scope → --decay-on),
  // if one of these does.
  std::optional<std::string> option_for(std::string_view key) const {
    for (const auto& [option, config_key] : keys_)
      if (config_key == key) return option;
    return std::nullopt;
  }

 private:
  // show_default false where the value would mislead in --help (a default that depends on another
  // option, or none; the description says it). config_key: the option's key in config.json, when
  // it is not the option's name with underscores (--lr-schedule: lr_schedule).
  void add(CLI::Option* option, bool show_default = true, std::string_view config_key = {}) {
    if (show_default) option->capture_default_str();
    names_.push_back(option->get_name());
    std::string key(config_key);
    if (key.empty()) {
      key = names_.back().substr(2);
      std::replace(key.begin(), key.end(), '-', '_');
    }
    keys_.emplace_back(names_.back(), std::move(key));
  }
  CLI::App& app_;
  posenc::RunConfig& run_;
  // the enumerations as named on the command line, parsed by apply()
  std::string schedule_ = std::string(posenc::schedule_kind_name(run_.train.schedule.kind));
  std::string decay_on_ = std::string(posenc::weight_decay_scope_name(run_.train.weight_decay_scope));
  std::string init_ = std::string(posenc::init_scheme_name(run_.init));
  std::string precision_ = posenc::precision_name(run_.precision);
  std::string tokenizer_ = std::string(posenc::tokenizer_name(run_.tokenizer.kind));
  double grad_clip_ = 1.0;
  std::vector<std::string> names_;
  std::vector<std::pair<std::string, std::string>> keys_;  // option → its config.json key
};

}  // namespace examples
