// Task, TaskData: tasks that need context (copy, reverse, recall, passkey, addition, sort) as seeded batches.
#pragma once

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "posenc/config.hpp"
#include "posenc/data/batches.hpp"
#include "posenc/data/char_tokenizer.hpp"
#include "posenc/data/tokenizer.hpp"
#include "posenc/random.hpp"
#include "posenc/tensor.hpp"

namespace posenc {

enum class TaskKind { copy, reverse, associative_recall, passkey, addition, sort };

struct TaskInfo {
  TaskKind kind;
  std::string_view name;
  std::string_view summary;
  std::string_view length;  // what an example's length counts
  bool reads_corpus;        // whether its examples hold text of a corpus (the others make their own)
};

// Every task once, in TaskKind's order (checked below): names, help texts and parsing come from here.
inline constexpr std::array task_infos{
    TaskInfo{TaskKind::copy, "copy", "a random string of a-z, '|', the string again", "characters of the string",
             false},
    TaskInfo{TaskKind::reverse, "reverse", "a random string of a-z, '|', the string reversed",
             "characters of the string", false},
    TaskInfo{TaskKind::associative_recall, "associative-recall",
             "key-value pairs (two letters, a digit), '|', then up to 4 of the keys, each answered by its value "
             "(multi-query, as Zoology's MQAR)",
             "key-value pairs", false},
    TaskInfo{TaskKind::passkey, "passkey",
             "a 5-digit pass key hidden at a random depth of corpus text, then the question; answer the key "
             "(LongLoRA's and llama.cpp's passkey test)",
             "characters of corpus text around the key", true},
    TaskInfo{TaskKind::addition, "addition",
             "two n-digit numbers with their digits reversed, 'a+b=', then their n+1-digit sum reversed",
             "digits of each number", false},
    TaskInfo{TaskKind::sort, "sort",
             "a random string of a-z, '|', its letters in alphabetical order (the sorting task of Kazemnejad et "
             "al. and Deletang et al.)",
             "characters of the string", false},
};
static_assert(task_infos.size() == static_cast<std::size_t>(TaskKind::sort) + 1,
              "task_infos: every TaskKind needs its row");
static_assert(
    [] {
      for (std::size_t i = 0; i < task_infos.size(); ++i)
        if (static_cast<std::size_t>(task_infos[i].kind) != i) return false;
      return true;
    }(),
    "task_infos: rows in TaskKind's order");

inline const TaskInfo& task_info(TaskKind kind) { return task_infos[static_cast<std::size_t>(kind)]; }
inline std::string_view task_name(TaskKind kind) { return task_info(kind).name; }

inline std::vector<std::string> task_names() {
  std::vector<std::string> names;
  for (const TaskInfo& info : task_infos) names.emplace_back(info.name);
  return names;
}

inline TaskKind parse_task_kind(std::string_view name) {
  std::string known;
  for (const TaskInfo& info : task_infos) {
    if (info.name == name) return info.kind;
    known += (known.empty() ? "" : ", ") + std::string(info.name);
  }
  fail("unknown task '", name, "'; expected one of ", known);
}

// The lengths an example may have, both included; each task says what its length counts.
struct TaskLengths {
  std::size_t min = 1, max = 16;
  bool operator==(const TaskLengths&) const = default;
  bool contains(std::size_t n) const { return n >= min && n <= max; }
};

inline std::string to_string(const TaskLengths& lengths) {
  return std::to_string(lengths.min) + "-" + std::to_string(lengths.max);
}

// "A-B" (A ≤ B) or "N" (A = B = N), whole numbers from 1.
inline TaskLengths parse_task_lengths(std::string_view text) {
  const auto number = [&](std::string_view part) {
    std::size_t value = 0;
    const auto [end, error] = std::from_chars(part.data(), part.data() + part.size(), value);
    if (part.empty() || error != std::errc() || end != part.data() + part.size() || value == 0)
      fail("task lengths '", text, "': expected A-B or N with whole numbers from 1, e.g. 1-16");
    return value;
  };
  const std::size_t dash = text.find('-');
  const TaskLengths lengths = dash == std::string_view::npos
                                  ? TaskLengths{number(text), number(text)}
                                  : TaskLengths{number(text.substr(0, dash)), number(text.substr(dash + 1))};
  if (lengths.min > lengths.max) fail("task lengths '", text, "': the first length exceeds the last");
  return lengths;
}

// "A-B,N,..." (each A-B or N as parse_task_lengths reads it): the lengths, ascending, each once.
inline std::vector<std::size_t> parse_length_list(std::string_view text) {
  std::vector<std::size_t> lengths;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const TaskLengths range = parse_task_lengths(text.substr(start, comma - start));
    if (range.max - range.min >= std::size_t{1} << 20)
      fail("task lengths '", text, "': ", to_string(range), " holds more than 2^20 lengths");
    for (std::size_t n = range.min; n <= range.max; ++n) lengths.push_back(n);
    if (comma == text.size()) break;
    start = comma + 1;
  }
  std::sort(lengths.begin(), lengths.end());
  lengths.erase(std::unique(lengths.begin(), lengths.end()), lengths.end());
  return lengths;
}

