// evaluate_loss(), evaluate_loss_sliding(), estimate_loss(): a model's loss on a split, full passes or random batches.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "posenc/config.hpp"
#include "posenc/data/dataset.hpp"
#include "posenc/encodings/position_map.hpp"
#include "posenc/tensor.hpp"
#include "posenc/train/process_group.hpp"
#include "posenc/train/stop_check.hpp"

namespace posenc {

struct LossResult {
  double loss = 0;          // mean cross-entropy per target (nats)
  std::size_t targets = 0;  // how many targets were scored
};

// The split cut into consecutive non-overlapping windows of `context` tokens: window w predicts
// tokens[w·T + 1 .. w·T + T] from tokens[w·T .. w·T + T − 1], so every target after the first token
// is scored exactly once; the last window is shorter when T does not divide the split.
// Deterministic: the same model and split always give the same number. should_stop is asked
// before every batch.
template <class Model>
LossResult evaluate_loss(Model& model, const std::vector<TokenId>& tokens, std::size_t context,
                         std::size_t batch = 32, const StopCheck& should_stop = {}) {
  if (context == 0) fail("evaluate_loss: context must be positive");
  if (batch == 0) fail("evaluate_loss: batch must be positive");
  if (tokens.size() < 2) fail("evaluate_loss: the split has ", tokens.size(), " tokens; need at least 2");
  const std::size_t predictable = tokens.size() - 1;
  const std::size_t full_windows = predictable / context;
  const std::size_t remainder = predictable % context;
  double total = 0;  // summed loss over targets
  Tokens x, y;
  auto score = [&](std::size_t first_window, std::size_t windows, std::size_t T) {
    detail::stop_if_asked(should_stop);
    x.resize({windows, T});
    y.resize({windows, T});
    for (std::size_t b = 0; b < windows; ++b) {
      const std::size_t start = (first_window + b) * context;
      for (std::size_t t = 0; t < T; ++t) {
        x(b, t) = tokens[start + t];
        y(b, t) = tokens[start + t + 1];
      }
    }
    total += static_cast<double>(model.loss(x, y)) * static_cast<double>(windows * T);
  };
  for (std::size_t w = 0; w < full_windows; w += batch) score(w, std::min(batch, full_windows - w), context);
  if (remainder > 0) score(full_windows, 1, remainder);
  return LossResult{total / static_cast<double>(predictable), predictable};
}

// Sliding windows of length L moved by `stride` (the long-context protocol): the first window
// scores all of its L targets; each later window, starting `stride` tokens after the previous one,
// scores only the targets no earlier window scored — so every target after the first window is
// predicted from at least L − stride tokens of context. Every target of the split is scored once.
// Windows are batched so that a forward pass holds about `tokens_per_batch` tokens; should_stop is
// asked before every batch.
template <class Model>
LossResult evaluate_loss_sliding(Model& model, const std::vector<TokenId>& tokens, std::size_t L,
                                 std::size_t stride, std::size_t tokens_per_batch = 4096,
                                 const StopCheck& should_stop = {}) {
  if (L == 0) fail("evaluate_loss_sliding: window length must be positive");
  if (stride == 0 || stride > L) fail("evaluate_loss_sliding: stride ", stride, " must lie in [1, ", L, "]");
  if (tokens.size() < 2) fail("evaluate_loss_sliding: the split has ", tokens.size(), " tokens; need at least 2");
  const std::size_t predictable = tokens.size() - 1;  // targets tokens[1..n−1]
  L = std::min(L, predictable);  // a split shorter than one window is one window
  // Window w covers inputs [start_w, start_w + L) and scores its targets from index first_w on.
  struct Window {
    std::size_t start, first;
  };
  std::vector<Window> windows{{0, 0}};
  for (std::size_t start = stride; L < predictable; start += stride) {
    const std::size_t s = std::min(start, predictable - L);  // the last window ends at the split's end
    const std::size_t scored_until = windows.back().start + L;
    windows.push_back({s, scored_until - s});
    if (s + L >= predictable) break;
  }
  const std::size_t batch = std::max<std::size_t>(1, tokens_per_batch / L);
  double total = 0;
  std::size_t counted = 0;
  Tokens x;
  for (std::size_t w0 = 0; w0 < windows.size(); w0 += batch) {
    detail::stop_if_asked(should_stop);
    const std::size_t B = std::min(batch, windows.size() - w0);
    x.resize({B, L});
    for (std::size_t b = 0; b < B; ++b)
      std::copy_n(tokens.begin() + static_cast<std::ptrdiff_t>(windows[w0 + b].start), L, &x(b, 0));
    const auto logits = model.forward(x);
    const std::size_t V = logits.shape()[2];
    for (std::size_t b = 0; b < B; ++b) {
      const Window& win = windows[w0 + b];
      for (std::size_t t = win.first; t < L; ++t) {
        // −log softmax(logits)[target], computed in double
        double zmax = -INFINITY;
        for (std::size_t v = 0; v < V; ++v) zmax = std::max(zmax, static_cast<double>(logits(b, t, v)));
        double sum = 0;
        for (std::size_t v = 0; v < V; ++v) sum += std::exp(static_cast<double>(logits(b, t, v)) - zmax);
        const auto target = static_cast<std::size_t>(tokens[win.start + t + 1]);
        total += std::log(sum) + zmax - static_cast<double>(logits(b, t, target));
        ++counted;
      }
    }
  }
  if (counted != predictable)
    fail("evaluate_loss_sliding: scored ", counted, " targets of ", predictable, " (an internal error)");
  return LossResult{total / static_cast<double>(predictable), predictable};
}

namespace detail {

// The share of a batch's mean loss that its rows [first, last) hold: their scored targets over the
// batch's (rows over rows, when every target is scored).
inline double shard_share(const Batch& batch, std::size_t first, std::size_t last) {
  const std::size_t all = batch.scored(0, batch.rows());
  if (all == 0) fail("the target mask scores no target of the batch");
  return static_cast<double>(batch.scored(first, last)) / static_cast<double>(all);
}

// A model trained at randomized positions reads a shard at the whole batch's draw, which one
// process scoring all of it reads (not its shard's, which draw_positions_for keys by the shard).
template <class Model>
void read_at_batch_positions(Model& model, const Batch& batch) {
  if constexpr (requires { model.config().position_range; }) {
    if (const std::size_t range = model.config().position_range; range != 0) {
      const Tokens& ids = batch.inputs;
      model.set_positions(draw_positions_for({ids.data(), ids.size()}, ids.shape()[1], range));
    }
  }
}
template <class Model>
void read_at_own_positions(Model& model) {
  if constexpr (requires { model.clear_positions(); }) model.clear_positions();
}

// The model's mean loss over the batch's scored targets.
template <class Model>
double batch_loss(Model& model, const Batch& batch) {
  return static_cast<double>(batch.mask ? model.loss(batch.inputs, batch.targets, *batch.mask)
                                        : model.loss(batch.inputs, batch.targets));
}

}  // namespace detail

// The mean loss over `iterations` batches of a stream (nanoGPT's estimate_loss: a mean of batch
// means). With a process group, every process draws the same batches and scores its shard of each
// (batch_shard), weighted by its share of the batch's scored targets; all get the total.
// should_stop is asked before every batch; with a process group every process passes one (or
// none) and the group stops when any of them asks.
template <class Model>
double estimate_loss(Model& model, BatchStream& batches, std::size_t iterations, ProcessGroup* group = nullptr,
                     const StopCheck& should_stop = {}) {
  if (iterations == 0) fail("estimate_loss: iterations must be positive");
  Batch batch, shard;
  double total = 0;
  for (std::size_t i = 0; i < iterations; ++i) {
    if (group == nullptr) {
      detail::stop_if_asked(should_stop);
    } else if (should_stop && group->any(should_stop())) {
      throw EvaluationStopped();
    }
    batches.sample(batch);
    if (group == nullptr) {
      total += detail::batch_loss(model, batch);
      continue;
    }
    const auto [first, last] = batch_shard(batch.rows(), group->rank(), group->size());
    const double share = detail::shard_share(batch, first, last);
    if (share > 0) {
      copy_rows(shard, batch, first, last);
      detail::read_at_batch_positions(model, batch);
      total += detail::batch_loss(model, shard) * share;
      detail::read_at_own_positions(model);
    }
  }
  if (group != nullptr) group->sum(&total, 1);
  return total / static_cast<double>(iterations);
}

// The mean loss over `iterations` random batches of `batch` windows of the split (a BatchSampler
// seeded by `seed`, so the estimate is repeatable).
template <class Model>
double estimate_loss(Model& model, const std::vector<TokenId>& tokens, std::size_t batch,
                     std::size_t context, std::size_t iterations, std::uint64_t seed,
                     std::string_view split_name = "split", ProcessGroup* group = nullptr,
                     const StopCheck& should_stop = {}) {
  BatchSampler sampler(tokens, batch, context, seed, split_name);
  return estimate_loss(model, sampler, iterations, group, should_stop);
}

}  // namespace posenc
