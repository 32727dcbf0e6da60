// BpeTokenizer: byte-level byte-pair encoding (GPT-2's, as minbpe): the 256 bytes, then merges of token pairs.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "posenc/config.hpp"
#include "posenc/tensor.hpp"

namespace posenc {

// The chunks BPE sees one at a time, so that no merge crosses their borders: GPT-2's pre-split
// ('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+) read on bytes,
// without Unicode's tables: a letter is an ASCII letter or any byte ≥ 0x80 (so a UTF-8 character
// never splits, and a word of any script stays one chunk with its accents), a digit is 0–9,
// whitespace is space, \t, \n, \v, \f and \r. A run of whitespace before a non-space keeps its last
// byte back, which, when it is a space, starts the next chunk (" word"). The chunks cover the text
// in order: joined they are the text, whatever its bytes.
inline std::vector<std::string_view> bpe_chunks(std::string_view text) {
  enum Kind { letter, digit, space, other };
  const auto kind = [](char c) {
    const auto b = static_cast<unsigned char>(c);
    if ((b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || b >= 0x80) return letter;
    if (b >= '0' && b <= '9') return digit;
    if (b == ' ' || (b >= '\t' && b <= '\r')) return space;
    return other;
  };
  std::vector<std::string_view> chunks;
  std::size_t i = 0;
  const std::size_t n = text.size();
  const auto run_end = [&](std::size_t from, Kind k) {
    while (from < n && kind(text[from]) == k) ++from;
    return from;
  };
  while (i < n) {
    const std::size_t start = i;
    if (text[i] == '\'') {  // the contractions, lower case as GPT-2's pattern has them
      std::size_t length = 0;
      for (const std::string_view suffix : {"re", "ve", "ll", "s", "t", "m", "d"})
        if (text.substr(i + 1, suffix.size()) == suffix) {
          length = 1 + suffix.size();
          break;
        }
      if (length > 0) {
        chunks.push_back(text.substr(i, length));
        i += length;
        continue;
      }
    }
    // an optional space, then a run of one kind of non-space
    const std::size_t body = text[i] == ' ' && i + 1 < n && kind(text[i + 1]) != space ? i + 1 : i;
    if (const Kind k = kind(text[body]); k != space) {
      i = run_end(body, k);
      chunks.push_back(text.substr(start, i - start));
      continue;
    }
    // whitespace: the run, less its last byte when a non-space follows (\s+(?!\S)), else all of it
    const std::size_t end = run_end(i, space);
    i = end < n && end - i > 1 ? end - 1 : end;
    chunks.push_back(text.substr(start, i - start));
  }
  return chunks;
}

// Token 256 + i joins merges[i].left and merges[i].right, both tokens below it.
struct BpeMerge {
  TokenId left = 0;
  TokenId right = 0;
  friend bool operator==(const BpeMerge&, const BpeMerge&) = default;
};

class BpeTokenizer {
 public:
  static constexpr std::size_t byte_tokens = 256;
  // The largest vocabulary train makes (the programs' --vocab-size bound): far past what a corpus
  // a CPU trains on yields, and its merge table stays a few megabytes.
  static constexpr std::size_t max_vocab_size = std::size_t{1} << 20;

  // Merges learned from `corpus` until the vocabulary has `vocab_size` tokens: each merge joins the
  // pair of adjacent tokens most frequent within the corpus's chunks (bpe_chunks), ties going to
  // the smallest pair (left, then right), so training is a function of the corpus alone. Counting
  // runs over the distinct chunks, each weighted by how often it occurs; after a merge only the
  // chunks that hold its pair are recounted.
  static BpeTokenizer train(std::string_view corpus, std::size_t vocab_size) {
    if (vocab_size < byte_tokens)
      fail("BpeTokenizer: a vocabulary of ", vocab_size, " tokens is smaller than the ", byte_tokens,
           " bytes it starts from");
    if (vocab_size > max_vocab_size)
      fail("BpeTokenizer: a vocabulary of ", vocab_size, " tokens is more than the ", max_vocab_size, " it allows");
    std::unordered_map<std::string_view, std::uint64_t> frequency;
    for (const std::string_view chunk : bpe_chunks(corpus)) ++frequency[chunk];
    std::vector<std::pair<std::string_view, std::uint64_t>> distinct(frequency.begin(), frequency.end());
    std::sort(distinct.begin(), distinct.end());  // an order independent of the hash table's
    std::vector<std::vector<TokenId>> words;
    std::vector<std::uint64_t> counts;
    words.reserve(distinct.size());
    for (const auto& [chunk, count] : distinct) {
      words.emplace_back(chunk.begin(), chunk.end());
      for (TokenId& id : words.back()) id = static_cast<unsigned char>(id);
      counts.push_back(count);
    }
    std::unordered_map<std::uint64_t, std::uint64_t> pair_counts;
    const auto count_pairs = [&](const std::vector<TokenId>& word, std::uint64_t count, bool add) {
      for (std::size_t j = 0; j + 1 < word.size(); ++j) {
        std::uint64_t& c = pair_counts[key(word[j], word[j + 1])];
        c = add ? c + count : c - count;
      }
    };
    for (std::size_t w = 0; w < words.size(); ++w) count_pairs(words[w], counts[w], true);

    std::vector<BpeMerge> merges;
    merges.reserve(vocab_size - byte_tokens);
    while (byte_tokens + merges.size() < vocab_size) {
      std::uint64_t best = 0, best_count = 0;
      for (const auto& [pair, count] : pair_counts)
        if (count > best_count || (count == best_count && count > 0 && pair < best)) {
          best = pair;
          best_count = count;
        }
      if (best_count == 0)
        fail("BpeTokenizer: the corpus has no pair of adjacent tokens left to merge after ", merges.size(),
             " merges, so it yields at most ", byte_tokens + merges.size(), " tokens, not ", vocab_size,
             "; choose a smaller vocabulary or a larger corpus");
      const BpeMerge merge{static_cast<TokenId>(best >> 32), static_cast<TokenId>(best & 0xffffffffu)};
      const auto id = static_cast<TokenId>(byte_tokens + merges.size());
      merges.push_back(merge);
      for (std::size_t w = 0; w < words.size(); ++w) {
        std::vector<TokenId>& word = words[w];
        if (!holds(word, merge)) continue;
        count_pairs(word, counts[w], false);
        apply(word, merge, id);
        count_pairs(word, counts[w], true);
      }
      std::erase_if(pair_counts, [](const auto& entry) { return entry.second == 0; });
    }
    return BpeTokenizer(std::move(merges));
  }

  // A tokenizer from its merges (as a checkpoint stores them); each must join two earlier tokens,
  // and no pair twice (its second merge could never apply).
  explicit BpeTokenizer(std::vector<BpeMerge> merges) : merges_(std::move(merges)) {
    token_bytes_.reserve(vocab_size());
    for (std::size_t b = 0; b < byte_tokens; ++b) token_bytes_.emplace_back(1, static_cast<char>(b));
    for (std::size_t i = 0; i < merges_.size(); ++i) {
      const auto [left, right] = merges_[i];
      const auto id = static_cast<TokenId>(byte_tokens + i);
      if (left < 0 || right < 0 || left >= id || right >= id)
        fail("BpeTokenizer: merge ", i, " (token ", id, ") joins tokens ", left, " and ", right,
             "; each must be an earlier token, 0 to ", id - 1);
      if (!rank_.emplace(key(left, right), id).second)
        fail("BpeTokenizer: merge ", i, " (token ", id, ") joins ", left, " and ", right,
             " again, as token ", rank_.at(key(left, right)), " does");
      token_bytes_.push_back(token_bytes_[static_cast<std::size_t>(left)] +
                             token_bytes_[static_cast<std::size_t>(right)]);
    }
  }

  std::size_t vocab_size() const { return byte_tokens + merges_.size(); }
  const std::vector<BpeMerge>& merges() const { return merges_; }
  // The bytes token `id` stands for.
  const std::string& bytes_of(TokenId id) const {
    check_id(id);
    return token_bytes_[static_cast<std::size_t>(id)];
  }

  // Each chunk's bytes, then, as long as any adjacent pair has a merge, the pair merged first in
  // training merged everywhere in the chunk. Chunks seen before in this text reuse their tokens.
  std::vector<TokenId> encode(std::string_view text) const {
    std::vector<TokenId> out;
    out.reserve(text.size() / 2);
    std::unordered_map<std::string_view, std::vector<TokenId>> seen;
    std::vector<TokenId> word;
    for (const std::string_view chunk : bpe_chunks(text)) {
      if (const auto it = seen.find(chunk); it != seen.end()) {
        out.insert(out.end(), it->second.begin(), it->second.end());
        continue;
      }
      word.assign(chunk.begin(), chunk.end());
      for (TokenId& id : word) id = static_cast<unsigned char>(id);
      while (word.size() > 1) {
        TokenId first = -1;  // the earliest merge among the chunk's pairs
        std::size_t at = 0;
        for (std::size_t j = 0; j + 1 < word.size(); ++j) {
          const auto it = rank_.find(key(word[j], word[j + 1]));
          if (it != rank_.end() && (first < 0 || it->second < first)) {
            first = it->second;
            at = j;
          }
        }
        if (first < 0) break;
        apply(word, BpeMerge{word[at], word[at + 1]}, first);
      }
      out.insert(out.end(), word.begin(), word.end());
      seen.emplace(chunk, word);
    }
    return out;
  }

  template <class Range>
  std::string decode(const Range& ids) const {
    std::string out;
    for (const auto id : ids) out += bytes_of(static_cast<TokenId>(id));
    return out;
  }

 private:
  static std::uint64_t key(TokenId left, TokenId right) {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(left)) << 32) | static_cast<std::uint32_t>(right);
  }
  static bool holds(const std::vector<TokenId>& word, BpeMerge merge) {
    for (std::size_t j = 0; j + 1 < word.size(); ++j)
      if (word[j] == merge.left && word[j + 1] == merge.right) return true;
    return false;
  }
  // Every occurrence of the pair, left to right, becomes `id` (in "aaa", (a, a) merges once).
  static void apply(std::vector<TokenId>& word, BpeMerge merge, TokenId id) {
    std::size_t kept = 0;
    for (std::size_t j = 0; j < word.size(); ++j) {
      if (j + 1 < word.size() && word[j] == merge.left && word[j + 1] == merge.right) {
        word[kept++] = id;
        ++j;
      } else {
        word[kept++] = word[j];
      }
    }
    word.resize(kept);
  }
  void check_id(TokenId id) const {
    if (id < 0 || static_cast<std::size_t>(id) >= vocab_size())
      fail("BpeTokenizer::decode: token id ", id, " is outside the vocabulary [0, ", vocab_size(), ")");
  }

  std::vector<BpeMerge> merges_;
  std::vector<std::string> token_bytes_;             // (vocab_size): each token's bytes
  std::unordered_map<std::uint64_t, TokenId> rank_;  // (left, right) → the token merging them
};

}  // namespace posenc
