// Tests of io/checkpoint.hpp: save → load gives identical logits, the optimizer state round-trips, bad files are named.
#include <catch2/catch.hpp>

#include <filesystem>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <posenc/transformer.hpp>

using namespace posenc;

namespace {
std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("posenc-test-" + name)).string();
}

// `file` written again to `path` with its metadata changed: each key set to its value, or removed
// where the value is empty.
void rewrite(const SafetensorsFile& file, const std::string& path, const std::map<std::string, std::string>& changes) {
  SafetensorsWriter writer;
  for (const auto& [key, value] : file.metadata())
    if (!changes.contains(key)) writer.add_metadata(key, value);
  for (const auto& [key, value] : changes)
    if (!value.empty()) writer.add_metadata(key, value);
  std::vector<std::vector<float>> tensors;
  for (const SafetensorsEntry& e : file.entries()) {
    tensors.emplace_back(e.numel());
    file.read_into(e.name, e.shape, tensors.back().data());
    writer.add_tensor(e.name, e.shape, tensors.back().data());
  }
  writer.write(path);
}
}  // namespace

TEMPLATE_LIST_TEST_CASE("save → load gives a model with identical logits", "", AllPolicies) {
  const CharTokenizer tokenizer("abcdefg");
  CharTransformer<TestType, 2, 16, 2> trained(tokenizer.vocab_size(), 8, 1);
  auto optimizer = AdamW(trained, {.lr = 1e-2});
  const Tokens x = {{0, 1, 2, 3, 4, 5, 6, 0}, {6, 5, 4, 3, 2, 1, 0, 1}};
  const Tokens y = {{1, 2, 3, 4, 5, 6, 0, 1}, {5, 4, 3, 2, 1, 0, 1, 2}};
  for (int i = 0; i < 3; ++i) train_step(trained, x, y, optimizer);  // away from the initialisation
  const std::string path = temp_path(std::string(TestType::name) + ".safetensors");
  save_checkpoint(path, trained, tokenizer, 3, 1);

  const SafetensorsFile file = read_safetensors(path);
  const CheckpointInfo info = read_checkpoint_info(file);
  CHECK(info.policy == TestType::name);
  CHECK(info.layers == 2);
  CHECK(info.dim == 16);
  CHECK(info.heads == 2);
  CHECK(info.context == 8);
  CHECK(info.tokenizer.characters()->symbols() == "abcdefg");
  CHECK(info.step == 3);
  CharTransformer<TestType, 2, 16, 2> loaded(tokenizer.vocab_size(), 8, /*seed=*/99);
  load_parameters(loaded, file);
  const Tensor<float, 3> a = trained.forward(x);
  const Tensor<float, 3> b = loaded.forward(x);
  for (std::size_t i = 0; i < a.size(); ++i) REQUIRE(a.data()[i] == b.data()[i]);
  std::filesystem::remove(path);
}

TEST_CASE("a tied model's checkpoint says so, holds no lm_head.weight, and loads into a tied model") {
  const CharTokenizer tokenizer("abcdefg");
  using Model = CharTransformer<ALiBi, 1, 8, 2>;
  Model tied(ModelConfig{.vocab_size = 7, .context = 8, .seed = 1, .tie_weights = true});
  const std::string path = temp_path("tied.safetensors");
  save_checkpoint(path, tied, tokenizer, 0, 1);
  const SafetensorsFile file = read_safetensors(path);
  const CheckpointInfo info = read_checkpoint_info(file);
  CHECK(info.tie_weights);
  CHECK_FALSE(file.contains("lm_head.weight"));
  Model loaded(info.model_config());
  CHECK(loaded.config().tie_weights);
  load_parameters(loaded, file);
  const Tokens x = {{0, 1, 2, 3, 4, 5, 6, 0}};
  const Tensor<float, 3> a = tied.forward(x);
  const Tensor<float, 3> b = loaded.forward(x);
  for (std::size_t i = 0; i < a.size(); ++i) REQUIRE(a.data()[i] == b.data()[i]);
  // an untied model is refused by name
  Model untied(ModelConfig{.vocab_size = 7, .context = 8, .seed = 1});
  CHECK_THROWS_WITH(load_parameters(untied, file), Catch::Contains("has no tensor 'lm_head.weight'"));
  std::filesystem::remove(path);
}

