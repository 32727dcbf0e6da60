// The study model (3 layers, Dim 192, 4 heads): a training step per policy, generation, a full validation pass.
#include <benchmark/benchmark.h>

#include <algorithm>

#include <cstddef>
#include <filesystem>
#include <vector>

#include <posenc/transformer.hpp>

#include "bench_common.hpp"

namespace {

using namespace posenc;
using posenc_bench::study_batch;
using posenc_bench::study_context;
using posenc_bench::study_vocab;

Tokens random_tokens(std::size_t B, std::size_t T, std::uint64_t seed) {
  Rng rng(seed);
  Tokens t({B, T});
  for (auto& id : t)
    id = static_cast<TokenId>(rng.uniform() * static_cast<double>(study_vocab)) % static_cast<TokenId>(study_vocab);
  return t;
}

// zero_grad, forward, loss, backward and an AdamW step at B = 32, T = 128, fp32 or bf16 GEMMs.
template <class Policy, Precision P = Precision::fp32>
void train_step(benchmark::State& state) {
  posenc_bench::setup_threads();
  if (const auto reason = bf16_unsupported_reason(); P == Precision::bf16 && reason) {
    state.SkipWithError(reason->c_str());
    return;
  }
  StudyTransformer<Policy> model(ModelConfig{.vocab_size = study_vocab, .context = study_context, .precision = P});
  auto optimizer = AdamW(model);
  const Tokens x = random_tokens(study_batch, study_context, 1);
  const Tokens y = random_tokens(study_batch, study_context, 2);
  posenc::train_step(model, x, y, optimizer);  // the first step sizes the workspaces
  for (auto _ : state) benchmark::DoNotOptimize(posenc::train_step(model, x, y, optimizer));
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(study_batch * study_context),
                                                  benchmark::Counter::kIsIterationInvariantRate);
}

// Greedy generation of state.range(0) tokens after a prompt that fills the training context
// (128 tokens): with the key/value cache (the prompt's cache is built outside the timing, so the
// rate is that of generated tokens alone), or recomputing the whole sequence for every token.
TokenId argmax(const float* logits, std::size_t V) {
  return static_cast<TokenId>(std::max_element(logits, logits + V) - logits);
}

template <bool UseCache>
void generate_tokens(benchmark::State& state) {
  posenc_bench::setup_threads();
  RoPETransformer model(study_vocab, study_context);
  const auto count = static_cast<std::size_t>(state.range(0));
  const Tokens p = random_tokens(1, study_context, 3);
  const std::vector<TokenId> prompt(p.begin(), p.end());
  auto cache = model.make_cache();
  std::vector<TokenId> sequence;
  for (auto _ : state) {
    if constexpr (UseCache) {
      state.PauseTiming();
      cache.clear();
      for (std::size_t i = 0; i + 1 < prompt.size(); ++i) model.forward_step(prompt[i], cache);
      state.ResumeTiming();
      TokenId token = prompt.back();
      for (std::size_t n = 0; n < count; ++n) {
        const auto logits = model.forward_step(token, cache);
        token = argmax(&logits(0), study_vocab);
      }
      benchmark::DoNotOptimize(token);
    } else {
      sequence = prompt;
      for (std::size_t n = 0; n < count; ++n) {
        Tokens input({1, sequence.size()});
        std::copy(sequence.begin(), sequence.end(), input.begin());
        const auto logits = model.forward(input);
        sequence.push_back(argmax(&logits(0, sequence.size() - 1, 0), study_vocab));
      }
      benchmark::DoNotOptimize(sequence.data());
    }
  }
  state.counters["tokens/s"] =
      benchmark::Counter(static_cast<double>(count), benchmark::Counter::kIsIterationInvariantRate);
}

