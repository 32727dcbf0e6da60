// Causal attention forward + backward per policy at B = 32, H = 4, head dim 48: FLOP/s of the causal work.
//   python3 bench/attention_table.py prints it as a table per T with ratios to NoPE. No "min"
//   statistic here: Google Benchmark's min of a FLOP/s counter is the slowest rate; the script
//   takes the fastest repetition's time and computes its rate from it.
#include <benchmark/benchmark.h>

#include <algorithm>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <posenc/transformer.hpp>

#include "bench_common.hpp"
#include "bench_context.hpp"

namespace {

using namespace posenc;
constexpr std::size_t B = 32, H = 4, hd = 48, C = H * hd;

// FLOPs of causal attention forward + backward per (batch, head): six (T×T)·hd products
// (q·kᵀ and a·v forward; da, dv, dq, dk backward) over the T(T+1)/2 unmasked (query, key) pairs.
double causal_flops(std::size_t T) {
  return 6.0 * 2.0 * static_cast<double>(hd) * static_cast<double>(T * (T + 1) / 2) *
         static_cast<double>(B * H);
}

template <class Policy, bool Fast>
void attention_fwd_bwd(benchmark::State& state) {
  posenc_bench::setup_threads();
  const auto T = static_cast<std::size_t>(state.range(0));
  auto table = std::make_shared<ParameterTable>();
  typename Policy::template Attention<float, H, hd> position(*table, "", T);
  ParameterStore<float> store(table);  // T5, Kerple and FIRE register trainable parameters
  store.initialize(1);
  auto hooks = position.bind(store, T);
  const std::vector<float> qkv0 = posenc_bench::random_floats(B * T * 3 * C, 1);
  const std::vector<float> dout = posenc_bench::random_floats(B * T * C, 2);
  std::vector<float> qkv = qkv0, out(B * T * C), att(B * H * T * T), dqkv(qkv.size());
  using Hooks = decltype(hooks);
  std::vector<float> scratch(  // the fast kernel's (the reference allocates its own)
      fast::attention_scratch_size(T, C, H, max_parallel_threads(), Hooks::has_bias_parameters));
  for (auto _ : state) {
    std::copy(qkv0.begin(), qkv0.end(), qkv.begin());  // forward rotates q and k in place
    std::fill(dqkv.begin(), dqkv.end(), 0.0f);
    if constexpr (Fast) {
      fast::attention_forward(out.data(), att.data(), qkv.data(), B, T, C, H, hooks);
      fast::attention_backward(dqkv.data(), scratch.data(), dout.data(), qkv.data(), att.data(), B,
                               T, C, H, hooks);
    } else {
      attention_forward(out.data(), att.data(), qkv.data(), B, T, C, H, hooks);
      attention_backward(dqkv.data(), dout.data(), qkv.data(), att.data(), B, T, C,
                         H, hooks);
    }
    benchmark::DoNotOptimize(dqkv.data());
    benchmark::ClobberMemory();
  }
  state.counters["FLOP/s"] =
      benchmark::Counter(causal_flops(T), benchmark::Counter::kIsIterationInvariantRate);
}

// A user's mask written as a bias: keys farther than `window` get −Penalty, the way many write a
// local mask (−1e4), against the same mask at −30 (e^−30 is still a normal float). Both must cost
// what ALiBi costs: a large penalty once fed subnormal probabilities into the GEMMs.
template <int Penalty>
struct LocalWindowMask {
  static constexpr std::string_view name = Penalty == 30 ? "window-mask-30" : "window-mask-1e4";
  static constexpr std::string_view summary = "keys beyond 16 positions get a large negative bias";
  static constexpr std::size_t window = 16;
  template <std::floating_point S, std::size_t Dim>
  using Embedding = NoPositionSignal<S, Dim>;
  template <std::floating_point S, std::size_t Heads, std::size_t HeadDim>
  struct Attention {
    Attention(ParameterTable&, std::string_view, std::size_t) {}
    struct Hooks : FixedBiasHooks {
      void add_bias(S* row, std::size_t, std::size_t query, std::size_t keys) const {
        for (std::size_t j = 0; j < keys; ++j)
          if (relative_distance(query, j) > window) row[j] -= static_cast<S>(Penalty);
      }
    };
    Hooks bind(ParameterStore<S>&, std::size_t) const { return {}; }
  };
};

// Every policy of the registry, fast and reference kernels. (Learned and Sinusoidal add their signal
// to the embeddings and leave attention as NoPE does; ALiBiSingleSlope costs what ALiBi costs.)
void register_every_policy() {
  for_each_policy([]<class P>() {
    benchmark::RegisterBenchmark(("attention/fast/" + std::string(P::name)).c_str(), attention_fwd_bwd<P, true>)
        ->Arg(128)->Arg(256)->Arg(512)->Unit(benchmark::kMillisecond)->UseRealTime();
  });
  for (const auto& [name, run] :
       {std::pair{"attention/fast/window-mask-30", &attention_fwd_bwd<LocalWindowMask<30>, true>},
        std::pair{"attention/fast/window-mask-1e4", &attention_fwd_bwd<LocalWindowMask<10000>, true>}})
    benchmark::RegisterBenchmark(name, run)->Arg(128)->Arg(256)->Arg(512)->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  for_each_policy([]<class P>() {  // the tested ground truth, for the speed-up
    benchmark::RegisterBenchmark(("attention/reference/" + std::string(P::name)).c_str(), attention_fwd_bwd<P, false>)
        ->Arg(128)->Arg(256)->Unit(benchmark::kMillisecond)->UseRealTime();
  });
}

}  // namespace

int main(int argc, char** argv) {
  // the context names the shape and threads, which the rows' names do not
  benchmark::AddCustomContext("shape", "B=32 H=4 head_dim=48; the argument is the sequence length T");
  posenc_bench::add_compute_context();
  register_every_policy();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
