// Causal attention per policy, H = 4, head dim 48: forward + backward at B = 32 (training) and the
// forward alone at B = 1 to T = 8192 (evaluation), FLOP/s of the causal work and the heap's peak.
//   python3 bench/attention_table.py prints it as a table per T with ratios to NoPE. No "min"
//   statistic here: Google Benchmark's min of a FLOP/s counter is the slowest rate; the script
//   takes the fastest repetition's time and computes its rate from it.
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <posenc/transformer.hpp>

#include "bench_common.hpp"
#include "bench_context.hpp"

// The heap's bytes in use and their peak, counted by this program's operator new and delete, so
// that a benchmark's peak (inputs, outputs and whatever the kernel allocates) is measured, not
// computed. oneDNN's and OpenBLAS's own buffers (malloc) are not counted: the GEMMs' working
// space, the same for every kernel.
std::atomic<std::int64_t> heap_in_use{0}, heap_peak{0};

void* counted_new(std::size_t n) {
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) throw std::bad_alloc();
  const std::int64_t now = heap_in_use += static_cast<std::int64_t>(malloc_usable_size(p));
  for (std::int64_t peak = heap_peak.load(); now > peak && !heap_peak.compare_exchange_weak(peak, now);) {
  }
  return p;
}
void counted_delete(void* p) noexcept {
  if (p == nullptr) return;
  heap_in_use -= static_cast<std::int64_t>(malloc_usable_size(p));
  std::free(p);
}

void* operator new(std::size_t n) { return counted_new(n); }
void* operator new[](std::size_t n) { return counted_new(n); }
void operator delete(void* p) noexcept { counted_delete(p); }
void operator delete[](void* p) noexcept { counted_delete(p); }
void operator delete(void* p, std::size_t) noexcept { counted_delete(p); }
void operator delete[](void* p, std::size_t) noexcept { counted_delete(p); }

namespace {

using namespace posenc;
constexpr std::size_t B = 32, H = 4, hd = 48, C = H * hd;
constexpr std::size_t eval_batch = 1;

// The heap's peak while a benchmark runs, above where it stood when the benchmark began (so its
// inputs and outputs count, and whatever the kernel allocates): the counter heap_peak_bytes.
// (Google Benchmark 1.7's MemoryManager reports its result on one repetition and garbage on the
// others.)
class HeapPeak {
 public:
  HeapPeak() : base_(heap_in_use.load()) { heap_peak = base_; }
  void report(benchmark::State& state) const {
    state.counters["heap_peak_bytes"] = static_cast<double>(heap_peak.load() - base_);
  }

 private:
  std::int64_t base_;
};

// FLOPs of causal attention per (batch, head), over the T(T+1)/2 unmasked (query, key) pairs:
// products of (T×T)·hd, two forward (q·kᵀ and a·v) and four backward (da, dv, dq, dk).
double causal_flops(std::size_t T, std::size_t batch, int products) {
  return products * 2.0 * static_cast<double>(hd) * static_cast<double>(T * (T + 1) / 2) *
         static_cast<double>(batch * H);
}

// A policy's attention at T positions with its parameters (T5, Kerple and FIRE register trainable
// ones), initialised as a model's are.
template <class Policy>
class PolicyAttention {
 public:
  explicit PolicyAttention(std::size_t T) : T_(T), attention_(*table_, "", T), store_(table_) { store_.initialize(1); }
  auto bind() { return attention_.bind(store_, T_); }

