// The study model's GEMM shapes on every GEMM backend of this build, one thread each, and parallel_gemm: FLOP/s.
//   bench_gemm      rows named gemm/<backend>/<shape> (openblas, onednn, onednn_bf16 where the CPU has
//                   bf16, posenc_parallel and posenc_parallel_bf16: gemm() split over posenc's threads
//                   as the model calls it);
//                   the context names the kernels; and rows named linear/<precision>/<layer>/<pass>/<cache>:
//                   fast::linear_forward (with its bias) or linear_backward (dx, dW, db) of the study's
//                   four layer shapes, "warm" on one set of operands, "cold" on a new set each time from
//                   a pool of 256 MB (as in the training step, where each layer's activations were
//                   written long before). No repetition statistics: Google Benchmark's "min" of a
//                   FLOP/s counter would be the slowest rate.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include <posenc/kernels/fast_linear.hpp>
#include <posenc/kernels/gemm_report.hpp>
#include <posenc/kernels/parallel.hpp>
#include <posenc/model/char_transformer.hpp>
#include <posenc/threads.hpp>

#include "bench_common.hpp"
#include "bench_context.hpp"

namespace {

using namespace posenc;

// C (M,N) = op(A)·op(B) as the model computes them: a pass holds ModelConfig::chunk (8) sequences
// of 128 tokens, so the linear layers multiply 1,024 rows at a time.
struct Shape {
  const char* name;
  std::size_t m, n, k;
  bool trans_a, trans_b;
};
constexpr std::size_t tokens = posenc::ModelConfig{}.chunk * posenc_bench::study_context;
constexpr std::size_t D = posenc_bench::study_dim;
constexpr Shape shapes[] = {
    // forward: x·Wᵀ
    {"qkv", tokens, 3 * D, D, false, true},
    {"attn_proj", tokens, D, D, false, true},
    {"mlp_fc", tokens, 4 * D, D, false, true},
    {"mlp_proj", tokens, D, 4 * D, false, true},
    {"lm_head", tokens, posenc_bench::study_vocab, D, false, true},
    // backward: dx = dy·W and dW = dyᵀ·x
    {"qkv_dx", tokens, D, 3 * D, false, false},
    {"mlp_fc_dx", tokens, D, 4 * D, false, false},
    {"mlp_proj_dx", tokens, 4 * D, D, false, false},
    {"qkv_dw", 3 * D, D, tokens, true, false},
    {"mlp_fc_dw", 4 * D, D, tokens, true, false},
    {"mlp_proj_dw", D, 4 * D, tokens, true, false},
    // one head's scores, q·kᵀ at T = 128, head dim 48
    {"head_qk", posenc_bench::study_context, posenc_bench::study_context, D / posenc_bench::study_heads,
     false, true},
};

using GemmFn = void (*)(bool, bool, std::size_t, std::size_t, std::size_t, float, const float*,
                        std::size_t, const float*, std::size_t, float, float*, std::size_t);

void run(benchmark::State& state, const Shape& s, GemmFn gemm_fn, bool parallel,
         Precision precision = Precision::fp32) {
  const auto a = posenc_bench::random_floats(s.m * s.k, 8), b = posenc_bench::random_floats(s.k * s.n, 9);
  std::vector<float> c(s.m * s.n);
  const std::size_t lda = s.trans_a ? s.m : s.k, ldb = s.trans_b ? s.k : s.n;
  // one thread for a backend's own rate (oneDNN would otherwise spread a call over posenc's
  // thread count); posenc's thread count for parallel_gemm
  posenc::set_num_threads(parallel ? posenc::default_num_threads() : 1);
  for (auto _ : state) {
    if (parallel)
      parallel_gemm<float>(s.trans_a, s.trans_b, s.m, s.n, s.k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, c.data(),
                           s.n, precision);
    else
      gemm_fn(s.trans_a, s.trans_b, s.m, s.n, s.k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, c.data(), s.n);
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["FLOP/s"] = benchmark::Counter(2.0 * s.m * s.n * s.k, benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel("M=" + std::to_string(s.m) + " N=" + std::to_string(s.n) + " K=" + std::to_string(s.k) +
                 (s.trans_a ? " Aᵀ" : "") + (s.trans_b ? " Bᵀ" : ""));
}

// A linear layer's pass over rows × in → out, as DecoderBlock calls it; cold cycles through enough
// operand sets that none is in a cache when it is used again.
void linear_pass(benchmark::State& state, std::size_t in, std::size_t out, bool backward, bool cold,
                 Precision precision) {
  posenc::set_num_threads(posenc::default_num_threads());
  const std::size_t per_set = 2 * tokens * (in + out);  // x, dx, y and dy (floats)
  const std::size_t sets = cold ? std::max<std::size_t>(2, (std::size_t{256} << 20) / (4 * per_set)) : 1;
  std::vector<std::vector<float>> operands;
  for (std::size_t i = 0; i < sets; ++i) operands.push_back(posenc_bench::random_floats(per_set, 20 + i));
  const auto w = posenc_bench::random_floats(out * in, 11), b = posenc_bench::random_floats(out, 12);
  std::vector<float> dw(out * in), db(out);
  std::size_t next = 0;
  for (auto _ : state) {
    float* x = operands[next].data();
    float* dx = x + tokens * in;
    float* y = dx + tokens * in;
    float* dy = y + tokens * out;
    next = (next + 1) % sets;
    if (backward)
      fast::linear_backward(dx, dw.data(), db.data(), dy, x, w.data(), tokens, in, out, true, precision);
    else
      fast::linear_forward(y, x, w.data(), b.data(), tokens, in, out, precision);
    benchmark::DoNotOptimize(dw.data());
  }
  state.counters["FLOP/s"] = benchmark::Counter((backward ? 4.0 : 2.0) * tokens * in * out,
                                                benchmark::Counter::kIsIterationInvariantRate);
}

void register_linear_passes() {
  struct Layer {
    const char* name;
    std::size_t in, out;
  };
  constexpr Layer layers[] = {{"qkv", D, 3 * D}, {"attn_proj", D, D}, {"mlp_fc", D, 4 * D}, {"mlp_proj", 4 * D, D}};
  std::vector<Precision> precisions{Precision::fp32};
  if (!bf16_unsupported_reason()) precisions.push_back(Precision::bf16);
  for (const Precision precision : precisions)
    for (const Layer& layer : layers)
      for (const bool backward : {false, true})
        for (const bool cold : {false, true})
          benchmark::RegisterBenchmark((std::string("linear/") + precision_name(precision) + "/" + layer.name + "/" +
                                        (backward ? "backward" : "forward") + "/" + (cold ? "cold" : "warm"))
                                           .c_str(),
                                       [=](benchmark::State& st) {
                                         linear_pass(st, layer.in, layer.out, backward, cold, precision);
                                       })
              ->UseRealTime();
}

void register_all() {
  struct Backend {
    const char* name;
    GemmFn fn;
  };
  std::vector<Backend> backends{{"openblas", &gemm_backends::openblas<float>}};
#if defined(POSENC_GEMM_ONEDNN)
  backends.push_back({"onednn", &gemm_backends::onednn});
  // bf16 as training runs it: the float operands rounded (part of the time), float accumulation
  if (!bf16_unsupported_reason()) backends.push_back({"onednn_bf16", &gemm_backends::onednn_bf16});
#endif
  for (const Shape& s : shapes) {
    for (const Backend& b : backends)
      benchmark::RegisterBenchmark((std::string("gemm/") + b.name + "/" + s.name).c_str(),
                                   [&s, fn = b.fn](benchmark::State& st) { run(st, s, fn, false); })
          ->UseRealTime();
    // what the model calls: the configured backend, the output split over posenc's threads
    benchmark::RegisterBenchmark((std::string("gemm/posenc_parallel/") + s.name).c_str(),
                                 [&s](benchmark::State& st) { run(st, s, nullptr, true); })
        ->UseRealTime();
    if (!bf16_unsupported_reason())
      benchmark::RegisterBenchmark((std::string("gemm/posenc_parallel_bf16/") + s.name).c_str(),
                                   [&s](benchmark::State& st) { run(st, s, nullptr, true, Precision::bf16); })
          ->UseRealTime();
  }
}

}  // namespace

int main(int argc, char** argv) {
  posenc_bench::add_compute_context();
  register_all();
  register_linear_passes();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
