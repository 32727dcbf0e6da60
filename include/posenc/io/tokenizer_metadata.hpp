// tokenizer_metadata / read_tokenizer_metadata: a Tokenizer as metadata strings (checkpoints, token folders).
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "posenc/config.hpp"
#include "posenc/data/bpe.hpp"
#include "posenc/data/char_tokenizer.hpp"
#include "posenc/data/tokenizer.hpp"
#include "posenc/tensor.hpp"

namespace posenc {

using Metadata = std::map<std::string, std::string>;

namespace detail {

// The vocabulary as a JSON array of byte values: any byte survives, which a JSON string would not.
inline std::string vocabulary_to_json(const std::string& symbols) {
  nlohmann::json bytes = nlohmann::json::array();
  for (unsigned char c : symbols) bytes.push_back(static_cast<int>(c));
  return bytes.dump();
}

inline std::string vocabulary_from_json(const std::string& text) {
  nlohmann::json bytes = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!bytes.is_array() || bytes.empty()) fail("is not a non-empty JSON array of byte values");
  std::string symbols;
  for (const auto& b : bytes) {
    if (!b.is_number_integer() || b.get<long long>() < 0 || b.get<long long>() > 255)
      fail("holds ", b.dump(), ", not a byte value 0..255");
    symbols.push_back(static_cast<char>(b.get<int>()));
  }
  return symbols;
}

// BPE's merges as a JSON array of [left, right] token pairs, token 256 + i being merge i.
inline std::string merges_to_json(const std::vector<BpeMerge>& merges) {
  nlohmann::json pairs = nlohmann::json::array();
  for (const BpeMerge& m : merges) pairs.push_back({m.left, m.right});
  return pairs.dump();
}

inline std::vector<BpeMerge> merges_from_json(const std::string& text) {
  const nlohmann::json pairs = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!pairs.is_array()) fail("is not a JSON array of token pairs");
  std::vector<BpeMerge> merges;
  for (const auto& pair : pairs) {
    const auto token = [](const nlohmann::json& t) {
      return t.is_number_integer() && t.get<long long>() >= 0 && t.get<long long>() < (1LL << 30);
    };
    if (!pair.is_array() || pair.size() != 2 || !token(pair[0]) || !token(pair[1]))
      fail("holds ", pair.dump(), ", not a pair of token ids");
    merges.push_back({pair[0].get<TokenId>(), pair[1].get<TokenId>()});
  }
  return merges;
}

}  // namespace detail

// "tokenizer" (char, byte or bpe) with "vocab" (char: its bytes, id order) or "merges" (byte, bpe).
inline Metadata tokenizer_metadata(const Tokenizer& tokenizer) {
  Metadata m{{"tokenizer", std::string(tokenizer_name(tokenizer.kind()))}};
  if (const CharTokenizer* characters = tokenizer.characters())
    m.emplace("vocab", detail::vocabulary_to_json(characters->symbols()));
  else
    m.emplace("merges", detail::merges_to_json(tokenizer.byte_pairs()->merges()));
  return m;
}

// The tokenizer `metadata` describes; without a "tokenizer" entry (a checkpoint written before BPE
// existed) it is char. Errors begin with `where` ("checkpoint 'x.safetensors'").
inline Tokenizer read_tokenizer_metadata(const Metadata& metadata, const std::string& where) {
  const auto field = [&](const std::string& key) -> const std::string& {
    const auto it = metadata.find(key);
    if (it == metadata.end()) fail(where, ": the metadata has no '", key, "' entry");
    return it->second;
  };
  TokenizerKind kind = TokenizerKind::character;
  if (const auto entry = metadata.find("tokenizer"); entry != metadata.end()) {
    try {
      kind = parse_tokenizer_kind(entry->second);
    } catch (const Error& e) {
      fail(where, ": metadata 'tokenizer': ", e.what());
    }
  }
  if (kind == TokenizerKind::character) {
    const std::string& vocab = field("vocab");
    std::string symbols;
    try {
      symbols = detail::vocabulary_from_json(vocab);
    } catch (const Error& e) {
      fail(where, ": metadata 'vocab' ", e.what());
    }
    try {
      return CharTokenizer(symbols);
    } catch (const Error& e) {
      fail(where, ": metadata 'vocab': ", e.what());
    }
  }
  const std::string& merge_list = field("merges");
  std::vector<BpeMerge> merges;
  try {
    merges = detail::merges_from_json(merge_list);
  } catch (const Error& e) {
    fail(where, ": metadata 'merges' ", e.what());
  }
  Tokenizer tokenizer;
  try {
    tokenizer = BpeTokenizer(std::move(merges));
  } catch (const Error& e) {
    fail(where, ": metadata 'merges': ", e.what());
  }
  if (tokenizer.kind() != kind)
    fail(where, ": metadata 'tokenizer' says ", tokenizer_name(kind), " but 'merges' holds ",
         tokenizer.byte_pairs()->merges().size(), " merges");
  return tokenizer;
}

}  // namespace posenc
