// Tests of data/tokenizer.hpp and the corpus it tokenizes: char, byte and bpe made, encoded and split; bits per byte.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <tuple>
#include <string>
#include <vector>

#include <posenc/transformer.hpp>

using namespace posenc;

namespace {
// A text of repeated words with accented (UTF-8) ones, so BPE has pairs to merge.
std::string words_text(std::size_t words, std::uint64_t seed) {
  static constexpr std::string_view list[] = {"the", "king", "hath", "thee", "café", "été", "don't", "1599"};
  Rng rng(seed);
  std::string text;
  for (std::size_t w = 0; w < words; ++w) {
    text += list[rng.uniform_index(std::size(list))];
    text += rng.uniform_index(6) == 0 ? ".\n" : " ";
  }
  return text;
}
}  // namespace

TEST_CASE("a tokenizer is char, byte or bpe, made from a corpus as its spec says, and knows its kind") {
  const std::string corpus = words_text(2000, 1);
  const Tokenizer characters = Tokenizer::make({}, corpus);
  CHECK(characters.kind() == TokenizerKind::character);
  CHECK(characters.vocab_size() == CharTokenizer::from_corpus(corpus).vocab_size());
  CHECK(characters.spec() == TokenizerSpec{});
  const Tokenizer bytes = Tokenizer::make({TokenizerKind::byte}, corpus);
  CHECK(bytes.kind() == TokenizerKind::byte);
  CHECK(bytes.vocab_size() == 256);
  CHECK(Tokenizer().kind() == TokenizerKind::byte);
  const Tokenizer bpe = Tokenizer::make({TokenizerKind::bpe, 270}, corpus);
  CHECK(bpe.kind() == TokenizerKind::bpe);
  CHECK(bpe.vocab_size() == 270);
  CHECK(bpe.spec() == TokenizerSpec{TokenizerKind::bpe, 270});
  CHECK(bpe.byte_pairs()->merges() == BpeTokenizer::train(corpus, 270).merges());
  CHECK(bpe.characters() == nullptr);
  CHECK(to_string(bpe.spec()) == "bpe 270");
  CHECK(bpe.describe() == "bpe (270 tokens)");
  for (const Tokenizer* t : {&characters, &bytes, &bpe}) {
    INFO(t->describe());
    const std::vector<TokenId> ids = t->encode(corpus);
    CHECK(t->decode(ids) == corpus);
    CHECK(t->byte_count(ids.data(), ids.data() + ids.size()) == corpus.size());
  }
  CHECK(bytes.encode("é").size() == 2);  // a byte is a token
  // what each can encode: char only its corpus's bytes
  CHECK(characters.first_unencodable("the kxng") == 5);
  CHECK(characters.first_unencodable("the king") == std::string::npos);
  CHECK(bpe.first_unencodable(std::string("\0\xff zq", 5)) == std::string::npos);
  CHECK_THROWS_WITH(characters.encode("zz"), Catch::Contains("byte 122 ('z') at offset 0 is not in the vocabulary"));
}

TEST_CASE("a tokenizer spec is checked: bpe needs a size above 256, the others take none") {
  CHECK_THROWS_WITH(TokenizerSpec({TokenizerKind::bpe, 0}).validate(),
                    Catch::Contains("needs a vocabulary size above the 256 bytes"));
  CHECK_THROWS_WITH(TokenizerSpec({TokenizerKind::bpe, 256}).validate(),
                    Catch::Contains("--tokenizer byte is the 256 bytes alone"));
  CHECK_THROWS_WITH(TokenizerSpec({TokenizerKind::character, 512}).validate(),
                    Catch::Contains("--vocab-size applies to tokenizer bpe"));
  CHECK_THROWS_WITH(TokenizerSpec({TokenizerKind::byte, 512}).validate(), Catch::Contains("the 256 bytes"));
  // a size from JSON or Python, past the programs' bound: an error, not an allocation that fails
  CHECK_THROWS_WITH(TokenizerSpec({TokenizerKind::bpe, std::size_t{1} << 40}).validate(),
                    Catch::Contains("at most 1048576 tokens (--vocab-size), got 1099511627776"));
  CHECK_THROWS_WITH(BpeTokenizer::train("abab", std::size_t{1} << 40),
                    Catch::Contains("more than the 1048576 it allows"));
  CHECK_NOTHROW(TokenizerSpec({TokenizerKind::bpe, std::size_t{1} << 20}).validate());
  CHECK(parse_tokenizer_kind("bpe") == TokenizerKind::bpe);
  CHECK_THROWS_WITH(parse_tokenizer_kind("wordpiece"), Catch::Contains("unknown tokenizer 'wordpiece' (known: char, "
                                                                       "byte, bpe)"));
}

