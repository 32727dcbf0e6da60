// RunConfig: everything that determines a training run's numbers, and its JSON, which every program reads and writes.
#pragma once

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "posenc/config.hpp"
#include "posenc/data/dataset.hpp"
#include "posenc/data/tasks.hpp"
#include "posenc/io/checkpoint.hpp"
#include "posenc/kernels/precision.hpp"
#include "posenc/model/aliases.hpp"
#include "posenc/model/char_transformer.hpp"
#include "posenc/model/model_sizes.hpp"
#include "posenc/parameters.hpp"
#include "posenc/train/train_config.hpp"
#include "posenc/train/trainer.hpp"

namespace posenc {

// A short fingerprint of a corpus (FNV-1a, 64 bits, and the size): a run made on other data is
// never mistaken for one made on this.
inline std::string corpus_digest(std::string_view text) {
  std::uint64_t h = 1469598103934665603ULL;
  for (const unsigned char c : text) h = (h ^ c) * 1099511628211ULL;
  char buf[64];
  std::snprintf(buf, sizeof buf, "fnv1a64:%016llx:%zu", static_cast<unsigned long long>(h), text.size());
  return buf;
}

// Where a fine-tuning run started: the checkpoint, its step and the context it was trained at.
struct InitFrom {
  std::string checkpoint;  // empty: the run starts from ModelConfig's initialisation
  std::int64_t step = 0;
  std::size_t context = 0;
  bool operator==(const InitFrom&) const = default;
};

struct RunConfig {
  std::string posenc = "rope";
  std::size_t layers = study_layers, dim = study_dim, heads = study_heads;
  TrainConfig train;  // steps, batch, context, learning rate, weight decay, evaluations, seed
  double embedding_std = init_std;        // ModelConfig::embedding_std
  InitScheme init = InitScheme::normal;   // ModelConfig::init
  bool tie_weights = false;               // ModelConfig::tie_weights
  double dropout = 0;                     // ModelConfig::dropout
  Precision precision = Precision::fp32;  // ModelConfig::precision
  RopeScaling rope = {};                  // ModelConfig::rope
  std::size_t random_positions = 0;       // ModelConfig::position_range
  InitFrom init_from = {};                // initialize_from_checkpoint's source, for fine-tuning
  std::string data;                       // the corpus's path (a task's: passkey's text, or none)
  std::string data_digest;                // corpus_digest() of its bytes; empty when not known
  std::optional<TaskSpec> task;           // none: the corpus's windows; a task: its examples
  TokenizerSpec tokenizer = {};           // how the corpus becomes tokens (a task: char or byte)

  ModelShape shape() const { return {posenc, layers, dim, heads}; }
  // Whether the run reads `data`: a corpus's windows, or a task that hides its answers in text.
  bool reads_corpus() const { return !task || task_info(task->kind).reads_corpus; }
  // The model it trains; the seed is the run's, as the batch sampler's is.
  ModelConfig model_config(std::size_t vocab_size) const {
    return ModelConfig{.vocab_size = vocab_size, .context = train.context, .seed = train.seed,
                       .embedding_std = embedding_std, .init = init, .tie_weights = tie_weights,
                       .dropout = dropout, .precision = precision, .rope = rope,
                       .position_range = random_positions};
  }
  // Whether two configurations give the same numbers: every field but the corpus's path, so a
  // corpus that moved is the same corpus (its digest says so).
  bool same_run(const RunConfig& other) const {
    RunConfig a = *this, b = other;
    a.data.clear();
    b.data.clear();
    return a == b;
  }
  bool operator==(const RunConfig&) const = default;
  // Whether this configuration continues the run `recorded` (a run folder's): the same run, for
  // more or fewer steps where the schedule does not depend on the length (resume --steps extends a
  // constant rate's run), and with a corpus fingerprint the record did not hold yet.
  bool continues(const RunConfig& recorded) const {
    RunConfig then = recorded;
    if (then.data_digest.empty()) then.data_digest = data_digest;
    if (!train.schedule.depends_on_length() && !then.train.schedule.depends_on_length()) then.train.steps = train.steps;
    return same_run(then);
  }
  // The settings in which `other` is another run than this, as "key: this's → other's" joined by
  // "; " (config.json's keys, e.g. "lr: 0.001 → 0.003"), for an error that names them.
  std::string differences(const RunConfig& other) const;

