// evaluate_task(): a model's exact-match accuracy and answer loss on a task, length by length.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "posenc/config.hpp"
#include "posenc/data/tasks.hpp"
#include "posenc/kernels/dropout.hpp"
#include "posenc/tensor.hpp"
#include "posenc/train/stop_check.hpp"

namespace posenc {

// One length of a task: how many of its examples the model answers exactly (every answer
// character the most likely one, each predicted from the true characters before it — for these
// tasks, whose answers end the example or are each preceded by their query, what greedy decoding
// of the answers would give), and the mean loss per answer character. A length whose examples are
// longer than the model accepts (a learned table's rows) is not evaluated.
struct TaskScore {
  std::size_t length = 0;
  std::size_t sequence = 0;  // characters of an example
  bool evaluated = false;
  std::size_t examples = 0, exact = 0;
  double accuracy = 0;         // exact / examples
  double answer_loss = 0;      // nats per answer character
  double char_accuracy = 0;    // answer characters right / answer characters
};

// A score as a row of JSON: its length and characters, and its counts and rates, or for a length
// not evaluated a note saying why (`accepted`: the inputs the model accepts).
inline nlohmann::json to_json(const TaskScore& s, std::size_t accepted) {
  nlohmann::json row = {{"length", s.length}, {"characters", s.sequence}};
  if (!s.evaluated) {
    row["note"] = "not applicable: " + std::to_string(s.sequence - 1) + " inputs; the model accepts " +
                  std::to_string(accepted);
    return row;
  }
  row.update({{"examples", s.examples}, {"exact", s.exact}, {"accuracy", s.accuracy},
              {"char_accuracy", s.char_accuracy}, {"answer_loss", s.answer_loss}});
  return row;
}

// The seed of length n's examples: each length's are the same whatever range is asked.
inline std::uint64_t task_length_seed(std::uint64_t seed, std::size_t n) {
  return DropoutMask::mix(seed ^ DropoutMask::mix(static_cast<std::uint64_t>(n) + 0x9E3779B97F4A7C15ULL));
}

// `examples` examples of every length in `lengths` (from the task's validation text, for
// passkey), `batch` per forward pass, encoded with `tokenizer` (the model's vocabulary).
// should_stop is asked before every batch.
template <class Model>
std::vector<TaskScore> evaluate_task(Model& model, const Task& task, const Tokenizer& tokenizer,
                                     const TaskLengths& lengths, std::size_t examples, std::uint64_t seed,
                                     std::size_t batch = 32, const StopCheck& should_stop = {}) {
  if (examples == 0 || batch == 0) fail("evaluate_task: the examples and the batch must be positive");
  task.check(lengths);
  task.check_vocabulary(tokenizer);
  if (tokenizer.vocab_size() != model.vocab_size())
    fail("evaluate_task: the vocabulary has ", tokenizer.vocab_size(), " symbols, the model ", model.vocab_size());
  std::vector<TaskScore> scores;
  std::vector<TaskExample> group;
  Batch b;
  for (std::size_t n = lengths.min; n <= lengths.max; ++n) {
    TaskScore score{.length = n, .sequence = task.sequence_length(n)};
    if (score.sequence - 1 > model.max_context()) {
      scores.push_back(score);
      continue;
    }
    score.evaluated = true;
    Rng rng(task_length_seed(seed, n));
    std::size_t answer_chars = 0, right_chars = 0;
    double loss = 0;
    for (std::size_t e0 = 0; e0 < examples; e0 += batch) {
      detail::stop_if_asked(should_stop);
      group.clear();
      for (std::size_t e = e0; e < std::min(examples, e0 + batch); ++e)
        group.push_back(task.example(n, Split::validation, rng));
      fill_task_batch(b, group, tokenizer);
      const auto logits = model.forward(b.inputs);
      const std::size_t T = b.inputs.shape()[1], V = model.vocab_size();
      for (std::size_t i = 0; i < group.size(); ++i) {
        bool all_right = true;
        for (std::size_t t = 0; t < T; ++t) {
          if ((*b.mask)(i, t) == 0) continue;
          const auto target = static_cast<std::size_t>(b.targets(i, t));
          std::size_t best = 0;
          double top = logits(i, t, 0);
          for (std::size_t v = 1; v < V; ++v)
            if (static_cast<double>(logits(i, t, v)) > top) top = logits(i, t, best = v);
          double sum = 0;
          for (std::size_t v = 0; v < V; ++v) sum += std::exp(static_cast<double>(logits(i, t, v)) - top);
          loss += top + std::log(sum) - static_cast<double>(logits(i, t, target));
          ++answer_chars;
          right_chars += best == target;
          all_right = all_right && best == target;
        }
        score.exact += all_right;
      }
    }
    score.examples = examples;
    score.accuracy = static_cast<double>(score.exact) / static_cast<double>(examples);
    score.answer_loss = loss / static_cast<double>(answer_chars);
    score.char_accuracy = static_cast<double>(right_chars) / static_cast<double>(answer_chars);
    scores.push_back(score);
  }
  return scores;
}

}  // namespace posenc
