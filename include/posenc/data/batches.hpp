// Batch, BatchStream and TrainingData: what training draws — inputs, targets and which targets the loss scores.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

#include "posenc/data/tokenizer.hpp"
#include "posenc/kernels/cross_entropy.hpp"
#include "posenc/random.hpp"
#include "posenc/tensor.hpp"

namespace posenc {

// Which part of the data a stream draws from: training, or held out to estimate the loss on.
enum class Split { train, validation };

inline std::string_view split_name(Split split) {
  return split == Split::train ? "training split" : "validation split";
}

// B sequences: inputs (B,T), targets (B,T) — each input's next token — and which targets the loss
// scores (none: every one; a task scores only its answers).
struct Batch {
  Tokens inputs, targets;
  std::optional<TargetMask> mask;

  std::size_t rows() const { return inputs.shape()[0]; }
  // How many of rows [first, last)'s targets the loss scores.
  std::size_t scored(std::size_t first, std::size_t last) const {
    const std::size_t T = inputs.shape()[1];
    return scored_rows(mask ? mask->data() + first * T : nullptr, (last - first) * T);
  }
};

// out ← rows [first, last) of tokens (B,T): a data-parallel shard of a batch.
template <class Tensor2>
void copy_rows(Tensor2& out, const Tensor2& rows, std::size_t first, std::size_t last) {
  const std::size_t T = rows.shape()[1];
  if (out.shape() != typename Tensor2::shape_type{last - first, T}) out.resize({last - first, T});
  std::copy(rows.begin() + static_cast<std::ptrdiff_t>(first * T), rows.begin() + static_cast<std::ptrdiff_t>(last * T),
            out.begin());
}

// out ← rows [first, last) of every tensor of batch.
inline void copy_rows(Batch& out, const Batch& batch, std::size_t first, std::size_t last) {
  copy_rows(out.inputs, batch.inputs, first, last);
  copy_rows(out.targets, batch.targets, first, last);
  if (batch.mask) copy_rows(out.mask.emplace(), *batch.mask, first, last);
  else out.mask.reset();
}

// A seeded, endless stream of batches; its generator's state is its position, so a resumed run
// draws what an uninterrupted one would.
class BatchStream {
 public:
  virtual ~BatchStream() = default;
  virtual void sample(Batch& batch) = 0;
  virtual Rng& rng() = 0;
  // Told by a training run before each step's batches: a stream whose examples change with the
  // step (a task's curriculum) draws the step's; the others ignore it.
  virtual void at_step(std::int64_t /*step*/) {}
};

// The curriculum stage a training step falls in: the step of the run's schedule it ends at and,
// when it may end early, the validation loss on its examples below which it does — at the first
// evaluation that measures one, the run then skipping to the stage's end, so the steps and the
// learning rate after it are those of a run whose stage took every step (Trainer).
struct TrainingStage {
  std::int64_t end = 0;
  std::optional<double> until_loss;
};

// What a training run learns from: a corpus's windows (TextDataset) or a task's examples
// (TaskData), in the symbols of one tokenizer.
class TrainingData {
 public:
  virtual ~TrainingData() = default;
  // The curriculum stage of a step of the run's schedule (a task's), none outside one; a stream
  // told that step (BatchStream::at_step) draws the stage's examples.
  virtual std::optional<TrainingStage> stage_at(std::int64_t /*step*/) const { return std::nullopt; }
  virtual const Tokenizer& tokenizer() const = 0;
  std::size_t vocab_size() const { return tokenizer().vocab_size(); }
  // A stream of `batch` sequences of at most `context` inputs each from `split`, seeded by `seed`.
  virtual std::unique_ptr<BatchStream> batches(Split split, std::size_t batch, std::size_t context,
                                               std::uint64_t seed) const = 0;
};

}  // namespace posenc