// Ascending lengths written back as parse_length_list reads them, runs of consecutive ones as A-B.
inline std::string length_list_text(const std::vector<std::size_t>& lengths) {
  std::string text;
  for (std::size_t i = 0; i < lengths.size();) {
    std::size_t j = i;
    while (j + 1 < lengths.size() && lengths[j + 1] == lengths[j] + 1) ++j;
    // appended piece by piece: GCC 12 at -O3 warns (-Wstringop-overflow, a false positive) on "..." + string
    if (!text.empty()) text += ',';
    text += std::to_string(lengths[i]);
    if (j > i) {
      text += '-';
      text += std::to_string(lengths[j]);
    }
    i = j + 1;
  }
  return text;
}

// The lengths a model trained on `trained` is tested at by default: out to 8 × its longest, as the
// length-generalization papers test; every length when that is at most 128 of them, else 128
// evenly spaced ones ending there (each example costs its length, and 128 points draw the curve).
inline std::vector<std::size_t> default_test_lengths(const TaskLengths& trained) {
  constexpr std::size_t points = 128;
  const std::size_t longest = 8 * trained.max;
  std::vector<std::size_t> lengths;
  if (longest <= points) {
    for (std::size_t n = 1; n <= longest; ++n) lengths.push_back(n);
  } else {
    for (std::size_t k = 1; k <= points; ++k) lengths.push_back(std::max<std::size_t>(1, k * longest / points));
    lengths.erase(std::unique(lengths.begin(), lengths.end()), lengths.end());
  }
  return lengths;
}

// A stage of a curriculum: `steps` steps on examples of `lengths`; with `until_loss`, at most that
// many: it ends at the first evaluation whose validation loss on the stage's examples is below it,
// and the run skips the steps it leaves (see TrainingStage).
struct TaskStage {
  TaskLengths lengths;
  std::size_t steps = 0;
  std::optional<double> until_loss = {};
  bool operator==(const TaskStage&) const = default;
};

// The stages a run trains through, in order, before the lengths it is trained for (a model that
// must find a circuit on short examples first: associative recall's lookup, found at two pairs).
using TaskCurriculum = std::vector<TaskStage>;

inline std::size_t curriculum_steps(const TaskCurriculum& curriculum) {
  std::size_t steps = 0;
  for (const TaskStage& stage : curriculum) steps += stage.steps;
  return steps;
}

// "L:S,L:S@X,..." (L as parse_task_lengths reads it, S whole steps from 1, X a loss above 0 the stage
// may end at), e.g. "2:30000,2-4:20000" or "2:80000@0.05,2-4:20000"; "" is none.
inline TaskCurriculum parse_task_curriculum(std::string_view text) {
  constexpr std::size_t max_steps = std::size_t{1} << 40;  // as a run's --steps
  TaskCurriculum curriculum;
  for (std::size_t start = 0; start < text.size();) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view stage = text.substr(start, comma - start);
    const std::size_t colon = stage.find(':');
    const std::size_t at = std::min(stage.find('@'), stage.size());
    std::size_t steps = 0;
    const std::string_view count =
        colon == std::string_view::npos || colon > at ? std::string_view() : stage.substr(colon + 1, at - colon - 1);
    const auto [end, error] = std::from_chars(count.data(), count.data() + count.size(), steps);
    if (count.empty() || error != std::errc() || end != count.data() + count.size() || steps == 0)
      fail("task curriculum '", text, "': stage '", stage,
           "' is not LENGTHS:STEPS or LENGTHS:STEPS@LOSS (lengths A-B or N, steps a whole number from 1), e.g. "
           "2:30000,2-4:20000");
    if (steps > max_steps)
      fail("task curriculum '", text, "': stage '", stage, "' has more than ", max_steps, " steps");
    std::optional<double> until_loss;
    if (at < stage.size()) {
      const std::string_view loss = stage.substr(at + 1);
      double value = 0;
      const auto [loss_end, loss_error] = std::from_chars(loss.data(), loss.data() + loss.size(), value);
      if (loss.empty() || loss_error != std::errc() || loss_end != loss.data() + loss.size() || !(value > 0) ||
          !std::isfinite(value))
        fail("task curriculum '", text, "': stage '", stage, "' ends at a loss '", loss,
             "', which is not a number above 0 (e.g. 2:80000@0.05)");
      until_loss = value;
    }
    curriculum.push_back({parse_task_lengths(stage.substr(0, colon)), steps, until_loss});
    start = comma + 1;
    if (comma + 1 == text.size()) fail("task curriculum '", text, "': ends in a comma");
  }
  return curriculum;
}

