// Tests of data/: the byte tokenizer, the 90/10 split and the seeded window sampler.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <posenc/transformer.hpp>

using namespace posenc;

TEST_CASE("the vocabulary is the sorted set of the corpus's distinct bytes") {
  const CharTokenizer tok = CharTokenizer::from_corpus("hello, world\n");
  CHECK(tok.symbols() == std::string("\n ,dehlorw"));
  CHECK(tok.vocab_size() == 10);
  const std::vector<TokenId> ids = tok.encode("world");
  CHECK(ids == std::vector<TokenId>{9, 7, 8, 6, 3});
  CHECK(tok.decode(ids) == "world");
  CHECK_THROWS_WITH(tok.encode("wax"), Catch::Contains("byte 97 ('a') at offset 1 is not in the vocabulary"));
  CHECK_THROWS_WITH(tok.decode(std::vector<TokenId>{3, 10}), Catch::Contains("token id 10"));
  CHECK_THROWS_WITH(CharTokenizer("abca"), Catch::Contains("lists byte 97 twice"));
}

TEST_CASE("the first 90% of the corpus trains and the rest validates") {
  std::string corpus;
  for (int i = 0; i < 100; ++i) corpus += static_cast<char>('a' + i % 7);
  const TextDataset data(corpus);
  CHECK(data.vocab_size() == 7);
  CHECK(data.train().size() == 90);
  CHECK(data.val().size() == 10);
  CHECK(data.tokenizer().decode(data.val()) == corpus.substr(90));
  CHECK_THROWS_WITH(TextDataset(""), Catch::Contains("the corpus is empty"));
}

TEST_CASE("the sampler draws windows of T+1 tokens, seeded") {
  std::string corpus;
  for (int i = 0; i < 500; ++i) corpus += static_cast<char>('A' + i % 50);
  const TextDataset data(corpus);
  BatchSampler sampler(data.train(), 64, 10, 42);
  Tokens x, y;
  sampler.sample(x, y);
  REQUIRE(x.shape()[0] == 64);
  REQUIRE(x.shape()[1] == 10);
  std::set<TokenId> starts;
  for (std::size_t b = 0; b < 64; ++b) {
    starts.insert(x(b, 0));
    for (std::size_t t = 0; t < 10; ++t) {
      REQUIRE(y(b, t) == (x(b, t) + 1) % 50);  // targets are the inputs shifted by one
      if (t > 0) REQUIRE(x(b, t) == (x(b, t - 1) + 1) % 50);
    }
  }
  CHECK(starts.size() > 30);  // 64 draws over 50 distinct start symbols

  BatchSampler same(data.train(), 64, 10, 42), other(data.train(), 64, 10, 43);
  Tokens x2, y2, x3, y3;
  same.sample(x2, y2);
  other.sample(x3, y3);
  const auto ids = [](const Tokens& t) { return std::vector<TokenId>(t.begin(), t.end()); };
  CHECK(ids(x2) == ids(x));
  CHECK(ids(x3) != ids(x));

  CHECK_THROWS_WITH(BatchSampler(data.val(), 4, 50, 1, "validation split"),
                    Catch::Contains("validation split has 50 tokens, shorter than one window"));
  CHECK_THROWS_WITH(BatchSampler(data.val(), 0, 5, 1), Catch::Contains("batch size must be positive"));
}

TEST_CASE("read_text_file names the file it cannot use") {
  const auto dir = std::filesystem::temp_directory_path();
  const std::string missing = (dir / "posenc-test-no-such-file.txt").string();
  std::filesystem::remove(missing);
  CHECK_THROWS_WITH(read_text_file(missing), Catch::Contains("cannot open data file '" + missing + "'"));
  const std::string empty = (dir / "posenc-test-empty.txt").string();
  std::ofstream(empty).close();
  CHECK_THROWS_WITH(read_text_file(empty), Catch::Contains("data file '" + empty + "' is empty"));
  std::filesystem::remove(empty);
  // a device that never ends would be read until memory runs out
  CHECK_THROWS_WITH(read_text_file("/dev/zero"), Catch::Contains("data file '/dev/zero' is not a regular file"));
}

