// profile_step: where one training step of the study model spends its time, region by region (profiled()).
//   profile_step [--policy rope] [--steps 20] [--warmup 3] [--precision fp32|bf16] [--dropout P] [--chunk 8]
//   threads from POSENC_NUM_THREADS
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include <posenc/transformer.hpp>

#include "bench_common.hpp"

namespace {

template <class Policy>
int run(int steps, int warmup, posenc::Precision precision, double dropout, std::size_t chunk) {
  using namespace posenc;
  StudyTransformer<Policy> model(ModelConfig{.vocab_size = posenc_bench::study_vocab,
                                             .context = posenc_bench::study_context,
                                             .dropout = dropout,
                                             .chunk = chunk,
                                             .precision = precision});
  if (dropout > 0) model.set_dropout_pass(1);  // masks as a training step's (Trainer sets one per step)
  auto optimizer = AdamW(model);
  Rng rng(7);
  Tokens x({posenc_bench::study_batch, posenc_bench::study_context}), y(x.shape());
  for (auto& id : x) id = static_cast<TokenId>(rng.uniform() * 65.0) % 65;
  for (auto& id : y) id = static_cast<TokenId>(rng.uniform() * 65.0) % 65;
  for (int i = 0; i < warmup; ++i) train_step(model, x, y, optimizer);
  profile_reset();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) train_step(model, x, y, optimizer);
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::vector<ProfileEntry> entries = profile_entries();
  std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.seconds > b.seconds; });
  const GemmReport gemm = describe_gemm();
  std::printf(
      "%s, %s, %s GEMMs (%s), %d threads: %.1f ms per training step, %.0f tokens/s (%d steps after %d warm-up)\n",
      std::string(Policy::name).c_str(), precision_name(precision), gemm.backend.c_str(), gemm.kernel.c_str(),
      num_threads(), 1e3 * total / steps,
      static_cast<double>(posenc_bench::study_batch * posenc_bench::study_context) * steps / total, steps, warmup);
  std::printf("| region | ms per step | share |\n|---|---:|---:|\n");
  double covered = 0;
  for (const auto& e : entries) {
    covered += e.seconds;
    std::printf("| %s | %.2f | %.1f%% |\n", e.name, 1e3 * e.seconds / steps, 100.0 * e.seconds / total);
  }
  std::printf("| (outside the regions) | %.2f | %.1f%% |\n", 1e3 * (total - covered) / steps,
              100.0 * (total - covered) / total);
  // The linear layers' GEMM rate: forward x·Wᵀ, backward dx = dy·W and dW = dyᵀ·x, each 2·N·C·OC
  // FLOPs, over the time of the "linear" regions (which also hold the bias adds and sums).
  constexpr double D = posenc_bench::study_dim, V = posenc_bench::study_vocab;
  const double tokens = posenc_bench::study_batch * posenc_bench::study_context;
  const double per_token = 2.0 * (3 * D * D + D * D + 4 * D * D + 4 * D * D) * 3 /* layers */ + 2.0 * D * V;
  const double flops = 3.0 * per_token * tokens;  // forward + the two backward products
  double linear_seconds = 0;
  for (const auto& e : entries)
    if (std::string_view(e.name).find("linear") != std::string_view::npos) linear_seconds += e.seconds;
  std::printf("\nlinear layers: %.1f GFLOP per step in %.1f ms: %.0f GFLOP/s\n", flops / 1e9,
              1e3 * linear_seconds / steps, flops * steps / linear_seconds / 1e9);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string policy = "rope";
  int steps = 20, warmup = 3;
  std::string precision_text = "fp32";
  double dropout = 0;
  int chunk = 8;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "profile_step: %s needs a value\n", argv[i]);
      return 2;
    }
    if (arg == "--policy") policy = argv[++i];
    else if (arg == "--steps") steps = std::atoi(argv[++i]);
    else if (arg == "--warmup") warmup = std::atoi(argv[++i]);
    else if (arg == "--precision") precision_text = argv[++i];
    else if (arg == "--dropout") dropout = std::atof(argv[++i]);
    else if (arg == "--chunk") chunk = std::atoi(argv[++i]);
    else {
      std::fprintf(
          stderr,
          "profile_step: unknown option %s (expected --policy, --steps, --warmup, --precision, --dropout, --chunk)\n",
          argv[i]);
      return 2;
    }
  }
  if (steps < 1 || warmup < 0 || !(dropout >= 0 && dropout < 1) || chunk < 1) {
    std::fprintf(stderr, "profile_step: --steps and --chunk must be ≥ 1, --warmup ≥ 0 and --dropout in [0, 1)\n");
    return 2;
  }
  try {
    const posenc::Precision precision = posenc::parse_precision(precision_text);
    const auto chunk_size = static_cast<std::size_t>(chunk);
    if (policy == "nope") return run<posenc::NoPE>(steps, warmup, precision, dropout, chunk_size);
    if (policy == "learned") return run<posenc::Learned>(steps, warmup, precision, dropout, chunk_size);
    if (policy == "sinusoidal") return run<posenc::Sinusoidal>(steps, warmup, precision, dropout, chunk_size);
    if (policy == "rope") return run<posenc::RoPE>(steps, warmup, precision, dropout, chunk_size);
    if (policy == "alibi") return run<posenc::ALiBi>(steps, warmup, precision, dropout, chunk_size);
    if (policy == "alibi-single") return run<posenc::ALiBiSingleSlope>(steps, warmup, precision, dropout, chunk_size);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "profile_step: %s\n", e.what());
    return 2;
  }
  std::fprintf(stderr, "profile_step: unknown policy '%s'\n", policy.c_str());
  return 2;
}
