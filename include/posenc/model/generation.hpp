// generate(): sampling text with temperature, top-k and top-p, through the key/value cache or by full recompute.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "posenc/config.hpp"
#include "posenc/random.hpp"
#include "posenc/tensor.hpp"

namespace posenc {

struct SamplingOptions {
  double temperature = 0.8;  // 0 picks the most likely token (greedy)
  std::size_t top_k = 40;    // sample among the k most likely tokens; 0 means all
  // Nucleus sampling (Holtzman et al.), after temperature and top-k as Hugging Face's default
  // order (llama.cpp's applies temperature last): the fewest most likely tokens whose probability
  // (at the temperature) reaches top_p; 1 keeps them all.
  double top_p = 1.0;
  std::uint64_t seed = 1;
  bool use_cache = true;     // false recomputes the whole window for every token (the reference)
  std::size_t window = 0;    // the most tokens a prediction sees; 0: the model's max_context()
};

// Draws a token id from one row of logits.
template <class Logits>
TokenId sample_token(const Logits& logits, std::size_t V, const SamplingOptions& options, Rng& rng) {
  std::vector<std::size_t> order(V);
  for (std::size_t v = 0; v < V; ++v) order[v] = v;
  // Highest logit first; ties broken by the smaller id, so the order is fully determined.
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return logits(a) > logits(b); });
  if (options.temperature <= 0) return static_cast<TokenId>(order[0]);
  const std::size_t k = options.top_k == 0 ? V : std::min(options.top_k, V);
  std::vector<double> weights(k);
  const double top = static_cast<double>(logits(order[0]));
  double sum = 0;
  for (std::size_t i = 0; i < k; ++i) {
    weights[i] = std::exp((static_cast<double>(logits(order[i])) - top) / options.temperature);
    sum += weights[i];
  }
  std::size_t kept = k;
  if (options.top_p < 1) {
    double mass = 0;
    for (kept = 0; kept < k && mass < options.top_p * sum;) mass += weights[kept++];
    sum = mass;
  }
  double u = rng.uniform() * sum;
  for (std::size_t i = 0; i < kept; ++i) {
    u -= weights[i];
    if (u < 0) return static_cast<TokenId>(order[i]);
  }
  return static_cast<TokenId>(order[kept - 1]);
}

// Generates `count` tokens after `prompt` and returns them (without the prompt), each predicted
// from at most the last `window` tokens (SamplingOptions::window, by default the model's
// max_context(), which for learned is its training context). Linear in the tokens with the cache:
//  - policies whose cache rolls (Model::cache_rolls: relative ones and NoPE) encode the whole
//    prompt and every token once; past the window the oldest position is evicted, and each
//    token's keys and values stay those computed when it was added (sliding-window attention, as
//    llama.cpp's context shift). With one layer that equals recomputing the window; with more,
//    a recomputed window would also cut the context its first tokens were computed with.
//  - learned and sinusoidal, whose positions are absolute, re-encode the last ⌈window/2⌉ tokens at
//    positions 0… when the window is full: each token then sees between half a window and a
//    window of context, and each token costs at most two positions.
// use_cache = false recomputes the last `window` tokens for every token: the reference, quadratic;
// dynamic NTK always does (its angles follow the sequence's length, so every key turns again).
template <class Model>
std::vector<TokenId> generate(Model& model, const std::vector<TokenId>& prompt, std::size_t count,
                              const SamplingOptions& options = {}) {
  if (prompt.empty()) fail("generate: the prompt is empty; give at least one token");
  if (options.temperature < 0 || !std::isfinite(options.temperature))
    fail("generate: temperature must be a finite number ≥ 0, got ", options.temperature);
  if (!(options.top_p > 0 && options.top_p <= 1)) fail("generate: top_p must lie in (0, 1], got ", options.top_p);
  if (options.window > model.max_context())
    fail("generate: a window of ", options.window, " tokens exceeds the model's maximum context ",
         model.max_context());
  const std::size_t window = options.window == 0 ? model.max_context() : options.window;
  const std::size_t V = model.vocab_size();
  Rng rng(options.seed);
  std::vector<TokenId> sequence = prompt;
  std::vector<TokenId> generated;
  generated.reserve(count);
  const bool cached = options.use_cache && !model.config().rope.depends_on_length();
  auto cache = model.make_cache(cached ? window : 1);
  // Fills the cache with sequence[start, end − 1), the last token being the next step's.
  auto encode = [&](std::size_t start) {
    cache.clear();
    for (std::size_t i = start; i + 1 < sequence.size(); ++i) model.forward_step(sequence[i], cache);
  };
  if (cached) {
    if constexpr (Model::cache_rolls) encode(0);
    else encode(sequence.size() > window ? sequence.size() - window : 0);
  }

  for (std::size_t n = 0; n < count; ++n) {
    TokenId next;
    if (cached) {
      if constexpr (!Model::cache_rolls) {
        if (cache.full()) encode(sequence.size() - (window - window / 2));
      }
      const auto logits = model.forward_step(sequence.back(), cache);
      next = sample_token([&](std::size_t v) { return logits(v); }, V, options, rng);
    } else {
      const std::size_t T = std::min(sequence.size(), window);
      Tokens input({1, T});
      std::copy(sequence.end() - static_cast<std::ptrdiff_t>(T), sequence.end(), input.begin());
      const auto logits = model.forward(input);
      next = sample_token([&](std::size_t v) { return logits(0, T - 1, v); }, V, options, rng);
    }
    sequence.push_back(next);
    generated.push_back(next);
  }
  return generated;
}

}  // namespace posenc