TEST_CASE("read_corpus reads a file, or a folder's files joined in path order, hidden ones left out, or several") {
  const auto dir = std::filesystem::temp_directory_path() / "posenc-test-corpus-folder";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "b" / "inner");
  std::filesystem::create_directories(dir / ".git");
  const auto write = [](const std::filesystem::path& p, const std::string& text) { std::ofstream(p) << text; };
  write(dir / "c.txt", "third ");
  write(dir / "a.txt", "first ");
  write(dir / "b" / "inner" / "x.txt", "second ");
  write(dir / "b" / "empty.txt", "");
  write(dir / ".hidden", "never ");
  write(dir / ".git" / "HEAD", "never ");
  CHECK(read_corpus(dir.string()) == "first second third ");
  CHECK(read_corpus((dir / "a.txt").string()) == "first ");
  std::filesystem::create_directories(dir / "none" / "deeper");
  CHECK_THROWS_WITH(read_corpus((dir / "none").string()), Catch::Contains("holds no file with any bytes"));
  // several, joined with ':' in the order given; a name with ':' that exists is one file
  const std::string c = (dir / "c.txt").string(), a = (dir / "a.txt").string();
  CHECK(read_corpus(c + ":" + a) == "third first ");
  CHECK(read_corpus(c + ":" + (dir / "b").string() + ":" + a) == "third second first ");
  write(dir / "x:y.txt", "colon ");
  CHECK(read_corpus((dir / "x:y.txt").string()) == "colon ");
  CHECK_THROWS_WITH(read_corpus(c + ":" + (dir / "missing.txt").string()),
                    Catch::Contains("cannot open data file '" + (dir / "missing.txt").string() + "'"));
  CHECK_THROWS_WITH(read_corpus(c + "::" + a), Catch::Contains("an empty path between ':'s"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("Rng: the same seed gives the same stream, and its state can be saved and restored") {
  Rng a(7), b(7);
  for (int i = 0; i < 10; ++i) REQUIRE(a.next() == b.next());
  const std::string state = a.state();
  const double next = a.normal(0, 1);
  Rng c(99);
  c.set_state(state);
  CHECK(c.normal(0, 1) == next);
  CHECK_THROWS_WITH(c.set_state("not a state"), Catch::Contains("not a saved generator state"));
  double mean = 0;
  for (int i = 0; i < 20000; ++i) mean += a.uniform() / 20000;
  CHECK(mean == Approx(0.5).margin(0.01));
}

TEST_CASE("evaluate_loss scores every target once in non-overlapping windows") {
  // A model whose loss is a known function of the targets shows which targets were scored.
  struct CountingModel {
    std::vector<int> seen;  // how often each target position was scored
    const std::vector<TokenId>* tokens;
    float loss(const Tokens& x, const Tokens& y) {
      double sum = 0;
      for (std::size_t b = 0; b < y.shape()[0]; ++b)
        for (std::size_t t = 0; t < y.shape()[1]; ++t) sum += y(b, t);
      (void)x;
      for (std::size_t b = 0; b < y.shape()[0]; ++b)
        for (std::size_t t = 0; t < y.shape()[1]; ++t) seen[static_cast<std::size_t>(y(b, t))] += 1;
      return static_cast<float>(sum / static_cast<double>(y.size()));
    }
  };
  std::vector<TokenId> tokens(23);
  for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<TokenId>(i);
  CountingModel model{std::vector<int>(23, 0), &tokens};
  // 22 targets (1..22) in windows of 5 with batches of 2: 4 full windows and one of 2.
  const LossResult r = evaluate_loss(model, tokens, 5, 2);
  CHECK(r.targets == 22);
  CHECK(model.seen[0] == 0);
  for (std::size_t i = 1; i < 23; ++i) CHECK(model.seen[i] == 1);
  CHECK(r.loss == Approx((1.0 + 22.0) / 2.0));  // the mean of the targets 1..22
  CHECK_THROWS_WITH(evaluate_loss(model, std::vector<TokenId>{1}, 5), Catch::Contains("need at least 2"));
}

TEST_CASE("every evaluation asks should_stop before each batch and throws EvaluationStopped when it says stop") {
  struct BatchCounter {
    int batches = 0;
    float loss(const Tokens&, const Tokens&) {
      ++batches;
      return 1.0f;
    }
    float loss(const Tokens& x, const Tokens& y, const TargetMask&) { return loss(x, y); }
  };
  std::vector<TokenId> tokens(200);
  for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<TokenId>(i % 7);
  for (const int allowed : {0, 3}) {
    int asked = 0;
    const StopCheck stop_after = [&] { return asked++ == allowed; };
    BatchCounter full, estimated;
    CHECK_THROWS_AS(evaluate_loss(full, tokens, 5, 2, stop_after), EvaluationStopped);
    CHECK(full.batches == allowed);
    asked = 0;
    CHECK_THROWS_AS(estimate_loss(estimated, tokens, 2, 5, 10, 1, "split", nullptr, stop_after), EvaluationStopped);
    CHECK(estimated.batches == allowed);
  }
  // The probes and the sliding windows, on a stand-in model whose forward passes are counted.
  struct ForwardCounter {
    int batches = 0;
    Tensor<double, 3> logits;
    std::size_t vocab_size() const { return 7; }
    std::size_t max_context() const { return 64; }
    const Tensor<double, 3>& forward(const Tokens& x) {
      ++batches;
      logits = xt::zeros<double>({x.shape()[0], x.shape()[1], vocab_size()});
      return logits;
    }
  };
  for (const int allowed : {0, 2}) {
    int asked = 0;
    const StopCheck stop_after = [&] { return asked++ == allowed; };
    ForwardCounter sliding, by_position, copying;
    CHECK_THROWS_AS(evaluate_loss_sliding(sliding, tokens, 8, 4, 16, stop_after), EvaluationStopped);
    CHECK(sliding.batches == allowed);
    asked = 0;
    CHECK_THROWS_AS(per_position_loss(by_position, tokens, 8, 2, stop_after), EvaluationStopped);
    CHECK(by_position.batches == allowed);
    asked = 0;
    CHECK_THROWS_AS(copy_probe(copying, tokens, 4, 20, 2, stop_after), EvaluationStopped);
    CHECK(copying.batches == allowed);
  }
  BatchCounter never_stopped;
  CHECK(evaluate_loss(never_stopped, tokens, 5, 2, [] { return false; }).targets == 199);
  CHECK(never_stopped.batches == 21);  // 39 full windows of 5 in 20 batches of 2 or 1, then the last 4 targets
}

TEST_CASE("evaluate_loss_sliding scores every target once, each from its own position") {
  // A stand-in model whose logits at a position favour "the input + 1": the loss of a target
  // depends only on the input at the same position, so a misaligned or repeated target changes
  // the mean. The expected mean is computed target by target.
  struct SuccessorModel {
    std::size_t V = 5;
    Tensor<double, 3> logits;
    const Tensor<double, 3>& forward(const Tokens& x) {
      logits = xt::zeros<double>({x.shape()[0], x.shape()[1], V});
      for (std::size_t b = 0; b < x.shape()[0]; ++b)
        for (std::size_t t = 0; t < x.shape()[1]; ++t)
          logits(b, t, static_cast<std::size_t>(x(b, t) + 1) % V) = 2.0;
      return logits;
    }
    float loss(const Tokens&, const Tokens&) { return 0; }  // unused here
  };
  Rng rng(3);
  std::vector<TokenId> tokens(103);
  for (auto& t : tokens) t = static_cast<TokenId>(rng.uniform_index(5));
  double expected = 0;
  const double z = std::log(std::exp(2.0) + 4.0);
  for (std::size_t i = 0; i + 1 < tokens.size(); ++i)
    expected += (static_cast<std::size_t>(tokens[i + 1]) == static_cast<std::size_t>(tokens[i] + 1) % 5 ? z - 2.0 : z);
  expected /= static_cast<double>(tokens.size() - 1);
  SuccessorModel model;
  for (const auto& [L, S] : {std::pair<std::size_t, std::size_t>{16, 8}, {16, 16}, {10, 3}, {40, 1}, {200, 100}}) {
    const LossResult r = evaluate_loss_sliding(model, tokens, L, S, 64);
    INFO("L = " << L << ", stride = " << S);
    CHECK(r.targets == 102);
    CHECK(r.loss == Approx(expected).epsilon(1e-12));
  }
  CHECK_THROWS_WITH(evaluate_loss_sliding(model, tokens, 8, 9), Catch::Contains("stride 9 must lie in [1, 8]"));
}
