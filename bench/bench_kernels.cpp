// Layer norm, GELU, softmax cross-entropy and AdamW at the study model's shapes (N = 32·128 rows), in bytes/s.
#include <benchmark/benchmark.h>

#include <algorithm>

#include <cstddef>
#include <vector>

#include <posenc/transformer.hpp>

#include "bench_common.hpp"

namespace {

using namespace posenc;
constexpr std::size_t N = posenc_bench::study_batch * posenc_bench::study_context;
constexpr std::size_t D = posenc_bench::study_dim;
constexpr std::size_t V = posenc_bench::study_vocab;

void bytes_rate(benchmark::State& state, double bytes_per_iteration) {
  state.counters["bytes/s"] = benchmark::Counter(bytes_per_iteration, benchmark::Counter::kIsIterationInvariantRate,
                                                 benchmark::Counter::kIs1024);
}

template <bool Fast>
void layernorm_fwd_bwd(benchmark::State& state) {
  posenc_bench::setup_threads();
  const auto x = posenc_bench::random_floats(N * D, 1), dy = posenc_bench::random_floats(N * D, 2);
  const std::vector<float> w(D, 1.0f), b(D, 0.0f);
  std::vector<float> y(N * D), mean(N), rstd(N), dx(N * D), dw(D), db(D);
  for (auto _ : state) {
    if constexpr (Fast) {
      fast::layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, D);
      fast::layernorm_backward(dx.data(), dw.data(), db.data(), dy.data(), x.data(), w.data(), mean.data(), rstd.data(),
                               N, D);
    } else {
      layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, D);
      layernorm_backward(dx.data(), dw.data(), db.data(), dy.data(), x.data(), w.data(), mean.data(), rstd.data(), N,
                         D);
    }
    benchmark::DoNotOptimize(dx.data());
  }
  // forward reads x, writes y; backward reads x and dy, reads and writes dx (float each)
  bytes_rate(state, 4.0 * N * D * 6);
}

template <bool Fast>
void gelu_fwd_bwd(benchmark::State& state) {
  posenc_bench::setup_threads();
  const std::size_t n = N * 4 * D;
  const auto x = posenc_bench::random_floats(n, 3), dy = posenc_bench::random_floats(n, 4);
  std::vector<float> y(n), dx(n);
  for (auto _ : state) {
    if constexpr (Fast) {
      fast::gelu_forward(y.data(), x.data(), n);
      fast::gelu_backward(dx.data(), x.data(), dy.data(), n);
    } else {
      gelu_forward(y.data(), x.data(), n);
      gelu_backward(dx.data(), x.data(), dy.data(), n);
    }
    benchmark::DoNotOptimize(dx.data());
  }
  bytes_rate(state, 4.0 * n * 6);  // x, y; x, dy, dx read and written
}

// A bf16 step's GELU backward: mlp_proj's float gradient in, its rounding and mlp_fc's bias sums out.
void gelu_backward_bf16(benchmark::State& state) {
  if (const auto reason = bf16_unsupported_reason()) {
    state.SkipWithError(reason->c_str());
    return;
  }
  posenc_bench::setup_threads();
  const std::size_t n = N * 4 * D;
  const auto x = posenc_bench::random_floats(n, 3), dy = posenc_bench::random_floats(n, 4);
  std::vector<Bf16> dx16(n);
  std::vector<float> dbias(4 * D);
  for (auto _ : state) {
    fast::gelu_backward_bf16(dx16.data(), dbias.data(), x.data(), dy.data(), N, 4 * D);
    benchmark::DoNotOptimize(dx16.data());
  }
  bytes_rate(state, 4.0 * n * 2 + 2.0 * n);  // x, dy read; dx16 written
}

template <bool Fast>
void cross_entropy_fwd_bwd(benchmark::State& state) {
  posenc_bench::setup_threads();
  const auto logits = posenc_bench::random_floats(N * V, 5, 2.0);
  std::vector<TokenId> targets(N);
  for (std::size_t n = 0; n < N; ++n) targets[n] = static_cast<TokenId>((n * 7) % V);
  std::vector<float> probs(N * V), dlogits(N * V);
  for (auto _ : state) {
    if constexpr (Fast) {
      benchmark::DoNotOptimize(fast::cross_entropy_forward(probs.data(), logits.data(), targets.data(), N, V));
      fast::cross_entropy_backward(dlogits.data(), probs.data(), targets.data(), N, V);
    } else {
      benchmark::DoNotOptimize(cross_entropy_forward(probs.data(), logits.data(), targets.data(), N, V));
      cross_entropy_backward(dlogits.data(), probs.data(), targets.data(), N, V);
    }
    benchmark::DoNotOptimize(dlogits.data());
  }
  bytes_rate(state, 4.0 * N * V * 5);  // logits, probs; probs, dlogits read and written
}

void adamw(benchmark::State& state) {
  posenc_bench::setup_threads();
  const std::size_t n = 1360001;  // the study model's parameters
  auto p = posenc_bench::random_floats(n, 6);
  const auto g = posenc_bench::random_floats(n, 7);
  std::vector<float> m(n), v(n);
  std::int64_t step = 0;
  for (auto _ : state) {
    adamw_update(p.data(), g.data(), m.data(), v.data(), n, ++step, AdamWConfig{});
    benchmark::DoNotOptimize(p.data());
  }
  bytes_rate(state, 4.0 * n * 7);  // p, m, v read and written, g read
}

}  // namespace

BENCHMARK_TEMPLATE(layernorm_fwd_bwd, true)
    ->Name("layernorm/fast")
    ->UseRealTime()
    ->ComputeStatistics("min", posenc_bench::minimum);
BENCHMARK_TEMPLATE(layernorm_fwd_bwd, false)
    ->Name("layernorm/reference")
    ->UseRealTime()
    ->ComputeStatistics("min", posenc_bench::minimum);
BENCHMARK_TEMPLATE(gelu_fwd_bwd, true)
    ->Name("gelu/fast")
    ->UseRealTime()
    ->ComputeStatistics("min", posenc_bench::minimum);
BENCHMARK_TEMPLATE(gelu_fwd_bwd, false)
    ->Name("gelu/reference")
    ->UseRealTime()
    ->ComputeStatistics("min", posenc_bench::minimum);
BENCHMARK(gelu_backward_bf16)
    ->Name("gelu/bf16_backward")
    ->UseRealTime()
    ->ComputeStatistics("min", posenc_bench::minimum);
BENCHMARK_TEMPLATE(cross_entropy_fwd_bwd, true)
    ->Name("cross_entropy/fast")
    ->UseRealTime()
    ->ComputeStatistics("min", posenc_bench::minimum);
BENCHMARK_TEMPLATE(cross_entropy_fwd_bwd, false)
    ->Name("cross_entropy/reference")
    ->UseRealTime()
    ->ComputeStatistics("min", posenc_bench::minimum);
BENCHMARK(adamw)->Name("adamw")->UseRealTime()->ComputeStatistics("min", posenc_bench::minimum);
BENCHMARK_MAIN();
