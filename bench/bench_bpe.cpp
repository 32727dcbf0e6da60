// Byte-level BPE on Tiny Shakespeare: training and encoding (bytes/s), beside minbpe's naive algorithm.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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

// Every occurrence of `pair` in `ids`, left to right, replaced by `id` (in "aaa", (a, a) joins once).
void merge_pair(std::vector<TokenId>& ids, std::pair<TokenId, TokenId> pair, TokenId id) {
  std::size_t kept = 0;
  for (std::size_t j = 0; j < ids.size(); ++j) {
    const bool match = j + 1 < ids.size() && ids[j] == pair.first && ids[j + 1] == pair.second;
    ids[kept++] = match ? id : ids[j];
    j += match ? 1 : 0;
  }
  ids.resize(kept);
}

// minbpe's RegexTokenizer, written again as the baseline: every merge counts every pair of every
// chunk of the text again (O(merges × text)), ties to the smallest pair as BpeTokenizer's.
std::vector<BpeMerge> naive_train(std::string_view text, std::size_t vocab_size) {
  std::vector<std::vector<TokenId>> chunks;
  for (const std::string_view chunk : bpe_chunks(text)) {
    chunks.emplace_back(chunk.begin(), chunk.end());
    for (TokenId& id : chunks.back()) id = static_cast<unsigned char>(id);
  }
  std::vector<BpeMerge> merges;
  while (BpeTokenizer::byte_tokens + merges.size() < vocab_size) {
    std::map<std::pair<TokenId, TokenId>, std::size_t> stats;  // ordered: the first maximum is the smallest pair
    for (const auto& ids : chunks)
      for (std::size_t j = 0; j + 1 < ids.size(); ++j) ++stats[{ids[j], ids[j + 1]}];
    std::pair<TokenId, TokenId> best{};
    std::size_t best_count = 0;
    for (const auto& [pair, count] : stats)
      if (count > best_count) {
        best = pair;
        best_count = count;
      }
    if (best_count == 0) break;
    const auto id = static_cast<TokenId>(BpeTokenizer::byte_tokens + merges.size());
    merges.push_back({best.first, best.second});
    for (auto& ids : chunks) merge_pair(ids, best, id);
  }
  return merges;
}

// minbpe's encode: each chunk on its own, the lowest-ranked pair merged until none has a merge;
// no cache of chunks seen before.
std::vector<TokenId> naive_encode(const BpeTokenizer& bpe, std::string_view text) {
  std::map<std::pair<TokenId, TokenId>, TokenId> rank;
  for (std::size_t i = 0; i < bpe.merges().size(); ++i)
    rank[{bpe.merges()[i].left, bpe.merges()[i].right}] = static_cast<TokenId>(BpeTokenizer::byte_tokens + i);
  std::vector<TokenId> out;
  for (const std::string_view chunk : bpe_chunks(text)) {
    std::vector<TokenId> ids(chunk.begin(), chunk.end());
    for (TokenId& id : ids) id = static_cast<unsigned char>(id);
    while (ids.size() >= 2) {
      TokenId first = std::numeric_limits<TokenId>::max();
      std::pair<TokenId, TokenId> pair{};
      for (std::size_t j = 0; j + 1 < ids.size(); ++j)
        if (const auto it = rank.find({ids[j], ids[j + 1]}); it != rank.end() && it->second < first) {
          first = it->second;
          pair = it->first;
        }
      if (first == std::numeric_limits<TokenId>::max()) break;
      merge_pair(ids, pair, first);
    }
    out.insert(out.end(), ids.begin(), ids.end());
  }
  return out;
}

// The naive training to a vocabulary of state.range(0) tokens; its merges must be BpeTokenizer's.
void bpe_train_naive(benchmark::State& state) {
  if (!have_corpus(state)) return;
  const auto vocab = static_cast<std::size_t>(state.range(0));
  std::vector<BpeMerge> merges;
  for (auto _ : state) merges = naive_train(corpus(), vocab);
  if (merges != BpeTokenizer::train(corpus(), vocab).merges()) state.SkipWithError("the two trainings disagree");
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * corpus().size()));
}

// The naive encoding of the corpus; its tokens must be BpeTokenizer's.
void bpe_encode_naive(benchmark::State& state) {
  if (!have_corpus(state)) return;
  const BpeTokenizer bpe = BpeTokenizer::train(corpus(), static_cast<std::size_t>(state.range(0)));
  std::vector<TokenId> ids;
  for (auto _ : state) ids = naive_encode(bpe, corpus());
  if (ids != bpe.encode(corpus())) state.SkipWithError("the two encodings disagree");
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * corpus().size()));
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
BENCHMARK(bpe_train_naive)->Name("bpe/train_naive")->Arg(512)->Arg(1024)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK(bpe_encode_naive)->Name("bpe/encode_naive")->Arg(1024)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