inline std::string to_string(const TaskCurriculum& curriculum) {
  std::string text;
  for (const TaskStage& stage : curriculum) {
    if (!text.empty()) text += ',';
    text += to_string(stage.lengths);
    text += ':';
    text += std::to_string(stage.steps);
    if (stage.until_loss) {
      std::array<char, 32> digits{};  // the shortest text that reads back as the same double
      const auto written = std::to_chars(digits.data(), digits.data() + digits.size(), *stage.until_loss);
      text += '@';
      text.append(digits.data(), written.ptr);
    }
  }
  return text;
}

// A task and the lengths of its examples: what a run trains on (after its curriculum's stages, if
// any), or an evaluation asks.
struct TaskSpec {
  TaskKind kind = TaskKind::copy;
  TaskLengths lengths;
  TaskCurriculum curriculum = {};
  bool operator==(const TaskSpec&) const = default;
};

inline std::string to_string(const TaskSpec& spec) {
  std::string text = std::string(task_name(spec.kind)) + " " + to_string(spec.lengths);
  if (!spec.curriculum.empty()) {
    text += " after ";
    text += to_string(spec.curriculum);
  }
  return text;
}

// The lengths of the examples of a run's step `step` (from 0, of its schedule: a stage ended early
// skips the steps it left): its curriculum's stage, then its lengths.
inline TaskLengths lengths_at_step(const TaskSpec& spec, std::size_t step) {
  for (const TaskStage& stage : spec.curriculum) {
    if (step < stage.steps) return stage.lengths;
    step -= stage.steps;
  }
  return spec.lengths;
}

// The curriculum stage of a run's step `step` (of its schedule), as a training run needs it; none
// past the stages.
inline std::optional<TrainingStage> stage_at_step(const TaskSpec& spec, std::size_t step) {
  std::size_t end = 0;
  for (const TaskStage& stage : spec.curriculum) {
    end += stage.steps;
    if (step < end) return TrainingStage{static_cast<std::int64_t>(end), stage.until_loss};
  }
  return std::nullopt;
}

// Throws posenc::Error if a stage's examples are longer than the lengths' longest (which sets the
// run's context).
inline void check_curriculum(const TaskSpec& spec) {
  for (const TaskStage& stage : spec.curriculum)
    if (stage.lengths.max > spec.lengths.max)
      fail("task curriculum ", to_string(spec.curriculum), ": stage lengths ", to_string(stage.lengths),
           " exceed the task lengths ", to_string(spec.lengths), " the run is trained for (they set its context)");
}

// Throws posenc::Error unless a run of `steps` steps trains every stage of the spec's curriculum and
// then its lengths.
inline void check_curriculum_steps(const TaskSpec& spec, std::size_t steps) {
  if (const std::size_t staged = curriculum_steps(spec.curriculum); !spec.curriculum.empty() && staged >= steps)
    fail("task curriculum ", to_string(spec.curriculum), ": its ", staged, " steps leave none of the run's ", steps,
         " for the task lengths ", to_string(spec.lengths));
}

// One example: its characters, which of them are the answer (the loss and the accuracy score
// only those, each predicted from the characters before it), and its length.
struct TaskExample {
  std::string text;
  std::vector<std::uint8_t> answer;  // (text.size())
  std::size_t length = 0;
};

