// per_position_loss() and copy_probe(): where in a window a model's loss rises, and whether it retrieves from far back.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <tuple>
#include <utility>
#include <vector>

#include "posenc/config.hpp"
#include "posenc/tensor.hpp"
#include "posenc/train/stop_check.hpp"

namespace posenc {

namespace detail {

// −log softmax(logits(b, t, ·))[target], in double.
template <class Logits>
double token_loss(const Logits& logits, std::size_t b, std::size_t t, std::size_t V, TokenId target) {
  double top = logits(b, t, 0);
  for (std::size_t v = 1; v < V; ++v) top = std::max(top, static_cast<double>(logits(b, t, v)));
  double sum = 0;
  for (std::size_t v = 0; v < V; ++v) sum += std::exp(static_cast<double>(logits(b, t, v)) - top);
  return top + std::log(sum) - static_cast<double>(logits(b, t, static_cast<std::size_t>(target)));
}

// Mean and sample standard deviation.
inline std::pair<double, double> mean_and_sd(const std::vector<double>& x) {
  double mean = 0;
  for (double v : x) mean += v;
  mean /= static_cast<double>(x.size());
  double ss = 0;
  for (double v : x) ss += (v - mean) * (v - mean);
  return {mean, x.size() > 1 ? std::sqrt(ss / static_cast<double>(x.size() - 1)) : 0.0};
}

}  // namespace detail

// The mean loss at each position t of a window of `length` tokens: the split cut into its
// non-overlapping full windows (a shorter last one is left out, so every position is averaged
// over the same windows), window w predicting tokens[w·L + t + 1] from tokens[w·L … w·L + t].
// A rise past the trained context shows where it starts.
struct PositionLoss {
  std::size_t length = 0;
  std::size_t windows = 0;         // how many windows each position is averaged over
  std::vector<double> mean_loss;   // (length)

  // The mean over positions [first, last).
  double mean_over(std::size_t first, std::size_t last) const {
    double s = 0;
    for (std::size_t t = first; t < last; ++t) s += mean_loss[t];
    return s / static_cast<double>(last - first);
  }

