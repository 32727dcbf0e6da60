// Byte-level BPE on Tiny Shakespeare: training to a vocabulary size, and encoding (bytes/s).
#include <benchmark/benchmark.h>

#include <filesystem>
#include <string>

#include <posenc/transformer.hpp>

using namespace posenc;

namespace {

// The corpus, read once; empty when it has not been fetched.
const std::string& corpus() {
  static const std::string text = [] {
    const std::filesystem::path path = std::filesystem::path(POSENC_SOURCE_DIR) / "data/tinyshakespeare/input.txt";
    return std::filesystem::exists(path) ? read_text_file(path.string()) : std::string();
  }();
  return text;
}

bool have_corpus(benchmark::State& state) {
  if (!corpus().empty()) return true;
  state.SkipWithError("data/tinyshakespeare/input.txt is missing: run scripts/fetch-data.sh");
  return false;
}

// Merges learned from the whole corpus up to a vocabulary of state.range(0) tokens.
void bpe_train(benchmark::State& state) {
  if (!have_corpus(state)) return;
  const auto vocab = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(BpeTokenizer::train(corpus(), vocab));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * corpus().size()));
}

// The whole corpus encoded with a vocabulary of state.range(0) tokens learned from it.
void bpe_encode(benchmark::State& state) {
  if (!have_corpus(state)) return;
  const BpeTokenizer bpe = BpeTokenizer::train(corpus(), static_cast<std::size_t>(state.range(0)));
  std::size_t tokens = 0;
  for (auto _ : state) {
    const std::vector<TokenId> ids = bpe.encode(corpus());
    tokens = ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * corpus().size()));
  state.counters["bytes/token"] = static_cast<double>(corpus().size()) / static_cast<double>(tokens);
}

// Decoding the corpus's tokens back to its bytes.
void bpe_decode(benchmark::State& state) {
  if (!have_corpus(state)) return;
  const BpeTokenizer bpe = BpeTokenizer::train(corpus(), static_cast<std::size_t>(state.range(0)));
  const std::vector<TokenId> ids = bpe.encode(corpus());
  for (auto _ : state) benchmark::DoNotOptimize(bpe.decode(ids));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * corpus().size()));
}

}  // namespace

BENCHMARK(bpe_train)->Name("bpe/train")->Arg(512)->Arg(1024)->Arg(4096)->Unit(benchmark::kMillisecond);
BENCHMARK(bpe_encode)->Name("bpe/encode")->Arg(512)->Arg(1024)->Arg(4096)->Unit(benchmark::kMillisecond);
BENCHMARK(bpe_decode)->Name("bpe/decode")->Arg(1024)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