// A task's examples, drawn from a generator, so a seed gives the same stream on every platform.
class Task {
 public:
  static constexpr std::string_view letters = "abcdefghijklmnopqrstuvwxyz";
  static constexpr std::string_view digits = "0123456789";
  static constexpr std::size_t recall_queries = 4;  // associative recall asks up to this many keys
  static constexpr std::size_t passkey_digits = 5;
  static constexpr std::string_view passkey_needle_start = "\nThe pass key is ";
  static constexpr std::string_view passkey_needle_end = ". Remember it.\n";
  static constexpr std::string_view passkey_question = "\nWhat is the pass key? The pass key is ";

  // passkey hides its key in `corpus`, cut 90/10 as TextDataset cuts it (training examples from
  // the first part, validation ones from the rest); the other tasks take no corpus.
  explicit Task(TaskKind kind, std::string_view corpus = {}) : kind_(kind), tokenizer_(symbols(kind, corpus)) {
    if (task_info(kind).reads_corpus) {
      if (corpus.empty()) fail("task ", task_name(kind), ": needs a corpus to hide its key in (--data)");
      const std::size_t cut = static_cast<std::size_t>(static_cast<double>(corpus.size()) * 0.9);
      train_text_ = corpus.substr(0, cut);
      val_text_ = corpus.substr(cut);
    } else if (!corpus.empty()) {
      fail("task ", task_name(kind), ": takes no corpus (it makes its own examples)");
    }
  }

  TaskKind kind() const { return kind_; }
  std::string_view name() const { return task_name(kind_); }
  // Every symbol an example may hold, sorted (passkey: the corpus's and the digits).
  const CharTokenizer& tokenizer() const { return tokenizer_; }

  // The longest length the task has examples of (associative recall: distinct keys; passkey: the
  // shorter part of the corpus).
  std::size_t longest_length() const {
    switch (kind_) {
      case TaskKind::associative_recall: return letters.size() * letters.size();
      case TaskKind::passkey: return std::min(train_text_.size(), val_text_.size());
      default: return std::size_t{1} << 20;
    }
  }

  // The characters of an example of length n.
  std::size_t sequence_length(std::size_t n) const { return sequence_length(kind_, n); }
  static std::size_t sequence_length(TaskKind kind, std::size_t n) {
    switch (kind) {
      case TaskKind::copy:
      case TaskKind::reverse:
      case TaskKind::sort: return 2 * n + 1;
      case TaskKind::associative_recall: return 3 * n + 1 + 3 * std::min(n, recall_queries);
      case TaskKind::passkey:
        return n + passkey_needle_start.size() + passkey_digits + passkey_needle_end.size() +
               passkey_question.size() + passkey_digits;
      case TaskKind::addition: return 2 * n + 2 + (n + 1);
    }
    return 0;
  }

  // Throws posenc::Error unless every length of the range has examples.
  void check(const TaskLengths& lengths) const {
    if (lengths.min == 0 || lengths.min > lengths.max)
      fail("task ", name(), ": lengths ", to_string(lengths), " are not a range of whole numbers from 1");
    if (lengths.max > longest_length())
      fail("task ", name(), ": length ", lengths.max, " exceeds the longest it has (", longest_length(), " ",
           task_info(kind_).length, kind_ == TaskKind::passkey ? ", the corpus's validation part" : "", ")");
  }

  // Throws posenc::Error unless `tokenizer` (a model's) gives each of the task's symbols a token
  // of its own: a char vocabulary that holds them all, or the bytes. BPE tokens would join the
  // characters the target mask scores one by one.
  void check_vocabulary(const Tokenizer& tokenizer) const {
    if (tokenizer.kind() == TokenizerKind::bpe)
      fail("task ", name(), " scores its answers character by character; it needs tokenizer char or byte, not ",
           tokenizer.describe());
    if (const std::size_t at = tokenizer.first_unencodable(tokenizer_.symbols()); at != std::string_view::npos) {
      const char c = tokenizer_.symbols()[at];
      fail("task ", name(), ": the vocabulary lacks the symbol '", std::string(1, c), "' (byte ",
           static_cast<int>(static_cast<unsigned char>(c)), ") the task uses");
    }
  }