  // The window cut into min(bins, length) ranges of positions as equal as whole numbers allow.
  struct Bin {
    std::size_t first = 0, last = 0;  // positions first…last, both included
    double loss = 0;
  };
  std::vector<Bin> binned(std::size_t bins) const {
    const std::size_t n = std::min(bins, length);
    std::vector<Bin> out;
    for (std::size_t b = 0; b < n; ++b) {
      const std::size_t first = b * length / n, end = (b + 1) * length / n;
      out.push_back({first, end - 1, mean_over(first, end)});
    }
    return out;
  }
};

// should_stop is asked before every batch.
template <class Model>
PositionLoss per_position_loss(Model& model, const std::vector<TokenId>& tokens, std::size_t length,
                               std::size_t batch = 8, const StopCheck& should_stop = {}) {
  if (length == 0 || batch == 0) fail("per_position_loss: the length and the batch must be positive");
  if (length > model.max_context())
    fail("per_position_loss: a window of ", length, " tokens exceeds the model's maximum context ",
         model.max_context());
  const std::size_t windows = tokens.empty() ? 0 : (tokens.size() - 1) / length;
  if (windows == 0)
    fail("per_position_loss: the split has ", tokens.size(), " tokens, too few for one window of ", length);
  PositionLoss out{length, windows, std::vector<double>(length, 0.0)};
  const std::size_t V = model.vocab_size();
  Tokens x;
  for (std::size_t w0 = 0; w0 < windows; w0 += batch) {
    detail::stop_if_asked(should_stop);
    const std::size_t B = std::min(batch, windows - w0);
    x.resize({B, length});
    for (std::size_t b = 0; b < B; ++b)
      for (std::size_t t = 0; t < length; ++t) x(b, t) = tokens[(w0 + b) * length + t];
    const auto logits = model.forward(x);
    for (std::size_t b = 0; b < B; ++b)
      for (std::size_t t = 0; t < length; ++t)
        out.mean_loss[t] += detail::token_loss(logits, b, t, V, tokens[(w0 + b) * length + t + 1]);
  }
  for (double& l : out.mean_loss) l /= static_cast<double>(windows);
  return out;
}

// The long-range copy probe at distance n: a segment A of n tokens followed by itself (A·A), so each
// token of the second copy can be read n positions back, against a control B·A that puts an
// unrelated segment B of the split (half the split away) in front of A. Both score A's targets 1…n−1
// at the same positions, n…2n−2, after the same kind of join, so they differ only in whether the
// copy is there to read: the drop (control − copy) is about 0 for a model that does not reach n back
// and approaches the control's loss for one that retrieves. (Against A's first copy instead, a model
// that reads nothing far would still drop: the first copy's early targets have almost no context, a
// cost of a few nats spread over n − 1 targets.) Segments start evenly over the split; each figure is
// a mean over them with its spread.
struct CopyProbe {
  std::size_t distance = 0;
  std::size_t segments = 0;
  double control_loss = 0, control_sd = 0;          // A's targets 1…n−1 after an unrelated segment B
  double second_copy_loss = 0, second_copy_sd = 0;  // the same targets after A itself
  double drop = 0, drop_sd = 0;                     // control − second copy, per segment
};

// Whether a split of `split_tokens` tokens holds `segments` segments of `distance` for the copy
// probe: an error saying why not, so that a program can check every distance before probing one.
inline void check_copy_probe_split(std::size_t split_tokens, std::size_t distance, std::size_t segments) {
  if (distance < 2) fail("copy_probe: the distance must be at least 2, got ", distance);
  if (segments == 0) fail("copy_probe: the segments must be positive");
  if (split_tokens < distance * segments)
    fail("copy_probe: the split has ", split_tokens, " tokens, too few for ", segments, " segments of ", distance);
  if (split_tokens < 3 * distance)
    fail("copy_probe: the split has ", split_tokens, " tokens, too few for a segment of ", distance,
         " and a control segment half the split away (", 3 * distance, " needed)");
}

// `batch` segments (2 × batch sequences, each probe with its control) per forward pass;
// should_stop is asked before every batch.
template <class Model>
CopyProbe copy_probe(Model& model, const std::vector<TokenId>& tokens, std::size_t distance, std::size_t segments,
                     std::size_t batch = 8, const StopCheck& should_stop = {}) {
  if (distance < 2) fail("copy_probe: the distance must be at least 2, got ", distance);
  if (batch == 0) fail("copy_probe: the batch must be positive");
  const std::size_t length = 2 * distance;
  if (length > model.max_context())
    fail("copy_probe: a distance of ", distance, " needs ", length, " positions; the model accepts ",
         model.max_context());
  check_copy_probe_split(tokens.size(), distance, segments);
  const std::size_t V = model.vocab_size();
  const std::size_t last_start = tokens.size() - distance;  // a segment starts in [0, last_start]
  const std::size_t spacing = last_start / segments;
  // B starts half the split away from A, wrapping round: at least `distance` apart, so they never overlap
  const auto control_start = [&](std::size_t a) { return (a + (last_start + 1) / 2) % (last_start + 1); };
  std::vector<double> control(segments), second(segments), drop(segments);
  Tokens x;
  for (std::size_t s0 = 0; s0 < segments; s0 += batch) {
    detail::stop_if_asked(should_stop);
    const std::size_t B = std::min(batch, segments - s0);
    x.resize({2 * B, length});  // rows 0…B−1: A·A; rows B…2B−1: B·A
    for (std::size_t b = 0; b < B; ++b) {
      const std::size_t a = (s0 + b) * spacing, c = control_start(a);
      for (std::size_t t = 0; t < distance; ++t) {
        x(b, t) = x(b, distance + t) = x(B + b, distance + t) = tokens[a + t];
        x(B + b, t) = tokens[c + t];
      }
    }
    const auto logits = model.forward(x);
    for (std::size_t b = 0; b < B; ++b) {
      double copied = 0, controlled = 0;
      for (std::size_t t = distance + 1; t < length; ++t) {  // A's targets 1…n−1
        copied += detail::token_loss(logits, b, t - 1, V, x(b, t));
        controlled += detail::token_loss(logits, B + b, t - 1, V, x(B + b, t));
      }
      const std::size_t k = s0 + b;
      second[k] = copied / static_cast<double>(distance - 1);
      control[k] = controlled / static_cast<double>(distance - 1);
      drop[k] = control[k] - second[k];
    }
  }
  CopyProbe out{.distance = distance, .segments = segments};
  std::tie(out.control_loss, out.control_sd) = detail::mean_and_sd(control);
  std::tie(out.second_copy_loss, out.second_copy_sd) = detail::mean_and_sd(second);
  std::tie(out.drop, out.drop_sd) = detail::mean_and_sd(drop);
  return out;
}

}  // namespace posenc