TEST_CASE("a checkpoint trained at randomized positions names their range and loads into a model that reads them") {
  const CharTokenizer tokenizer("abcdefg");
  using Model = CharTransformer<Learned, 1, 8, 2>;
  Model ranged(ModelConfig{.vocab_size = 7, .context = 4, .seed = 1, .position_range = 20});
  const std::string path = temp_path("ranged.safetensors");
  save_checkpoint(path, ranged, tokenizer, 0, 1);
  const SafetensorsFile file = read_safetensors(path);
  const CheckpointInfo info = read_checkpoint_info(file);
  CHECK(info.position_range == 20);
  Model loaded(info.model_config());
  load_parameters(loaded, file);  // the table's 20 rows
  const Tokens x = {{0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4}};  // longer than the context: the range allows it
  const Tensor<float, 3> a = ranged.forward(x);
  const Tensor<float, 3> b = loaded.forward(x);
  for (std::size_t i = 0; i < a.size(); ++i) REQUIRE(a.data()[i] == b.data()[i]);
  // a checkpoint without the entry reads positions 0, 1, 2, …
  Model plain(ModelConfig{.vocab_size = 7, .context = 4, .seed = 1});
  save_checkpoint(path, plain, tokenizer, 0, 1);
  CHECK(read_checkpoint_info(read_safetensors(path)).position_range == 0);
  std::filesystem::remove(path);
}

TEST_CASE("the optimizer state round-trips, and a resumed step equals an uninterrupted one") {
  const CharTokenizer tokenizer("abcdefg");
  CharTransformer<RoPE, 1, 8, 2> model(tokenizer.vocab_size(), 4, 2);
  auto optimizer = AdamW(model);
  const Tokens x = {{0, 1, 2, 3}}, y = {{1, 2, 3, 4}};
  train_step(model, x, y, optimizer);
  train_step(model, x, y, optimizer);
  const std::string model_path = temp_path("resume-model.safetensors");
  const std::string state_path = temp_path("resume-optimizer.safetensors");
  save_checkpoint(model_path, model, tokenizer, 2, 2);
  save_optimizer_state(state_path, optimizer, {{"note", "kept"}});

  CharTransformer<RoPE, 1, 8, 2> restored(tokenizer.vocab_size(), 4, 77);
  auto restored_optimizer = AdamW(restored);
  load_parameters(restored, read_safetensors(model_path));
  const auto meta = load_optimizer_state(read_safetensors(state_path), restored_optimizer);
  CHECK(meta.at("note") == "kept");
  CHECK(restored_optimizer.steps() == 2);
  CHECK(train_step(model, x, y, optimizer) == train_step(restored, x, y, restored_optimizer));
  CHECK(train_step(model, x, y, optimizer) == train_step(restored, x, y, restored_optimizer));
  std::filesystem::remove(model_path);
  std::filesystem::remove(state_path);
}

TEST_CASE("a checkpoint of another model is refused with the policy or the tensor named") {
  const CharTokenizer tokenizer("abcdefg");
  CharTransformer<Learned, 1, 8, 2> learned(tokenizer.vocab_size(), 4, 3);
  const std::string path = temp_path("learned.safetensors");
  save_checkpoint(path, learned, tokenizer, 0, 3);
  const SafetensorsFile file = read_safetensors(path);
  CharTransformer<RoPE, 1, 8, 2> rope(tokenizer.vocab_size(), 4, 3);
  CHECK_THROWS_WITH(load_parameters(rope, file),
                    Catch::Contains("'" + path + "' holds a model of policy 'learned', not 'rope'"));
  // rope's tensors are alibi's: only the metadata tells them apart (it loaded silently)
  const std::string rope_path = temp_path("rope.safetensors");
  save_checkpoint(rope_path, rope, tokenizer, 0, 3);
  const SafetensorsFile rope_file = read_safetensors(rope_path);
  CharTransformer<ALiBi, 1, 8, 2> alibi(tokenizer.vocab_size(), 4, 3);
  CHECK_THROWS_WITH(load_parameters(alibi, rope_file), Catch::Contains("holds a model of policy 'rope', not 'alibi'"));
  CharTransformer<ALiBi, 1, 8, 2> tuned(ModelConfig{.vocab_size = 7, .context = 8});
  CHECK_THROWS_WITH(initialize_from_checkpoint(tuned, rope_file, read_checkpoint_info(rope_file)),
                    Catch::Contains("holds a model of policy 'rope', not 'alibi'"));
  std::filesystem::remove(rope_path);
  // a file of the model's policy with a tensor the model lacks
  CharTransformer<Learned, 1, 8, 2> tied(ModelConfig{.vocab_size = 7, .context = 4, .tie_weights = true});
  CHECK_THROWS_WITH(load_parameters(tied, file),
                    Catch::Contains("a tensor 'lm_head.weight' that a learned model does not have"));
  CharTransformer<Learned, 1, 8, 2> longer(tokenizer.vocab_size(), 6, 3);
  CHECK_THROWS_WITH(load_parameters(longer, file),
                    Catch::Contains("transformer.wpe.weight") && Catch::Contains("shape"));
  CHECK_THROWS_WITH(save_checkpoint(path, learned, CharTokenizer("ab"), 0, 3),
                    Catch::Contains("the tokenizer has 2 symbols"));
  std::filesystem::remove(path);
}