  // An example of length n, drawn from rng; passkey takes its text from `split`'s part of the corpus.
  TaskExample example(std::size_t n, Split split, Rng& rng) const {
    check({n, n});
    TaskExample e;
    e.length = n;
    e.text.reserve(sequence_length(n));
    const auto prompt = [&](std::string_view text) { e.text += text; };
    const auto answer = [&](std::string_view text) {
      e.answer.resize(e.text.size(), 0);
      e.text += text;
      e.answer.resize(e.text.size(), 1);
    };
    const auto draw = [&](std::string_view from) { return from[rng.uniform_index(from.size())]; };
    switch (kind_) {
      case TaskKind::copy:
      case TaskKind::reverse:
      case TaskKind::sort: {
        std::string s(n, ' ');
        for (char& c : s) c = draw(letters);
        prompt(s);
        prompt("|");
        if (kind_ == TaskKind::reverse) std::reverse(s.begin(), s.end());
        if (kind_ == TaskKind::sort) std::sort(s.begin(), s.end());
        answer(s);
        break;
      }
      case TaskKind::associative_recall: {
        // n distinct keys (a partial Fisher-Yates shuffle of the 676), each with a random digit
        std::vector<std::size_t> keys(longest_length());
        for (std::size_t k = 0; k < keys.size(); ++k) keys[k] = k;
        for (std::size_t k = 0; k < n; ++k) std::swap(keys[k], keys[k + rng.uniform_index(keys.size() - k)]);
        keys.resize(n);
        std::vector<char> values(n);
        const auto key = [&](std::size_t k) { return std::string{letters[keys[k] / 26], letters[keys[k] % 26]}; };
        for (std::size_t k = 0; k < n; ++k) {
          values[k] = draw(digits);
          prompt(key(k));
          prompt(std::string_view(&values[k], 1));
        }
        prompt("|");
        // distinct queried keys, in random order
        std::vector<std::size_t> order(n);
        for (std::size_t k = 0; k < n; ++k) order[k] = k;
        const std::size_t queries = std::min(n, recall_queries);
        for (std::size_t q = 0; q < queries; ++q) {
          std::swap(order[q], order[q + rng.uniform_index(n - q)]);
          prompt(key(order[q]));
          answer(std::string_view(&values[order[q]], 1));
        }
        break;
      }
      case TaskKind::passkey: {
        const std::string_view text = split == Split::train ? train_text_ : val_text_;
        const std::size_t start = rng.uniform_index(text.size() - n + 1);
        const std::size_t depth = rng.uniform_index(n + 1);
        std::string key(passkey_digits, '0');
        for (char& c : key) c = draw(digits);
        prompt(text.substr(start, depth));
        prompt(passkey_needle_start);
        prompt(key);
        prompt(passkey_needle_end);
        prompt(text.substr(start + depth, n - depth));
        prompt(passkey_question);
        answer(key);
        break;
      }
      case TaskKind::addition: {
        // digits least significant first; a number of more than one digit has no leading zero
        std::string a(n, '0'), b(n, '0'), sum(n + 1, '0');
        for (std::size_t i = 0; i < n; ++i) {
          a[i] = i + 1 == n && n > 1 ? draw(digits.substr(1)) : draw(digits);
          b[i] = i + 1 == n && n > 1 ? draw(digits.substr(1)) : draw(digits);
        }
        int carry = 0;
        for (std::size_t i = 0; i < n; ++i) {
          const int d = (a[i] - '0') + (b[i] - '0') + carry;
          sum[i] = static_cast<char>('0' + d % 10);
          carry = d / 10;
        }
        sum[n] = static_cast<char>('0' + carry);
        prompt(a);
        prompt("+");
        prompt(b);
        prompt("=");
        answer(sum);
        break;
      }
    }
    e.answer.resize(e.text.size(), 0);
    return e;
  }

 private:
  static std::string symbols(TaskKind kind, std::string_view corpus) {
    std::string s;
    switch (kind) {
      case TaskKind::copy:
      case TaskKind::reverse:
      case TaskKind::sort: s = std::string(letters) + "|"; break;
      case TaskKind::associative_recall: s = std::string(letters) + std::string(digits) + "|"; break;
      case TaskKind::passkey:
        s = std::string(corpus) + std::string(digits) + std::string(passkey_needle_start) +
            std::string(passkey_needle_end) + std::string(passkey_question);
        break;
      case TaskKind::addition: s = std::string(digits) + "+="; break;
    }
    return CharTokenizer::from_corpus(s).symbols();
  }

  TaskKind kind_;
  CharTokenizer tokenizer_;
  std::string train_text_, val_text_;
};

// The inputs of the spec's longest example: the context a model needs to train on it.
inline std::size_t task_context(const TaskSpec& spec) { return Task::sequence_length(spec.kind, spec.lengths.max) - 1; }