// generate() far past the window: a model that accepts 1,024 positions (max_context), so 1,000
// tokens never fill it and 3,000 do; RoPE and ALiBi roll their cache, learned (whose window is its
// 128-row table) re-encodes the last half window when it is full. Linear cost means 3,000 tokens
// take about 3× (and, as attention over a full window costs more per token, < 4×) what 1,000 take.
template <class Policy>
void generate_past_window(benchmark::State& state) {
  posenc_bench::setup_threads();
  StudyTransformer<Policy> model(ModelConfig{.vocab_size = study_vocab, .context = study_context, .max_context = 1024});
  const auto count = static_cast<std::size_t>(state.range(0));
  const Tokens p = random_tokens(1, 16, 4);
  const std::vector<TokenId> prompt(p.begin(), p.end());
  for (auto _ : state) benchmark::DoNotOptimize(generate(model, prompt, count, {.temperature = 1.0, .seed = 6}));
  state.counters["tokens/s"] =
      benchmark::Counter(static_cast<double>(count), benchmark::Counter::kIsIterationInvariantRate);
}

// The deterministic full pass over Tiny Shakespeare's validation split (B = 32 windows of 128).
void evaluate_validation(benchmark::State& state) {
  posenc_bench::setup_threads();
  const std::filesystem::path path = std::filesystem::path(POSENC_SOURCE_DIR) / "data/tinyshakespeare/input.txt";
  if (!std::filesystem::exists(path)) {
    state.SkipWithError("data/tinyshakespeare/input.txt is missing: run scripts/fetch-data.sh");
    return;
  }
  const TextDataset data(read_text_file(path.string()));
  RoPETransformer model(data.vocab_size(), study_context);
  for (auto _ : state) benchmark::DoNotOptimize(evaluate_loss(model, data.val(), study_context, study_batch));
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(data.val().size()),
                                                  benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

BENCHMARK_TEMPLATE(train_step, NoPE)
    ->Name("train_step<NoPE>")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->ComputeStatistics("min", posenc_bench::minimum);
BENCHMARK_TEMPLATE(train_step, Learned)
    ->Name("train_step<Learned>")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->ComputeStatistics("min", posenc_bench::minimum);
BENCHMARK_TEMPLATE(train_step, Sinusoidal)
    ->Name("train_step<Sinusoidal>")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->ComputeStatistics("min", posenc_bench::minimum);
BENCHMARK_TEMPLATE(train_step, RoPE)
    ->Name("train_step<RoPE>")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->ComputeStatistics("min", posenc_bench::minimum);
BENCHMARK_TEMPLATE(train_step, ALiBi)
    ->Name("train_step<ALiBi>")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->ComputeStatistics("min", posenc_bench::minimum);
BENCHMARK_TEMPLATE(train_step, ALiBiSingleSlope)
    ->Name("train_step<ALiBiSingleSlope>")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->ComputeStatistics("min", posenc_bench::minimum);
BENCHMARK_TEMPLATE(train_step, RoPE, Precision::bf16)
    ->Name("train_step_bf16<RoPE>")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->ComputeStatistics("min", posenc_bench::minimum);
BENCHMARK_TEMPLATE(train_step, ALiBiSingleSlope, Precision::bf16)
    ->Name("train_step_bf16<ALiBiSingleSlope>")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->ComputeStatistics("min", posenc_bench::minimum);
BENCHMARK_TEMPLATE(generate_tokens, true)
    ->Name("generate/cached")
    ->Arg(64)
    ->Arg(384)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->ComputeStatistics("min", posenc_bench::minimum);
BENCHMARK_TEMPLATE(generate_tokens, false)
    ->Name("generate/recompute")
    ->Arg(64)
    ->Arg(384)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->ComputeStatistics("min", posenc_bench::minimum);
BENCHMARK(evaluate_validation)
    ->Name("evaluate/full_validation_pass")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(1);

BENCHMARK_TEMPLATE(generate_past_window, RoPE)
    ->Name("generate_past_window<RoPE>")
    ->Arg(1000)
    ->Arg(3000)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->ComputeStatistics("min", posenc_bench::minimum);
BENCHMARK_TEMPLATE(generate_past_window, ALiBi)
    ->Name("generate_past_window<ALiBi>")
    ->Arg(1000)
    ->Arg(3000)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->ComputeStatistics("min", posenc_bench::minimum);
BENCHMARK_TEMPLATE(generate_past_window, Learned)
    ->Name("generate_past_window<Learned>")
    ->Arg(1000)
    ->Arg(3000)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->ComputeStatistics("min", posenc_bench::minimum);

BENCHMARK_MAIN();