TEST_CASE("fine-tuning from a checkpoint: a learned table is interpolated to the new context, the rest copied") {
  const CharTokenizer tokenizer(std::string("abcdefg"));
  CharTransformer<Learned, 1, 8, 2> source(ModelConfig{.vocab_size = 7, .context = 8, .seed = 60});
  const std::string path = temp_path("init-from-learned.safetensors");
  save_checkpoint(path, source, tokenizer, 100, 60);
  const SafetensorsFile file = read_safetensors(path);
  CharTransformer<Learned, 1, 8, 2> tuned(ModelConfig{.vocab_size = 7, .context = 16, .seed = 61});
  initialize_from_checkpoint(tuned, file, read_checkpoint_info(file));
  const auto old_rows = source.parameters().view("transformer.wpe.weight");
  const auto rows = tuned.parameters().view("transformer.wpe.weight");
  for (std::size_t p = 0; p < 8; ++p)
    for (std::size_t d = 0; d < 8; ++d) {
      CHECK(rows(2 * p, d) == old_rows(p, d));  // position 2p of 16 is position p of 8
      const float next = p + 1 < 8 ? old_rows(p + 1, d) : old_rows(7, d);
      CHECK(rows(2 * p + 1, d) == Approx(0.5 * (old_rows(p, d) + next)).epsilon(1e-6));
    }
  for (const ParameterInfo& e : source.parameter_table().entries())
    if (e.name != "transformer.wpe.weight") {
      const auto a = source.parameters().view(e.name), b = tuned.parameters().view(e.name);
      CHECK(std::equal(a.begin(), a.end(), b.begin()));
    }
  std::filesystem::remove(path);
}

TEST_CASE("fine-tuning from a checkpoint: FIRE keeps its learned threshold L in positions at a new context") {
  const CharTokenizer tokenizer(std::string("abcde"));
  CharTransformer<FIRE, 1, 8, 2> source(ModelConfig{.vocab_size = 5, .context = 64, .seed = 62});
  float& multiplier = source.parameters().view("transformer.h.0.attn.fire.L_multiplier")(0);
  multiplier = 0.7f;
  const std::string path = temp_path("init-from-fire.safetensors");
  save_checkpoint(path, source, tokenizer, 10, 62);
  const SafetensorsFile file = read_safetensors(path);
  CharTransformer<FIRE, 1, 8, 2> tuned(ModelConfig{.vocab_size = 5, .context = 256, .seed = 63});
  initialize_from_checkpoint(tuned, file, read_checkpoint_info(file));
  auto threshold = [](double raw, double context) { return 0.25 * context * std::log1p(std::exp(raw)); };
  CHECK(threshold(tuned.parameters().view("transformer.h.0.attn.fire.L_multiplier")(0), 256) ==
        Approx(threshold(0.7, 64)).epsilon(1e-5));
  // a checkpoint of another policy does not fit
  CharTransformer<Kerple, 1, 8, 2> other(ModelConfig{.vocab_size = 5, .context = 64});
  CHECK_THROWS_WITH(initialize_from_checkpoint(other, file, read_checkpoint_info(file)),
                    Catch::Contains("holds a model of policy 'fire', not 'kerple'"));
  std::filesystem::remove(path);
}