 private:
  std::size_t T_;
  std::shared_ptr<ParameterTable> table_ = std::make_shared<ParameterTable>();
  typename Policy::template Attention<float, H, hd> attention_;
  ParameterStore<float> store_;
};

// How a benchmark runs attention: posenc's kernels keeping the (B,H,T,T) probabilities for the
// backward (as a training pass does within fast::attention_probability_budget), posenc's kernels
// recomputing them in tiles (memory linear in T), the kept kernels of a bf16 training pass
// (products in bfloat16, fast::attention_forward_bf16), or the reference kernels.
enum class Kernel { kept, tiled, bf16, reference };

template <class Policy, Kernel kernel>
void attention_fwd_bwd(benchmark::State& state) {
  const HeapPeak heap;
  posenc_bench::setup_threads();
  const auto T = static_cast<std::size_t>(state.range(0));
  PolicyAttention<Policy> position(T);
  auto hooks = position.bind();
  const std::vector<float> qkv0 = posenc_bench::random_floats(B * T * 3 * C, 1);
  const std::vector<float> dout = posenc_bench::random_floats(B * T * C, 2);
  std::vector<float> qkv = qkv0, out(B * T * C), dqkv(qkv.size());
  const bool kept = kernel != Kernel::tiled;
  std::vector<float> att(kept ? B * H * T * T : 0), lse(B * H * T);
  using Hooks = decltype(hooks);
  std::vector<float> scratch(  // the fast kernels' (the reference allocates its own)
      kernel == Kernel::reference ? 0 : fast::attention_scratch_size<Hooks>(T, C, H, max_parallel_threads(), kept));
  float* probabilities = kept ? att.data() : nullptr;
  for (auto _ : state) {
    std::copy(qkv0.begin(), qkv0.end(), qkv.begin());  // forward rotates q and k in place
    std::fill(dqkv.begin(), dqkv.end(), 0.0f);
    if constexpr (kernel == Kernel::bf16) {
      fast::attention_forward_bf16(out.data(), lse.data(), probabilities, qkv.data(), B, T, C, H, hooks);
      fast::attention_backward_bf16(dqkv.data(), scratch.data(), dout.data(), qkv.data(), out.data(), probabilities,
                                    B, T, C, H, hooks);
    } else if constexpr (kernel != Kernel::reference) {
      fast::attention_forward(out.data(), lse.data(), probabilities, qkv.data(), B, T, C, H, hooks);
      fast::attention_backward(dqkv.data(), scratch.data(), dout.data(), qkv.data(), out.data(), lse.data(),
                               probabilities, B, T, C, H, hooks);
    } else {
      attention_forward(out.data(), att.data(), qkv.data(), B, T, C, H, hooks);
      attention_backward(dqkv.data(), dout.data(), qkv.data(), att.data(), B, T, C,
                         H, hooks);
    }
    benchmark::DoNotOptimize(dqkv.data());
    benchmark::ClobberMemory();
  }
  state.counters["FLOP/s"] =
      benchmark::Counter(causal_flops(T, B, 6), benchmark::Counter::kIsIterationInvariantRate);
  heap.report(state);
}

// The forward alone with no backward to follow, as an evaluation runs it: the fast kernel keeps
// nothing beyond its tiles, the reference its (B,H,T,T) probabilities.
template <class Policy, bool Fast>
void attention_eval(benchmark::State& state) {
  const HeapPeak heap;
  posenc_bench::setup_threads();
  const auto T = static_cast<std::size_t>(state.range(0));
  PolicyAttention<Policy> position(T);
  auto hooks = position.bind();
  const std::vector<float> qkv0 = posenc_bench::random_floats(eval_batch * T * 3 * C, 1);
  std::vector<float> qkv = qkv0, out(eval_batch * T * C), att(Fast ? 0 : eval_batch * H * T * T);
  for (auto _ : state) {
    std::copy(qkv0.begin(), qkv0.end(), qkv.begin());  // forward rotates q and k in place
    if constexpr (Fast) fast::attention_forward(out.data(), static_cast<float*>(nullptr), static_cast<float*>(nullptr),
                                                qkv.data(), eval_batch, T, C, H, hooks);
    else attention_forward(out.data(), att.data(), qkv.data(), eval_batch, T, C, H, hooks);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.counters["FLOP/s"] =
      benchmark::Counter(causal_flops(T, eval_batch, 2), benchmark::Counter::kIsIterationInvariantRate);
  heap.report(state);
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
      void add_bias(S* row, std::size_t, std::size_t query, std::size_t first_key, std::size_t keys) const {
        for (std::size_t j = 0; j < keys; ++j)
          if (relative_distance(query, first_key + j) > window) row[j] -= static_cast<S>(Penalty);
      }
    };
    Hooks bind(ParameterStore<S>&, std::size_t) const { return {}; }
  };
};

// Every policy of the registry, fast and reference kernels. (Learned and Sinusoidal add their signal
// to the embeddings and leave attention as NoPE does; ALiBiSingleSlope costs what ALiBi costs.)
void register_every_policy() {
  for_each_policy([]<class P>() {
    benchmark::RegisterBenchmark(("attention/fast/" + std::string(P::name)).c_str(),
                                 attention_fwd_bwd<P, Kernel::kept>)
        ->Arg(128)->Arg(256)->Arg(512)->Unit(benchmark::kMillisecond)->UseRealTime();
    if (!bf16_unsupported_reason())
      benchmark::RegisterBenchmark(("attention/bf16/" + std::string(P::name)).c_str(),
                                   attention_fwd_bwd<P, Kernel::bf16>)
          ->Arg(128)->Arg(256)->Arg(512)->Unit(benchmark::kMillisecond)->UseRealTime();
    // the kept probabilities at 2048 would be 2 GB
    benchmark::RegisterBenchmark(("attention/tiled/" + std::string(P::name)).c_str(),
                                 attention_fwd_bwd<P, Kernel::tiled>)
        ->Arg(128)->Arg(512)->Arg(2048)->Unit(benchmark::kMillisecond)->UseRealTime();
  });
  for (const auto& [name, run] :
       {std::pair{"attention/fast/window-mask-30", &attention_fwd_bwd<LocalWindowMask<30>, Kernel::kept>},
        std::pair{"attention/fast/window-mask-1e4", &attention_fwd_bwd<LocalWindowMask<10000>, Kernel::kept>}})
    benchmark::RegisterBenchmark(name, run)->Arg(128)->Arg(256)->Arg(512)->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  for_each_policy([]<class P>() {  // the tested ground truth, for the speed-up
    benchmark::RegisterBenchmark(("attention/reference/" + std::string(P::name)).c_str(),
                                 attention_fwd_bwd<P, Kernel::reference>)
        ->Arg(128)->Arg(256)->Unit(benchmark::kMillisecond)->UseRealTime();
  });
  for_each_policy([]<class P>() {
    benchmark::RegisterBenchmark(("attention-eval/fast/" + std::string(P::name)).c_str(), attention_eval<P, true>)
        ->Arg(512)->Arg(2048)->Arg(8192)->Unit(benchmark::kMillisecond)->UseRealTime();
    // the reference's probabilities at 8192 would be 1 GB
    benchmark::RegisterBenchmark(("attention-eval/reference/" + std::string(P::name)).c_str(),
                                 attention_eval<P, false>)
        ->Arg(512)->Arg(2048)->Unit(benchmark::kMillisecond)->UseRealTime();
  });
}

}  // namespace

int main(int argc, char** argv) {
  // the context names the shape and threads, which the rows' names do not
  benchmark::AddCustomContext("shape", "H=4 head_dim=48, B=32 (attention/) or 1 (attention-eval/); the argument is "
                                       "the sequence length T");
  posenc_bench::add_compute_context();
  register_every_policy();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
