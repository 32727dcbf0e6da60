// Tokenizer: a run's tokens, a corpus's characters (char), the 256 bytes (byte) or byte-level BPE (bpe).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "posenc/config.hpp"
#include "posenc/data/bpe.hpp"
#include "posenc/data/char_tokenizer.hpp"
#include "posenc/enum_names.hpp"
#include "posenc/tensor.hpp"

namespace posenc {

// char: the distinct bytes of a corpus, one token each (the published study's, and posenc's
// before BPE); byte: all 256 bytes, so any text encodes; bpe: the 256 bytes and merges learned
// from the training text.
enum class TokenizerKind { character, byte, bpe };

inline constexpr EnumNames<TokenizerKind, 3> tokenizer_kinds{
    "tokenizer", {{{TokenizerKind::character, "char"}, {TokenizerKind::byte, "byte"}, {TokenizerKind::bpe, "bpe"}}}};
static_assert(tokenizer_kinds.in_order());

inline std::string_view tokenizer_name(TokenizerKind kind) { return tokenizer_kinds.name(kind); }
inline TokenizerKind parse_tokenizer_kind(std::string_view text) { return tokenizer_kinds.parse(text); }

// How a run makes its tokenizer from its corpus: the kind and, for bpe, the vocabulary size
// (256 bytes + merges). char and byte take their size from the kind (vocab_size 0).
struct TokenizerSpec {
  TokenizerKind kind = TokenizerKind::character;
  std::size_t vocab_size = 0;

  void validate() const {
    if (kind == TokenizerKind::bpe && vocab_size <= BpeTokenizer::byte_tokens)
      fail("tokenizer bpe needs a vocabulary size above the ", BpeTokenizer::byte_tokens,
           " bytes it starts from (--vocab-size), got ", vocab_size,
           vocab_size == BpeTokenizer::byte_tokens ? "; --tokenizer byte is the 256 bytes alone" : "");
    if (kind == TokenizerKind::bpe && vocab_size > BpeTokenizer::max_vocab_size)
      fail("tokenizer bpe: a vocabulary of at most ", BpeTokenizer::max_vocab_size, " tokens (--vocab-size), got ",
           vocab_size);
    if (kind != TokenizerKind::bpe && vocab_size != 0)
      fail("--vocab-size applies to tokenizer bpe; tokenizer ", tokenizer_name(kind), " takes its vocabulary from ",
           kind == TokenizerKind::byte ? "the 256 bytes" : "the corpus's characters");
  }
  bool operator==(const TokenizerSpec&) const = default;
};

// "char", "byte", "bpe 1024"
inline std::string to_string(const TokenizerSpec& spec) {
  std::string text(tokenizer_name(spec.kind));
  if (spec.kind == TokenizerKind::bpe) text += " " + std::to_string(spec.vocab_size);
  return text;
}

class Tokenizer {
 public:
  Tokenizer() : Tokenizer(BpeTokenizer({})) {}  // the 256 bytes
  Tokenizer(CharTokenizer characters) : impl_(std::move(characters)) {}  // NOLINT: a char vocabulary is one
  Tokenizer(BpeTokenizer byte_pairs) : impl_(std::move(byte_pairs)) {}   // NOLINT: byte without merges

  // The tokenizer `spec` asks for, made from `corpus`: char from its distinct bytes, bpe by
  // training on it (a run passes its training text, so the validation text stays unseen).
  static Tokenizer make(const TokenizerSpec& spec, std::string_view corpus) {
    spec.validate();
    switch (spec.kind) {
      case TokenizerKind::character: return CharTokenizer::from_corpus(corpus);
      case TokenizerKind::byte: return Tokenizer();
      case TokenizerKind::bpe: return BpeTokenizer::train(corpus, spec.vocab_size);
    }
    fail("Tokenizer::make: unknown tokenizer kind");
  }

  // bpe without merges is the 256 bytes: byte.
  TokenizerKind kind() const {
    if (characters() != nullptr) return TokenizerKind::character;
    return byte_pairs()->merges().empty() ? TokenizerKind::byte : TokenizerKind::bpe;
  }
  // The spec that makes this kind and size again.
  TokenizerSpec spec() const {
    return {kind(), kind() == TokenizerKind::bpe ? vocab_size() : 0};
  }
  std::size_t vocab_size() const {
    return std::visit([](const auto& t) { return t.vocab_size(); }, impl_);
  }
  // The character vocabulary, or null for byte and bpe.
  const CharTokenizer* characters() const { return std::get_if<CharTokenizer>(&impl_); }
  // The merges' tokenizer (byte: none), or null for char.
  const BpeTokenizer* byte_pairs() const { return std::get_if<BpeTokenizer>(&impl_); }

  // A byte of `text` outside a char vocabulary is an error naming it; byte and bpe encode any bytes.
  std::vector<TokenId> encode(std::string_view text) const {
    return std::visit([&](const auto& t) { return t.encode(text); }, impl_);
  }
  // Where `text` has its first byte this tokenizer cannot encode, or npos.
  std::size_t first_unencodable(std::string_view text) const {
    if (const CharTokenizer* c = characters())
      for (std::size_t i = 0; i < text.size(); ++i)
        if (!c->contains(text[i])) return i;
    return std::string_view::npos;
  }
  template <class Range>
  std::string decode(const Range& ids) const {
    return std::visit([&](const auto& t) { return t.decode(ids); }, impl_);
  }
  // How many bytes tokens [first, last) decode to (for bits per byte).
  std::size_t byte_count(const TokenId* first, const TokenId* last) const {
    if (characters() != nullptr) return static_cast<std::size_t>(last - first);
    std::size_t bytes = 0;
    for (; first != last; ++first) bytes += byte_pairs()->bytes_of(*first).size();
    return bytes;
  }

  // The same tokens: the same symbols (char) or merges (byte, bpe).
  friend bool operator==(const Tokenizer& a, const Tokenizer& b) {
    if (a.characters() != nullptr || b.characters() != nullptr)
      return a.characters() != nullptr && b.characters() != nullptr &&
             a.characters()->symbols() == b.characters()->symbols();
    return a.byte_pairs()->merges() == b.byte_pairs()->merges();
  }

  // "char (65 symbols)", "byte (256)", "bpe (1024 tokens)"
  std::string describe() const {
    switch (kind()) {
      case TokenizerKind::character: return "char (" + std::to_string(vocab_size()) + " symbols)";
      case TokenizerKind::byte: return "byte (256)";
      case TokenizerKind::bpe: return "bpe (" + std::to_string(vocab_size()) + " tokens)";
    }
    return {};
  }

 private:
  std::variant<CharTokenizer, BpeTokenizer> impl_;
};

}  // namespace posenc