TEST_CASE("a checkpoint holding NaN or infinity is refused, naming the tensor and element") {
  const CharTokenizer tokenizer("abcdefg");
  CharTransformer<RoPE, 2, 16, 2> diverged(tokenizer.vocab_size(), 8, 1);
  const ParameterInfo& bias = diverged.parameter_table().find("lm_head.bias");
  const std::string path = temp_path("nan.safetensors");
  for (const float bad : {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::infinity()}) {
    diverged.parameters()[bias.slot][3] = bad;
    save_checkpoint(path, diverged, tokenizer, 3, 1);
    CharTransformer<RoPE, 2, 16, 2> loaded(tokenizer.vocab_size(), 8, 2);
    CHECK_THROWS_WITH(load_parameters(loaded, read_safetensors(path)),
                      Catch::Contains("tensor 'lm_head.bias' holds") && Catch::Contains(" at element 3: ") &&
                          Catch::Contains("had diverged"));
  }
  std::filesystem::remove(path);
}

TEST_CASE("a checkpoint carries its tokenizer: char's symbols, byte's and bpe's merges survive a round trip") {
  std::string corpus;
  for (int i = 0; i < 400; ++i) corpus += i % 3 == 0 ? "the king " : i % 3 == 1 ? "hath thee " : "café. ";
  for (const TokenizerSpec spec : {TokenizerSpec{}, TokenizerSpec{TokenizerKind::byte},
                                   TokenizerSpec{TokenizerKind::bpe, 266}}) {
    INFO(to_string(spec));
    const TextDataset data(corpus, spec);
    CharTransformer<RoPE, 1, 8, 2> model(data.vocab_size(), 8, 1);
    const std::string path = temp_path("tokenizer.safetensors");
    save_checkpoint(path, model, data.tokenizer(), 0, 1);
    const SafetensorsFile file = read_safetensors(path);
    CHECK(file.metadata().at("tokenizer") == tokenizer_name(spec.kind));
    CHECK(file.metadata().contains("vocab") == (spec.kind == TokenizerKind::character));
    CHECK(file.metadata().contains("merges") == (spec.kind != TokenizerKind::character));
    const CheckpointInfo info = read_checkpoint_info(file);
    CHECK(info.tokenizer.spec() == spec);
    CHECK(info.model_config().vocab_size == data.vocab_size());
    CHECK(info.tokenizer.encode(corpus) == data.tokenizer().encode(corpus));
    std::filesystem::remove(path);
  }
}

TEST_CASE("a char checkpoint from before tokenizers had names loads as char and evaluates to the same loss") {
  const std::string corpus = "to be or not to be, that is the question; whether 'tis nobler in the mind to suffer\n";
  const TextDataset data(corpus + corpus + corpus);
  CharTransformer<ALiBi, 1, 8, 2> model(data.vocab_size(), 8, 5);
  const std::string path = temp_path("new.safetensors"), old_path = temp_path("old.safetensors");
  save_checkpoint(path, model, data.tokenizer(), 0, 5);
  rewrite(read_safetensors(path), old_path, {{"tokenizer", ""}});  // as posenc wrote it before BPE
  const SafetensorsFile old_file = read_safetensors(old_path);
  REQUIRE_FALSE(old_file.metadata().contains("tokenizer"));
  const CheckpointInfo info = read_checkpoint_info(old_file);
  CHECK(info.tokenizer.kind() == TokenizerKind::character);
  CharTransformer<ALiBi, 1, 8, 2> loaded(info.model_config());
  load_parameters(loaded, old_file);
  const TextDataset again(corpus + corpus + corpus, info.tokenizer);
  CHECK(evaluate_loss(loaded, again.val(), 8).loss == evaluate_loss(model, data.val(), 8).loss);
  std::filesystem::remove(path);
  std::filesystem::remove(old_path);
}