TEST_CASE("a corpus is cut by bytes and each part encoded alone: every tokenizer validates on the same bytes") {
  const std::string corpus = words_text(3000, 2);
  const std::size_t cut = static_cast<std::size_t>(static_cast<double>(corpus.size()) * 0.9);
  for (const TokenizerSpec spec : {TokenizerSpec{}, TokenizerSpec{TokenizerKind::byte},
                                   TokenizerSpec{TokenizerKind::bpe, 270}}) {
    INFO(to_string(spec));
    const TextDataset data(corpus, spec);
    CHECK(data.tokenizer().decode(data.train()) == corpus.substr(0, cut));
    CHECK(data.tokenizer().decode(data.val()) == corpus.substr(cut));
    // the bytes a target stands for: the split's bytes but its first token's, over its targets
    const std::vector<TokenId>& val = data.val();
    const double bytes = static_cast<double>(corpus.size() - cut - data.tokenizer().decode(std::vector{val[0]}).size());
    CHECK(data.bytes_per_target(Split::validation) == Approx(bytes / static_cast<double>(val.size() - 1)));
  }
  // BPE is trained on the training part alone: the validation text does not shape its merges
  const TextDataset bpe(corpus, TokenizerSpec{TokenizerKind::bpe, 270});
  CHECK(bpe.tokenizer().byte_pairs()->merges() == BpeTokenizer::train(corpus.substr(0, cut), 270).merges());
  CHECK(bpe.bytes_per_target(Split::validation) > 1.5);  // these words repeat: tokens of several bytes
  // char and byte tokens are one byte each
  CHECK(TextDataset(corpus).bytes_per_target(Split::train) == 1);
  CHECK(TextDataset(corpus, TokenizerSpec{TokenizerKind::byte}).bytes_per_target(Split::validation) == 1);
  // a given tokenizer (a checkpoint's) encodes alike
  const TextDataset again(corpus, bpe.tokenizer());
  CHECK(again.val() == bpe.val());
}

TEST_CASE("bits per byte: a char model's is its nats a character over ln 2, a BPE model's counts its tokens' bytes") {
  const std::string corpus = words_text(1500, 3);
  const TextDataset characters(corpus);
  CharTransformer<RoPE, 1, 16, 2> model(characters.vocab_size(), 16, 7);
  const LossResult loss = evaluate_loss(model, characters.val(), 16);
  CHECK(bits_per_byte(loss.loss, characters.bytes_per_target(Split::validation)) == loss.loss / std::log(2.0));
  // a BPE model: the nats summed over every target, over the bytes they stand for and ln 2
  const TextDataset bpe(corpus, TokenizerSpec{TokenizerKind::bpe, 270});
  CharTransformer<RoPE, 1, 16, 2> subword(bpe.vocab_size(), 16, 7);
  const LossResult l = evaluate_loss(subword, bpe.val(), 16);
  const std::size_t bytes = bpe.tokenizer().byte_count(bpe.val().data() + 1, bpe.val().data() + bpe.val().size());
  CHECK(bits_per_byte(l.loss, bpe.bytes_per_target(Split::validation)) ==
        Approx(l.loss * static_cast<double>(l.targets) / static_cast<double>(bytes) / std::log(2.0)).epsilon(1e-12));
}

