// evaluate_loss() and estimate_loss(): a model's loss on a token split, by a deterministic full pass or random batches.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "posenc/config.hpp"
#include "posenc/data/dataset.hpp"
#include "posenc/tensor.hpp"

namespace posenc {

struct LossResult {
  double loss = 0;          // mean cross-entropy per target (nats)
  std::size_t targets = 0;  // how many targets were scored
};

// The split cut into consecutive non-overlapping windows of `context` tokens: window w predicts
// tokens[w·T + 1 .. w·T + T] from tokens[w·T .. w·T + T − 1], so every target after the first token
// is scored exactly once; the last window is shorter when T does not divide the split.
// Deterministic: the same model and split always give the same number.
template <class Model>
LossResult evaluate_loss(Model& model, const std::vector<TokenId>& tokens, std::size_t context,
                         std::size_t batch = 32) {
  if (context == 0) fail("evaluate_loss: context must be positive");
  if (batch == 0) fail("evaluate_loss: batch must be positive");
  if (tokens.size() < 2) fail("evaluate_loss: the split has ", tokens.size(), " tokens; need at least 2");
  const std::size_t predictable = tokens.size() - 1;
  const std::size_t full_windows = predictable / context;
  const std::size_t remainder = predictable % context;
  double total = 0;  // summed loss over targets
  Tokens x, y;
  auto score = [&](std::size_t first_window, std::size_t windows, std::size_t T) {
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

// The mean loss over `iterations` random batches of `batch` windows (nanoGPT's estimate_loss);
// the sampler is seeded by `seed`, so the estimate is repeatable.
template <class Model>
double estimate_loss(Model& model, const std::vector<TokenId>& tokens, std::size_t batch,
                     std::size_t context, std::size_t iterations, std::uint64_t seed,
                     std::string_view split_name = "split") {
  if (iterations == 0) fail("estimate_loss: iterations must be positive");
  BatchSampler sampler(tokens, batch, context, seed, split_name);
  Tokens x, y;
  double total = 0;
  for (std::size_t i = 0; i < iterations; ++i) {
    sampler.sample(x, y);
    total += static_cast<double>(model.loss(x, y));
  }
  return total / static_cast<double>(iterations);
}

}  // namespace posenc