// Examples in a batch: sequences padded to the longest, inputs (B,T) and targets (B,T) — T one less
// than the longest's characters — and a mask that scores the answers' characters only.
inline void fill_task_batch(Batch& batch, const std::vector<TaskExample>& examples, const Tokenizer& tokenizer) {
  std::size_t longest = 0;
  for (const TaskExample& e : examples) longest = std::max(longest, e.text.size());
  const std::size_t B = examples.size(), T = longest - 1;
  batch.inputs.resize({B, T});
  batch.targets.resize({B, T});
  TargetMask& mask = batch.mask.emplace();
  mask.resize({B, T});
  batch.inputs.fill(0);  // padding after a shorter example: causal attention never reads it back
  batch.targets.fill(0);
  mask.fill(0);
  for (std::size_t b = 0; b < B; ++b) {
    const std::vector<TokenId> ids = tokenizer.encode(examples[b].text);
    for (std::size_t t = 0; t + 1 < ids.size(); ++t) {
      batch.inputs(b, t) = ids[t];
      batch.targets(b, t) = ids[t + 1];
      mask(b, t) = examples[b].answer[t + 1];
    }
  }
}

// A task's batches: each example's length uniform over the range, its content from the stream's
// generator. A training run's stream follows the spec's curriculum by step (at_step); one that is
// never told a step (an evaluation's) draws from the spec's lengths.
class TaskStream final : public BatchStream {
 public:
  TaskStream(const Task& task, const Tokenizer& tokenizer, TaskSpec spec, Split split, std::size_t batch,
             std::uint64_t seed)
      : task_(&task), tokenizer_(&tokenizer), spec_(std::move(spec)), lengths_(spec_.lengths), split_(split),
        batch_(batch), rng_(seed) {
    if (batch == 0) fail("TaskStream: batch size must be positive");
    task.check(spec_.lengths);
    for (const TaskStage& stage : spec_.curriculum) task.check(stage.lengths);
  }
  void at_step(std::int64_t step) override { lengths_ = lengths_at_step(spec_, static_cast<std::size_t>(step)); }
  void sample(Batch& batch) override {
    examples_.clear();
    for (std::size_t b = 0; b < batch_; ++b)
      examples_.push_back(
          task_->example(lengths_.min + rng_.uniform_index(lengths_.max - lengths_.min + 1), split_, rng_));
    fill_task_batch(batch, examples_, *tokenizer_);
  }
  Rng& rng() override { return rng_; }

 private:
  const Task* task_;
  const Tokenizer* tokenizer_;
  TaskSpec spec_;
  TaskLengths lengths_;  // the current step's
  Split split_;
  std::size_t batch_;
  Rng rng_;
  std::vector<TaskExample> examples_;
};

// A task as training data: examples of the training lengths (after the curriculum's stages, if
// any), encoded with the task's symbols or a given vocabulary that holds them (a checkpoint's).
class TaskData final : public TrainingData {
 public:
  TaskData(Task task, TaskLengths lengths) : TaskData(std::move(task), lengths, std::nullopt) {}
  TaskData(Task task, TaskLengths lengths, std::optional<Tokenizer> vocabulary, TaskCurriculum curriculum = {})
      : task_(std::move(task)), spec_{task_.kind(), lengths, std::move(curriculum)},
        tokenizer_(vocabulary ? *vocabulary : Tokenizer(task_.tokenizer())) {
    task_.check(lengths);
    for (const TaskStage& stage : spec_.curriculum) task_.check(stage.lengths);
    check_curriculum(spec_);
    task_.check_vocabulary(tokenizer_);
  }

  const Task& task() const { return task_; }
  const TaskLengths& lengths() const { return spec_.lengths; }
  const TaskCurriculum& curriculum() const { return spec_.curriculum; }
  const Tokenizer& tokenizer() const override { return tokenizer_; }
  // The inputs of the longest example: the context a model needs to train on the range.
  std::size_t context() const { return task_context(spec_); }
  std::optional<TrainingStage> stage_at(std::int64_t step) const override {
    return stage_at_step(spec_, static_cast<std::size_t>(step));
  }

  std::unique_ptr<BatchStream> batches(Split split, std::size_t batch, std::size_t context,
                                       std::uint64_t seed) const override {
    if (context < this->context())
      fail("task ", task_.name(), " at lengths ", to_string(spec_.lengths), ": its longest example has ",
           this->context(), " inputs, more than the context ", context);
    return std::make_unique<TaskStream>(task_, tokenizer_, spec_, split, batch, seed);
  }

 private:
  Task task_;
  TaskSpec spec_;
  Tokenizer tokenizer_;
};

}  // namespace posenc