TEST_CASE("a task takes char or byte tokens, never BPE's, which would join the characters it scores") {
  const TaskData bytes(Task(TaskKind::copy), {1, 8}, Tokenizer());
  CHECK(bytes.vocab_size() == 256);
  Batch b;
  bytes.batches(Split::train, 2, 16, 1)->sample(b);
  CHECK(b.inputs(0, 0) >= 'a');  // a byte is its own id
  CHECK_THROWS_WITH(TaskData(Task(TaskKind::copy), {1, 8}, Tokenizer(BpeTokenizer({{'a', 'b'}}))),
                    Catch::Contains("needs tokenizer char or byte, not bpe (257 tokens)"));
  RunConfig run;
  run.task = TaskSpec{TaskKind::copy, {1, 8}};
  run.tokenizer = {TokenizerKind::bpe, 300};
  CHECK_THROWS_WITH(make_training_data(run, ""), Catch::Contains("train it with --tokenizer char or byte"));
  run.tokenizer = {TokenizerKind::byte};
  CHECK(make_training_data(run, "")->vocab_size() == 256);
}

TEST_CASE("a run's tokenizer is in its config.json only when it is not char, and reads back") {
  RunConfig run;
  CHECK_FALSE(to_json(run).contains("tokenizer"));
  CHECK(run_config_from_json(to_json(run), "test").tokenizer == TokenizerSpec{});
  run.tokenizer = {TokenizerKind::bpe, 1024};
  CHECK(to_json(run)["tokenizer"] == "bpe");
  CHECK(to_json(run)["vocab_size"] == 1024);
  CHECK(run_config_from_json(to_json(run), "test").tokenizer == run.tokenizer);
  run.tokenizer = {TokenizerKind::byte};
  CHECK_FALSE(to_json(run).contains("vocab_size"));
  CHECK(run_config_from_json(to_json(run), "test").tokenizer == run.tokenizer);
  nlohmann::json bad = to_json(run);
  bad["tokenizer"] = "bpe";  // without a size
  CHECK_THROWS_WITH(run_config_from_json(bad, "config.json"), Catch::Contains("needs a vocabulary size"));
  // a study's --vocab-size serves its grid's bpe points; its char points leave it
  RunConfig study;
  study.tokenizer.vocab_size = 512;
  CHECK(with_setting(study, GridPoint{{{"tokenizer", "bpe"}}}).tokenizer == TokenizerSpec{TokenizerKind::bpe, 512});
  CHECK(with_setting(study, GridPoint{{{"tokenizer", "char"}}}).tokenizer == TokenizerSpec{});
  CHECK(canonical_grid_value("vocab_size", "2048") == "2048");
}

namespace {
std::filesystem::path fresh_folder(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("posenc-test-" + name);
  std::filesystem::remove_all(dir);
  return dir;
}
void write_text(const std::filesystem::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }
}  // namespace

TEST_CASE("a token folder keeps a corpus's tokenizer and tokens: read back, it is the same dataset") {
  const std::string corpus = words_text(2000, 4);
  for (const TokenizerSpec spec : {TokenizerSpec{}, TokenizerSpec{TokenizerKind::bpe, 270}}) {
    INFO(to_string(spec));
    const auto dir = fresh_folder("token-folder");
    const TextDataset data(corpus, spec);
    CHECK_FALSE(is_token_folder(dir.string()));
    save_token_folder(dir.string(), data, corpus_digest(corpus), "words.txt");
    CHECK(is_token_folder(dir.string()));
    CHECK(std::filesystem::file_size(dir / "train.bin") == 2 * data.train().size());  // uint16
    const TokenFolder back = read_token_folder(dir.string());
    CHECK(back.data.tokenizer() == data.tokenizer());
    CHECK(back.data.train() == data.train());
    CHECK(back.data.val() == data.val());
    CHECK(back.data.bytes_per_target(Split::validation) == data.bytes_per_target(Split::validation));
    CHECK(back.corpus_digest == corpus_digest(corpus));
    CHECK(back.source == "words.txt");
    std::filesystem::remove_all(dir);
  }
}

