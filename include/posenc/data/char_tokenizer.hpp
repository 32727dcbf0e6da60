// CharTokenizer: the byte vocabulary of a corpus (its distinct bytes, sorted), with encode and decode.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "posenc/config.hpp"
#include "posenc/tensor.hpp"

namespace posenc {

class CharTokenizer {
 public:
  // The vocabulary of a corpus: every distinct byte, in increasing byte order.
  static CharTokenizer from_corpus(std::string_view corpus) {
    if (corpus.empty()) fail("CharTokenizer: the corpus is empty; expected at least one byte");
    std::array<bool, 256> seen{};
    for (unsigned char c : corpus) seen[c] = true;
    std::string symbols;
    for (std::size_t b = 0; b < 256; ++b)
      if (seen[b]) symbols.push_back(static_cast<char>(b));
    return CharTokenizer(symbols);
  }

  // A vocabulary given as its symbols in id order (as a checkpoint stores it).
  explicit CharTokenizer(std::string_view symbols) : symbols_(symbols) {
    if (symbols_.empty()) fail("CharTokenizer: the vocabulary is empty");
    ids_.fill(-1);
    for (std::size_t i = 0; i < symbols_.size(); ++i) {
      const auto byte = static_cast<unsigned char>(symbols_[i]);
      if (ids_[byte] != -1)
        fail("CharTokenizer: the vocabulary lists byte ", static_cast<int>(byte), " twice");
      ids_[byte] = static_cast<TokenId>(i);
    }
  }

  std::size_t vocab_size() const { return symbols_.size(); }
  const std::string& symbols() const { return symbols_; }
  bool contains(char c) const { return ids_[static_cast<unsigned char>(c)] != -1; }

  std::vector<TokenId> encode(std::string_view text) const {
    std::vector<TokenId> out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) {
      const TokenId id = ids_[static_cast<unsigned char>(text[i])];
      if (id == -1)
        fail("CharTokenizer::encode: byte ", static_cast<int>(static_cast<unsigned char>(text[i])),
             " ('", printable(text[i]), "') at offset ", i, " is not in the vocabulary");
      out.push_back(id);
    }
    return out;
  }

  template <class Range>
  std::string decode(const Range& ids) const {
    std::string out;
    for (auto id : ids) {
      if (id < 0 || static_cast<std::size_t>(id) >= symbols_.size())
        fail("CharTokenizer::decode: token id ", id, " is outside the vocabulary [0, ",
             symbols_.size(), ")");
      out.push_back(symbols_[static_cast<std::size_t>(id)]);
    }
    return out;
  }

 private:
  static std::string printable(char c) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 32 && byte < 127) return std::string(1, c);
    return "\\x" + std::string(1, "0123456789abcdef"[byte >> 4]) + "0123456789abcdef"[byte & 15];
  }

  std::string symbols_;
  std::array<TokenId, 256> ids_{};  // byte → id, −1 where the byte is not in the vocabulary
};

}  // namespace posenc
