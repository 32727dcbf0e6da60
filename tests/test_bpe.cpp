// Tests of data/bpe.hpp: the pre-split, training's merges, encoding and decoding.
#include <catch2/catch.hpp>

#include <string>
#include <string_view>
#include <vector>

#include <posenc/transformer.hpp>

using namespace posenc;

namespace {
std::vector<std::string> as_strings(const std::vector<std::string_view>& chunks) {
  return {chunks.begin(), chunks.end()};
}

// A text of words, numbers and punctuation from a seeded generator, with some bytes ≥ 0x80.
std::string generated_text(std::size_t words, std::uint64_t seed) {
  static constexpr std::string_view vocabulary[] = {"the", "king", "queen", "hath", "thee", "thou", "art",
                                                    "café", "été", "1599", "42", "don't", "we'll"};
  Rng rng(seed);
  std::string text;
  for (std::size_t w = 0; w < words; ++w) {
    text += vocabulary[rng.uniform_index(std::size(vocabulary))];
    text += rng.uniform_index(8) == 0 ? ",\n" : " ";
  }
  return text;
}
}  // namespace

TEST_CASE("the pre-split cuts as GPT-2's pattern does on ASCII, and the chunks join to the text") {
  CHECK(as_strings(bpe_chunks("Hello world")) == std::vector<std::string>{"Hello", " world"});
  CHECK(as_strings(bpe_chunks("I'll say't, 1599 times!!")) ==
        std::vector<std::string>{"I", "'ll", " say", "'t", ",", " 1599", " times", "!!"});
  // whitespace before a word keeps its last space for the word; a newline stands alone
  CHECK(as_strings(bpe_chunks("a   b\n\nc  ")) == std::vector<std::string>{"a", "  ", " b", "\n", "\n", "c", "  "});
  CHECK(as_strings(bpe_chunks(" 'tis")) == std::vector<std::string>{" '", "tis"});
  // bytes ≥ 0x80 are letters: a UTF-8 word is one chunk, as is invalid UTF-8 between letters
  CHECK(as_strings(bpe_chunks("naïve 日本語 a\xff\xfe"
                              "b")) == std::vector<std::string>{"naïve", " 日本語", " a\xff\xfe"
                                                                                     "b"});
  CHECK(bpe_chunks("").empty());
  Rng rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::string text(rng.uniform_index(40), '\0');
    for (char& c : text) c = static_cast<char>(rng.uniform_index(256));
    std::string joined;
    for (const std::string_view chunk : bpe_chunks(text)) {
      CHECK(!chunk.empty());
      joined += chunk;
    }
    CHECK(joined == text);
  }
}

TEST_CASE("BPE merges the most frequent pair, ties to the smallest: Wikipedia's aaabdaaabac by hand") {
  // aa: 4 → 256;  then (256, a) and (a, b) 2 each, the smaller (a, b) → 257;  then (256, 257) 2 → 258
  const BpeTokenizer bpe = BpeTokenizer::train("aaabdaaabac", 259);
  CHECK(bpe.merges() == std::vector<BpeMerge>{{'a', 'a'}, {'a', 'b'}, {256, 257}});
  CHECK(bpe.bytes_of(258) == "aaab");
  const std::vector<TokenId> ids = bpe.encode("aaabdaaabac");
  CHECK(ids == std::vector<TokenId>{258, 'd', 258, 'a', 'c'});
  CHECK(bpe.decode(ids) == "aaabdaaabac");
  // merges never cross chunks: "ab ab" has (a, b) twice and (b, ' ') in no chunk
  CHECK(BpeTokenizer::train("ab ab", 257).merges() == std::vector<BpeMerge>{{'a', 'b'}});
  CHECK(BpeTokenizer::train("ab ab", 258).merges() == std::vector<BpeMerge>{{'a', 'b'}, {' ', 256}});
}

TEST_CASE("BPE encodes by the order of the merges, not greedily by length") {
  // merges (b, c) first, then (a, b): "abc" is a·bc, although ab was also mergeable
  const BpeTokenizer bpe({{'b', 'c'}, {'a', 'b'}});
  CHECK(bpe.encode("abc") == std::vector<TokenId>{'a', 256});
  CHECK(bpe.encode("abab") == std::vector<TokenId>{257, 257});
  CHECK(bpe.encode("aaa") == std::vector<TokenId>{'a', 'a', 'a'});
}

TEST_CASE("BPE round-trips any bytes, and a trained tokenizer shortens its corpus") {
  const std::string corpus = generated_text(3000, 1);
  const BpeTokenizer bpe = BpeTokenizer::train(corpus, 300);
  CHECK(bpe.vocab_size() == 300);
  const std::vector<TokenId> ids = bpe.encode(corpus);
  CHECK(bpe.decode(ids) == corpus);
  CHECK(ids.size() * 3 < corpus.size());  // these words repeat: each becomes a token or two
  for (const TokenId id : ids) CHECK((id >= 0 && id < 300));
  // any bytes, valid UTF-8 or not, through the trained merges
  Rng rng(2);
  for (int trial = 0; trial < 300; ++trial) {
    std::string text(rng.uniform_index(64), '\0');
    for (char& c : text) c = static_cast<char>(rng.uniform_index(256));
    if (trial % 2 == 0) text += generated_text(5, static_cast<std::uint64_t>(trial));
    INFO("trial " << trial);
    CHECK(bpe.decode(bpe.encode(text)) == text);
  }
  // training is a function of the corpus
  CHECK(BpeTokenizer::train(corpus, 300).merges() == bpe.merges());
  // a tokenizer rebuilt from its merges encodes alike
  CHECK(BpeTokenizer(bpe.merges()).encode(corpus) == ids);
}

TEST_CASE("bad BPE settings and merges fail with a message") {
  CHECK_THROWS_WITH(BpeTokenizer::train("abc", 100), Catch::Contains("smaller than the 256 bytes"));
  CHECK_THROWS_WITH(BpeTokenizer::train("abcd", 260),
                    Catch::Contains("no pair of adjacent tokens left to merge after 3"));
  CHECK_THROWS_WITH(BpeTokenizer({{'a', 256}}), Catch::Contains("each must be an earlier token, 0 to 255"));
  CHECK_THROWS_WITH(BpeTokenizer({{-1, 'a'}}), Catch::Contains("joins tokens -1 and 97"));
  CHECK_THROWS_WITH(BpeTokenizer({{'a', 'b'}, {'a', 'b'}}), Catch::Contains("again, as token 256 does"));
  const BpeTokenizer bpe({{'a', 'b'}});
  CHECK_THROWS_WITH(bpe.decode(std::vector<TokenId>{257}), Catch::Contains("outside the vocabulary [0, 257)"));
  CHECK(BpeTokenizer::train("abc", 256).encode("abc") == std::vector<TokenId>{'a', 'b', 'c'});
}