TEST_CASE("a token folder of a vocabulary past 65,536 holds uint32 ids") {
  std::vector<BpeMerge> merges;  // every pair of two bytes, token 256 + i each
  for (TokenId a = 0; a < 256 && merges.size() < 65536 - 256 + 1; ++a)
    for (TokenId b = 0; b < 256 && merges.size() < 65536 - 256 + 1; ++b) merges.push_back({a, b});
  const Tokenizer wide{BpeTokenizer(std::move(merges))};
  REQUIRE(wide.vocab_size() == 65537);
  const TextDataset data(wide, {65536, 1, 2}, {3, 65536});
  const auto dir = fresh_folder("token-folder-wide");
  save_token_folder(dir.string(), data, "digest", "bytes");
  CHECK(std::filesystem::file_size(dir / "val.bin") == 8);
  const TokenFolder back = read_token_folder(dir.string());
  CHECK(back.data.train() == std::vector<TokenId>{65536, 1, 2});
  CHECK(back.data.val() == std::vector<TokenId>{3, 65536});
  std::filesystem::remove_all(dir);
}

TEST_CASE("a damaged token folder is refused with the folder and the problem named") {
  const std::string corpus = words_text(500, 5);
  const auto dir = fresh_folder("token-folder-bad");
  const std::string where = "token folder '" + dir.string() + "'";
  save_token_folder(dir.string(), TextDataset(corpus, TokenizerSpec{TokenizerKind::byte}), "d", "s");
  std::ifstream in(dir / "meta.json");
  const nlohmann::json good = nlohmann::json::parse(in);
  const auto with = [&](const std::string& key, const nlohmann::json& value) {
    nlohmann::json meta = good;
    if (value.is_null()) meta.erase(key);
    else meta[key] = value;
    write_text(dir / "meta.json", meta.dump());
  };
  const std::vector<std::tuple<std::string, nlohmann::json, std::string>> cases = {
      {"format", "posenc-tokens-9", "format is \"posenc-tokens-9\", not 'posenc-tokens-1'"},
      {"format", nullptr, "format is missing"},
      {"dtype", "int8", "dtype is 'int8', not uint16 or uint32"},
      {"dtype", 16, "meta.json: [json.exception.type_error"},
      {"train_tokens", 3, "'train.bin' holds"},
      {"val_tokens", std::uint64_t{1} << 63, "'val.bin' holds"},  // a count that × 2 wraps to 0
      {"vocab_size", 300, "vocab_size 300 is not its tokenizer's 256"},
      {"merges", "[[1]]", "metadata 'merges' holds [1], not a pair of token ids"},
      {"tokenizer", "char", "the metadata has no 'vocab' entry"},
      {"corpus_digest", nullptr, "meta.json: [json.exception.out_of_range"},
  };
  for (const auto& [key, value, message] : cases) {
    INFO(key << " = " << value.dump());
    with(key, value);
    CHECK_THROWS_WITH(read_token_folder(dir.string()), Catch::StartsWith(where) && Catch::Contains(message));
  }
  write_text(dir / "meta.json", "{not json");
  CHECK_THROWS_WITH(read_token_folder(dir.string()), Catch::Contains("meta.json is not a JSON object"));
  // an id outside the vocabulary: the byte folder's ids read as a BPE's of 257 tokens
  nlohmann::json meta = good;
  meta["tokenizer"] = "bpe";
  meta["merges"] = "[[116, 104]]";
  meta["vocab_size"] = 257;
  write_text(dir / "meta.json", meta.dump());
  write_text(dir / "val.bin",
             std::string("\x01\x02", 2) + std::string(2 * good["val_tokens"].get<std::size_t>() - 2, 'a'));
  CHECK_THROWS_WITH(read_token_folder(dir.string()), Catch::Contains("token 0 of the validation part is 513, outside "
                                                                     "the vocabulary [0, 257)"));
  std::filesystem::remove_all(dir);
}