  // About how many bytes training takes: the batch's logits and tokens, and one chunk of
  // sequences' saved activations (ModelConfig::chunk, 8), where attention's (heads, T, T)
  // probabilities grow with the square of the context (bf16 keeps its linear layers' rounded
  // inputs, 7·D bfloat16 numbers a row and layer, instead of the GELU's 4·D float outputs, and
  // rounds the GELU's gradient into 4·D more, one row for all layers). In double, so absurd sizes
  // cannot wrap.
  double training_bytes(std::size_t vocab_size) const {
    const double B = static_cast<double>(train.batch), T = static_cast<double>(train.context);
    const double V = static_cast<double>(vocab_size), D = static_cast<double>(dim);
    const double L = static_cast<double>(layers), H = static_cast<double>(heads);
    const double chunk = std::min(B, 8.0);
    const bool bf16 = precision == Precision::bf16;
    const double per_layer = 16 * D + H * T + (bf16 ? 3.5 * D - 4 * D : 0);
    const double floats =
        B * T * V + chunk * T * (L * per_layer + (L + 1) * D + 3 * V + 6 * D + (bf16 ? 2 * D : 0));
    // the batch's tokens (inputs, targets and a copy: 3 × 4 bytes), and 16 bytes a token more: the
    // peak memory grew by 18.1 KB a window where this had 17.4 (the study's model, context 64,
    // batch 8 against 8192, 2026-12-05)
    return 4 * floats + 3 * 4 * B * (T + 1) + 16 * B * T;
  }
};

// The bytes this process may still allocate: what the kernel reports available (MemAvailable: free
// memory and the caches it can drop), less than that when an address-space limit (ulimit -v)
// leaves less; the physical memory when /proc is not there to ask.
inline double allocatable_bytes() {
  const double page = static_cast<double>(sysconf(_SC_PAGE_SIZE));
  double available = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * page;
  std::ifstream meminfo("/proc/meminfo");
  for (std::string key; meminfo >> key;) {
    double kib = 0;
    if (key == "MemAvailable:" && meminfo >> kib) {
      available = std::min(available, kib * 1024);
      break;
    }
    meminfo.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  rlimit limit{};
  if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    double mapped = 0;  // the address space already taken: /proc/self/statm's first field, in pages
    std::ifstream("/proc/self/statm") >> mapped;
    available = std::min(available, std::max(0.0, static_cast<double>(limit.rlim_cur) - mapped * page));
  }
  return available;
}

// Throws posenc::Error when training `config` would need more memory than this process can get
// (allocatable_bytes), naming the sizes that ask for it, so that a typo in --batch or --context
// fails before anything is written instead of as an allocation failure deep inside.
inline void check_training_memory(const RunConfig& config, std::size_t vocab_size) {
  const double needed = config.training_bytes(vocab_size);
  const double available = allocatable_bytes();
  const double gib = double(1 << 30);
  if (available > 0 && needed > available)
    fail("batch ", config.train.batch, " × context ", config.train.context, " (", config.layers, " layers, dim ",
         config.dim, ", ", config.heads, " heads) needs about ", std::ceil(10 * needed / gib) / 10,
         " GiB to train; this machine has ", std::floor(10 * available / gib) / 10,
         " GiB of memory available to it: lower --batch or --context");
}

// The data a run trains on: its task's examples (passkey's hidden in `text`; the other tasks take
// none: "") or the windows of the corpus `text`, in `tokenizer` when one is given (a fine-tune
// keeps its source's, a resumed run its saved state's), else in the one config.tokenizer makes.
inline std::unique_ptr<TrainingData> make_training_data(const RunConfig& config, const std::string& text,
                                                        const std::optional<Tokenizer>& tokenizer = {}) {
  if (tokenizer && tokenizer->spec() != config.tokenizer)
    fail("the run's tokenizer is ", to_string(config.tokenizer), " but the checkpoint it continues has ",
         tokenizer->describe());
  if (config.task) {
    config.tokenizer.validate();
    if (config.tokenizer.kind == TokenizerKind::bpe)
      fail("task ", task_name(config.task->kind), " scores characters: train it with --tokenizer char or byte");
    const std::optional<Tokenizer> bytes =
        config.tokenizer.kind == TokenizerKind::byte ? std::optional<Tokenizer>(Tokenizer()) : std::nullopt;
    check_curriculum_steps(*config.task, config.train.steps);
    return std::make_unique<TaskData>(Task(config.task->kind, text), config.task->lengths,
                                      tokenizer ? tokenizer : bytes, config.task->curriculum);
  }
  return tokenizer ? std::make_unique<TextDataset>(text, *tokenizer)
                   : std::make_unique<TextDataset>(text, config.tokenizer);
}

inline nlohmann::json to_json(const RunConfig& c) {
  nlohmann::json j = to_json(c.train);
  j.update({{"posenc", c.posenc},
            {"layers", c.layers},
            {"dim", c.dim},
            {"heads", c.heads},
            {"embedding_std", c.embedding_std},
            {"init", init_scheme_name(c.init)},
            {"tie_weights", c.tie_weights},
            {"dropout", c.dropout},
            {"precision", precision_name(c.precision)},
            {"data", c.data},
            {"data_digest", c.data_digest}});
  if (c.rope.changes_anything()) j["rope"] = to_json(c.rope);  // absent: the default, as before it existed
  if (c.random_positions != 0) j["random_positions"] = c.random_positions;  // likewise
  if (!c.init_from.checkpoint.empty())
    j["init_from"] = {{"checkpoint", c.init_from.checkpoint}, {"step", c.init_from.step},
                      {"context", c.init_from.context}};
  if (c.task) {
    j["task"] = {{"name", task_name(c.task->kind)}, {"lengths", to_string(c.task->lengths)}};
    if (!c.task->curriculum.empty()) j["task"]["curriculum"] = to_string(c.task->curriculum);  // absent: none
  }
  if (c.tokenizer.kind != TokenizerKind::character) j["tokenizer"] = tokenizer_name(c.tokenizer.kind);  // absent: char
  if (c.tokenizer.kind == TokenizerKind::bpe) j["vocab_size"] = c.tokenizer.vocab_size;
  return j;
}

// to_json with every scalar key, those it writes only when set (random_positions) included: the
// keys a grid may set, and what it tells its points' runs apart by.
inline nlohmann::json complete_json(const RunConfig& c) {
  nlohmann::json j = to_json(c);
  j["random_positions"] = c.random_positions;
  j["tokenizer"] = tokenizer_name(c.tokenizer.kind);
  j["vocab_size"] = c.tokenizer.vocab_size;
  return j;
}

inline std::string RunConfig::differences(const RunConfig& other) const {
  RunConfig a = *this, b = other;
  a.data.clear();  // as same_run: the path may differ, the digest names the corpus
  b.data.clear();
  const nlohmann::json from = to_json(a), to = to_json(b);
  std::string text;
  for (const nlohmann::json& change : nlohmann::json::diff(from, to)) {  // RFC 6902 operations
    const nlohmann::json::json_pointer at(change.at("path").get<std::string>());
    std::string key = at.to_string().substr(1);
    std::replace(key.begin(), key.end(), '/', '.');
    const auto shown = [&at](const nlohmann::json& j) { return j.contains(at) ? j.at(at).dump() : "(none)"; };
    text += (text.empty() ? "" : "; ") + key + ": " + shown(from) + " → " + shown(to);
  }
  return text;
}

// Reads what to_json wrote, and what earlier versions wrote: a key added since (embedding_std,
// precision, data_digest, init, tie_weights, dropout, rope, random_positions, init_from, task, task's
// curriculum, tokenizer, vocab_size and TrainConfig's, see
// train_config_from_json)
// takes its default when missing, which is what those runs used; study records kept the corpus's digest under "data".
// Anything else missing or mistyped is an error naming `where`.
inline RunConfig run_config_from_json(const nlohmann::json& j, std::string_view where) {
  try {
    RunConfig c;
    c.posenc = j.at("posenc").get<std::string>();
    c.layers = j.at("layers").get<std::size_t>();
    c.dim = j.at("dim").get<std::size_t>();
    c.heads = j.at("heads").get<std::size_t>();
    c.train = train_config_from_json(j);
    c.embedding_std = j.value("embedding_std", init_std);
    c.init = parse_init_scheme(j.value("init", std::string(init_scheme_name(InitScheme::normal))));
    c.tie_weights = j.value("tie_weights", false);
    c.dropout = j.value("dropout", 0.0);
    c.precision = parse_precision(j.value("precision", std::string("fp32")));
    c.data = j.at("data").get<std::string>();
    c.data_digest = j.value("data_digest", std::string());
    c.random_positions = j.value("random_positions", std::size_t{0});
    if (j.contains("rope")) c.rope = rope_scaling_from_json(j.at("rope"), std::string(where) + ": rope");
    if (j.contains("init_from")) {
      const nlohmann::json& from = j.at("init_from");
      c.init_from = {from.at("checkpoint").get<std::string>(), from.at("step").get<std::int64_t>(),
                     from.at("context").get<std::size_t>()};
    }
    if (j.contains("task")) {
      const nlohmann::json& task = j.at("task");
      c.task = TaskSpec{parse_task_kind(task.at("name").get<std::string>()),
                        parse_task_lengths(task.at("lengths").get<std::string>()),
                        parse_task_curriculum(task.value("curriculum", std::string()))};
      check_curriculum(*c.task);
    }
    // vocab_size is bpe's: a grid point of another tokenizer keeps the study's --vocab-size unused
    c.tokenizer.kind = parse_tokenizer_kind(j.value("tokenizer", std::string("char")));
    if (c.tokenizer.kind == TokenizerKind::bpe) c.tokenizer.vocab_size = j.value("vocab_size", std::size_t{0});
    c.tokenizer.validate();
    if (c.data_digest.empty() && c.data.starts_with("fnv1a64:")) c.data_digest = std::exchange(c.data, "");
    return c;
  } catch (const nlohmann::json::exception& e) {
    fail(where, " is not a run configuration: ", e.what());
  } catch (const Error& e) {
    fail(where, " is not a run configuration: ", e.what());
  }
}

}  // namespace posenc