TEST_CASE("a checkpoint's damaged tokenizer is refused with the entry named") {
  CharTransformer<NoPE, 1, 8, 2> model(258, 8, 1);
  const std::string path = temp_path("bpe.safetensors"), bad = temp_path("bad-tokenizer.safetensors");
  save_checkpoint(path, model, Tokenizer(BpeTokenizer({{'a', 'b'}, {256, 'c'}})), 0, 1);
  const SafetensorsFile file = read_safetensors(path);
  const std::vector<std::pair<std::map<std::string, std::string>, std::string>> cases = {
      {{{"tokenizer", "wordpiece"}}, "metadata 'tokenizer': unknown tokenizer 'wordpiece'"},
      {{{"merges", ""}}, "the metadata has no 'merges' entry"},
      {{{"merges", "{}"}}, "metadata 'merges' is not a JSON array of token pairs"},
      {{{"merges", "[[97, 98], [256]]"}}, "metadata 'merges' holds [256], not a pair of token ids"},
      {{{"merges", "[[97, -1]]"}}, "holds [97,-1], not a pair of token ids"},
      {{{"merges", "[[97, 98], [300, 99]]"}}, "metadata 'merges': BpeTokenizer: merge 1 (token 257) joins tokens 300"},
      {{{"merges", "[]"}}, "metadata 'tokenizer' says bpe but 'merges' holds 0 merges"},
      {{{"tokenizer", "char"}}, "the metadata has no 'vocab' entry"},
      {{{"tokenizer", "char"}, {"vocab", "[97, 97]"}}, "metadata 'vocab': CharTokenizer: the vocabulary lists byte 97"},
      {{{"tokenizer", "char"}, {"vocab", "[97, 256]"}}, "metadata 'vocab' holds 256, not a byte value 0..255"},
  };
  for (const auto& [changes, message] : cases) {
    INFO(message);
    rewrite(file, bad, changes);
    CHECK_THROWS_WITH(read_checkpoint_info(read_safetensors(bad)),
                      Catch::Contains("checkpoint '" + bad + "'") && Catch::Contains(message));
  }
  std::filesystem::remove(path);
  std::filesystem::remove(bad);
}

TEST_CASE("a RoPE scaling's JSON holds each setting with a value, in the bytes checkpoints always had") {
  // the bytes of checkpoints and config.json written before the JSON was built from rope_scaling_settings
  const std::pair<const char*, const char*> written[] = {
      {"linear:4", R"({"beta_fast":32.0,"beta_slow":1.0,"factor":4.0,"method":"linear"})"},
      {"yarn:8:beta_fast=16:beta_slow=2:attention_factor=1.2:base=500",
       R"({"attention_factor":1.2,"base":500.0,"beta_fast":16.0,"beta_slow":2.0,"factor":8.0,"method":"yarn"})"},
      {"dynamic-ntk:8:original_context=64",
       R"({"beta_fast":32.0,"beta_slow":1.0,"factor":8.0,"method":"dynamic-ntk","original_context":64})"},
      {"base=500000", R"({"base":500000.0,"beta_fast":32.0,"beta_slow":1.0,"factor":1.0,"method":"none"})"},
  };
  for (const auto& [spec, json] : written) {
    const RopeScaling scaling = parse_rope_scaling_spec(spec);
    CHECK(to_json(scaling).dump() == json);
    CHECK(rope_scaling_from_json(nlohmann::json::parse(json), "here") == scaling);
  }
  // a JSON without the beta values (they are optional on reading) takes their defaults
  CHECK(rope_scaling_from_json(nlohmann::json::parse(R"({"factor":4.0,"method":"linear"})"), "here") ==
        parse_rope_scaling_spec("linear:4"));
  CHECK_THROWS_WITH(
      rope_scaling_from_json(nlohmann::json::parse(R"({"factor":8,"method":"yarn","original_context":64.5})"), "cfg"),
      Catch::Contains("cfg: 'original_context' must be a whole number"));
  CHECK_THROWS_WITH(rope_scaling_from_json(nlohmann::json::parse(R"({"factor":8,"method":"yarn","base":"x"})"), "cfg"),
                    Catch::Contains("cfg: not a RoPE scaling"));
  CHECK_THROWS_WITH(rope_scaling_from_json(nlohmann::json::parse(R"({"factor":8,"method":"yarn","base":0.5})"), "cfg"),
                    Catch::Contains("cfg: rope scaling: the base must be"));
}
