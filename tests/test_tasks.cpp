// Tests of the synthetic tasks: examples, target masks, batches, the masked loss, training and exact-match accuracy.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <posenc/transformer.hpp>

#include "thread_counts.hpp"

using namespace posenc;

namespace {

// Text to hide a pass key in: every symbol a task's question uses, repeated.
std::string filler() {
  std::string text;
  for (int i = 0; i < 60; ++i) text += "What is the pass key? Remember it, the rose. " + std::to_string(i % 3) + "\n";
  return text;
}

Task make_task(TaskKind kind) { return kind == TaskKind::passkey ? Task(kind, filler()) : Task(kind); }

// The answer characters of an example, in order.
std::string answer_of(const TaskExample& e) {
  std::string out;
  for (std::size_t i = 0; i < e.text.size(); ++i)
    if (e.answer[i] != 0) out += e.text[i];
  return out;
}

// The answer an example's prompt asks for, computed from the prompt alone.
std::string expected_answer(TaskKind kind, const TaskExample& e) {
  const std::string& s = e.text;
  switch (kind) {
    case TaskKind::copy: return s.substr(0, s.find('|'));
    case TaskKind::reverse: {
      std::string r = s.substr(0, s.find('|'));
      std::reverse(r.begin(), r.end());
      return r;
    }
    case TaskKind::associative_recall: {
      std::map<std::string, char> value;
      const std::size_t bar = s.find('|');
      for (std::size_t i = 0; i < bar; i += 3) value[s.substr(i, 2)] = s[i + 2];
      std::string out;
      for (std::size_t i = bar + 1; i < s.size(); i += 3) out += value.at(s.substr(i, 2));
      return out;
    }
    case TaskKind::passkey: {
      const std::size_t at = s.find(Task::passkey_needle_start) + Task::passkey_needle_start.size();
      return s.substr(at, Task::passkey_digits);
    }
    case TaskKind::addition: {
      // digits least significant first: read back to front
      const std::size_t plus = s.find('+'), equals = s.find('=');
      std::string a = s.substr(0, plus), b = s.substr(plus + 1, equals - plus - 1);
      std::reverse(a.begin(), a.end());
      std::reverse(b.begin(), b.end());
      std::string sum = std::to_string(std::stoull(a) + std::stoull(b));
      while (sum.size() < e.length + 1) sum.insert(sum.begin(), '0');
      std::reverse(sum.begin(), sum.end());
      return sum;
    }
    case TaskKind::sort: {  // counted: each letter as often as the prompt holds it, a to z
      const std::string prompt = s.substr(0, s.find('|'));
      std::string out;
      for (char c = 'a'; c <= 'z'; ++c)
        out.append(static_cast<std::size_t>(std::count(prompt.begin(), prompt.end(), c)), c);
      return out;
    }
  }
  return {};
}

// A stand-in model whose logits put the copy task's answer first: each answer character is the
// input `separator position` back (text = s|s). With `wrong_at`, it misses that answer character.
struct CopyOracle {
  CopyOracle(std::size_t vocab_size, TokenId separator_id) : vocab(vocab_size), separator(separator_id) {}
  std::size_t vocab = 0, wrong_at = SIZE_MAX, max_positions = 1000;
  TokenId separator = 0;
  Tensor<float, 3> logits;
  std::size_t vocab_size() const { return vocab; }
  std::size_t max_context() const { return max_positions; }
  const Tensor<float, 3>& forward(const Tokens& x) {
    const std::size_t B = x.shape()[0], T = x.shape()[1];
    logits = xt::zeros<float>({B, T, vocab});
    for (std::size_t b = 0; b < B; ++b) {
      std::size_t n = 0;
      while (x(b, n) != separator) ++n;
      for (std::size_t t = n; t < T; ++t) {
        auto next = static_cast<std::size_t>(x(b, t - n));
        if (t - n == wrong_at) next = (next + 1) % vocab;
        logits(b, t, next) = 5;
      }
    }
    return logits;
  }
};

}  // namespace

TEST_CASE("each task's example, by hand: prompt, answer and mask") {
  Rng rng(7);
  const Task copy(TaskKind::copy);
  const TaskExample c = copy.example(4, Split::train, rng);
  REQUIRE(c.text.size() == 9);
  CHECK(c.text.substr(4) == "|" + c.text.substr(0, 4));
  CHECK(c.answer == std::vector<std::uint8_t>{0, 0, 0, 0, 0, 1, 1, 1, 1});
  CHECK(c.length == 4);

  const Task reverse(TaskKind::reverse);
  const TaskExample r = reverse.example(3, Split::train, rng);
  CHECK(r.text == r.text.substr(0, 3) + "|" + std::string{r.text[2], r.text[1], r.text[0]});

  // two pairs, then both keys asked in some order, each answered by its value
  const Task recall(TaskKind::associative_recall);
  const TaskExample a = recall.example(2, Split::train, rng);
  REQUIRE(a.text.size() == 13);
  CHECK(a.text[6] == '|');
  CHECK(a.answer == std::vector<std::uint8_t>{0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 1});
  CHECK(std::set<std::string>{a.text.substr(0, 2), a.text.substr(3, 2)} ==
        std::set<std::string>{a.text.substr(7, 2), a.text.substr(10, 2)});
  CHECK(answer_of(a) == expected_answer(TaskKind::associative_recall, a));

  const Task add(TaskKind::addition);
  const TaskExample s = add.example(3, Split::train, rng);
  REQUIRE(s.text.size() == 12);
  CHECK(s.text[3] == '+');
  CHECK(s.text[7] == '=');
  CHECK(answer_of(s) == s.text.substr(8));
  CHECK(answer_of(s) == expected_answer(TaskKind::addition, s));

  const Task sort(TaskKind::sort);
  const TaskExample o = sort.example(5, Split::train, rng);
  REQUIRE(o.text.size() == 11);
  CHECK(o.text[5] == '|');
  CHECK(o.answer == std::vector<std::uint8_t>{0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1});
  CHECK(std::is_sorted(o.text.begin() + 6, o.text.end()));
  CHECK(std::is_permutation(o.text.begin(), o.text.begin() + 5, o.text.begin() + 6));
  CHECK(expected_answer(TaskKind::sort, TaskExample{"dbcab|abbcd", {0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1}, 5}) == "abbcd");

  const Task passkey(TaskKind::passkey, filler());
  const TaskExample p = passkey.example(40, Split::validation, rng);
  CHECK(p.text.size() == passkey.sequence_length(40));
  CHECK(p.text.ends_with(std::string(Task::passkey_question) + answer_of(p)));
  CHECK(answer_of(p).size() == 5);
  CHECK(p.text.find(std::string(Task::passkey_needle_start) + answer_of(p) + std::string(Task::passkey_needle_end)) !=
        std::string::npos);
}

TEST_CASE("a hand-computed reversed addition: 57 + 68 = 125 is 75+86=521") {
  // find a seed's example of two digits, then check its sum digit by digit as written on paper
  Rng rng(3);
  const Task add(TaskKind::addition);
  for (int k = 0; k < 20; ++k) {
    const TaskExample e = add.example(2, Split::train, rng);
    const int a = (e.text[0] - '0') + 10 * (e.text[1] - '0'), b = (e.text[3] - '0') + 10 * (e.text[4] - '0');
    const int sum = (e.text[6] - '0') + 10 * (e.text[7] - '0') + 100 * (e.text[8] - '0');
    CHECK(a + b == sum);
    CHECK(e.text[1] != '0');  // two-digit numbers have no leading zero
  }
  CHECK(expected_answer(TaskKind::addition, TaskExample{"75+86=521", {0, 0, 0, 0, 0, 0, 1, 1, 1}, 2}) == "521");
}

TEST_CASE("every task's answers are what its prompts ask, at every length, and examples are deterministic by seed") {
  for (const TaskInfo& info : task_infos) {
    CAPTURE(info.name);
    const Task task = make_task(info.kind);
    Rng rng(11), same(11), other(12);
    bool any_differs = false;
    for (std::size_t n = 1; n <= 12; ++n) {
      for (int k = 0; k < 5; ++k) {
        const TaskExample e = task.example(n, Split::train, rng);
        CAPTURE(n, e.text);
        CHECK(e.text.size() == task.sequence_length(n));
        CHECK(e.answer.size() == e.text.size());
        CHECK(e.answer.front() == 0);  // the first character is never predicted
        CHECK(answer_of(e) == expected_answer(info.kind, e));
        for (const char ch : e.text) CHECK(task.tokenizer().contains(ch));
        CHECK(task.example(n, Split::train, same).text == e.text);
        any_differs = any_differs || task.example(n, Split::train, other).text != e.text;
      }
    }
    CHECK(any_differs);
  }
}

TEST_CASE("a task's batches: padded examples, the mask on the answers only, the same batches for the same seed") {
  const TaskData data(Task(TaskKind::copy), {1, 6});
  CHECK(data.context() == 12);
  const auto stream = data.batches(Split::train, 16, data.context(), 5);
  const auto again = data.batches(Split::train, 16, data.context(), 5);
  Batch batch, same;
  std::set<std::size_t> lengths;
  for (int k = 0; k < 10; ++k) {
    stream->sample(batch);
    again->sample(same);
    CHECK((batch.inputs == same.inputs));
    CHECK((batch.targets == same.targets));
    REQUIRE(batch.mask.has_value());
    CHECK((*batch.mask == *same.mask));
    for (std::size_t b = 0; b < 16; ++b) {
      std::vector<TokenId> ids(batch.inputs.shape()[1]);
      for (std::size_t t = 0; t < ids.size(); ++t) ids[t] = batch.inputs(b, t);
      const std::string row = data.tokenizer().decode(ids);
      const std::size_t n = row.find('|');
      lengths.insert(n);
      for (std::size_t t = 0; t < batch.inputs.shape()[1]; ++t) {
        CAPTURE(row, t);
        // targets t = n … 2n − 1 are the copy; the prompt and the padding after it are not scored
        CHECK((*batch.mask)(b, t) == (t >= n && t < 2 * n ? 1 : 0));
        if (t + 1 < 2 * n) CHECK(batch.targets(b, t) == batch.inputs(b, t + 1));
      }
    }
  }
  CHECK(lengths == std::set<std::size_t>{1, 2, 3, 4, 5, 6});
  const auto other = data.batches(Split::train, 16, data.context(), 6);
  other->sample(same);
  CHECK(!(same.inputs == batch.inputs));
}

TEST_CASE("the masked loss is the mean over the answers' targets: the prompt's targets change neither it nor its "
          "gradient") {
  using Model = CharTransformer<RoPE, 1, 8, 2, double>;
  const TaskData data(Task(TaskKind::reverse), {2, 5});
  const auto stream = data.batches(Split::train, 4, data.context(), 1);
  Batch batch;
  stream->sample(batch);
  Model model(data.vocab_size(), data.context());
  const double loss = model.loss(batch.inputs, batch.targets, *batch.mask);
  const auto logits = model.forward(batch.inputs);
  double expected = 0;
  std::size_t scored = 0;
  for (std::size_t b = 0; b < 4; ++b)
    for (std::size_t t = 0; t < batch.inputs.shape()[1]; ++t) {
      if ((*batch.mask)(b, t) == 0) continue;
      double z = 0;
      for (std::size_t v = 0; v < data.vocab_size(); ++v) z += std::exp(logits(b, t, v));
      expected += std::log(z) - logits(b, t, static_cast<std::size_t>(batch.targets(b, t)));
      ++scored;
    }
  CHECK(loss == Approx(expected / static_cast<double>(scored)).epsilon(1e-12));

  model.zero_grad();
  model.loss_and_backward(batch.inputs, batch.targets, *batch.mask);
  const std::vector<double> gradient(model.gradients().data(), model.gradients().data() + model.gradients().size());
  Tokens scrambled = batch.targets;
  for (std::size_t b = 0; b < 4; ++b)
    for (std::size_t t = 0; t < scrambled.shape()[1]; ++t)
      if ((*batch.mask)(b, t) == 0) scrambled(b, t) = static_cast<TokenId>((t * 7 + b) % data.vocab_size());
  CHECK(model.loss(batch.inputs, scrambled, *batch.mask) == loss);
  model.zero_grad();
  model.loss_and_backward(batch.inputs, scrambled, *batch.mask, 2.5);
  for (std::size_t i = 0; i < gradient.size(); ++i) CHECK(model.gradients().data()[i] == Approx(2.5 * gradient[i]));

  TargetMask none = *batch.mask;
  none.fill(0);
  CHECK_THROWS_WITH(model.loss(batch.inputs, batch.targets, none), Catch::Contains("scores no target"));
  TargetMask every = *batch.mask;
  every.fill(1);
  CHECK(model.loss(batch.inputs, batch.targets, every) == model.loss(batch.inputs, batch.targets));
}

TEST_CASE("accuracy: a model that copies perfectly scores 1 at every length, and one wrong character fails it") {
  const Task task(TaskKind::copy);
  CopyOracle oracle(task.tokenizer().vocab_size(), task.tokenizer().encode("|")[0]);
  const std::vector<TaskScore> perfect = evaluate_task(oracle, task, task.tokenizer(), {1, 40}, 16, 3, 7);
  REQUIRE(perfect.size() == 40);
  for (const TaskScore& s : perfect) {
    CAPTURE(s.length);
    CHECK(s.evaluated);
    CHECK(s.examples == 16);
    CHECK(s.accuracy == 1);
    CHECK(s.char_accuracy == 1);
    // the answer's logit 5 against 26 others of 0
    CHECK(s.answer_loss == Approx(std::log(1 + 26 * std::exp(-5.0))));
    CHECK(s.sequence == 2 * s.length + 1);
  }
  // wrong at the answer's third character: lengths from 3 fail every example, shorter ones never reach it
  oracle.wrong_at = 2;
  const std::vector<TaskScore> flawed = evaluate_task(oracle, task, task.tokenizer(), {1, 8}, 16, 3, 7);
  for (const TaskScore& s : flawed) {
    CAPTURE(s.length);
    CHECK(s.accuracy == (s.length >= 3 ? 0.0 : 1.0));
    if (s.length >= 3) CHECK(s.char_accuracy == Approx(1 - 1.0 / static_cast<double>(s.length)));
  }
  // lengths past what the model accepts are reported, not evaluated
  oracle.max_positions = 20;
  const std::vector<TaskScore> bounded = evaluate_task(oracle, task, task.tokenizer(), {9, 11}, 4, 3);
  CHECK(bounded[0].evaluated);
  CHECK(bounded[1].evaluated);  // 2·10 + 1 characters: 20 inputs
  CHECK_FALSE(bounded[2].evaluated);
  // each length's examples are the same whatever range is asked
  const auto one = evaluate_task(oracle, task, task.tokenizer(), {5, 5}, 4, 9);
  const auto range = evaluate_task(oracle, task, task.tokenizer(), {3, 6}, 4, 9);
  CHECK(one[0].answer_loss == range[2].answer_loss);
}

TEST_CASE("a curriculum: stages read and written back, each step's lengths, and bad curricula are errors") {
  const TaskCurriculum curriculum = parse_task_curriculum("2:30000,2-4:20000");
  REQUIRE(curriculum.size() == 2);
  CHECK(curriculum[0] == TaskStage{{2, 2}, 30000});
  CHECK(curriculum[1] == TaskStage{{2, 4}, 20000});
  CHECK(to_string(curriculum) == "2-2:30000,2-4:20000");
  CHECK(parse_task_curriculum(to_string(curriculum)) == curriculum);
  CHECK(parse_task_curriculum("").empty());
  CHECK(curriculum_steps(curriculum) == 50000);
  const TaskSpec spec{TaskKind::associative_recall, {2, 8}, curriculum};
  CHECK(to_string(spec) == "associative-recall 2-8 after 2-2:30000,2-4:20000");
  CHECK(lengths_at_step(spec, 0) == TaskLengths{2, 2});
  CHECK(lengths_at_step(spec, 29999) == TaskLengths{2, 2});
  CHECK(lengths_at_step(spec, 30000) == TaskLengths{2, 4});
  CHECK(lengths_at_step(spec, 49999) == TaskLengths{2, 4});
  CHECK(lengths_at_step(spec, 50000) == TaskLengths{2, 8});
  CHECK(lengths_at_step({TaskKind::copy, {1, 16}}, 0) == TaskLengths{1, 16});
  CHECK_NOTHROW(check_curriculum_steps(spec, 50001));
  CHECK_THROWS_WITH(check_curriculum_steps(spec, 50000),
                    Catch::Contains("its 50000 steps leave none of the run's 50000 for the task lengths 2-8"));
  CHECK_THROWS_WITH(check_curriculum({TaskKind::copy, {1, 4}, {{{1, 6}, 10}}}),
                    Catch::Contains("stage lengths 1-6 exceed the task lengths 1-4"));
  for (const char* bad : {"2", "2:", ":5", "2:0", "2:x", "2:-1", "2:5,", ",2:5", "2:5,,3:5", "2:1.5", "2-1:5", "0:5"})
    CHECK_THROWS_WITH(parse_task_curriculum(bad), Catch::Contains("task "));
  CHECK_THROWS_WITH(parse_task_curriculum("2:1099511627777"), Catch::Contains("has more than 1099511627776 steps"));
  CHECK_THROWS_WITH(parse_task_curriculum("2:99999999999999999999999"), Catch::Contains("is not LENGTHS:STEPS"));
  // a stage that may end at a loss: read, written back, and its end as a training run sees it
  const TaskCurriculum marked = parse_task_curriculum("2:30000@0.05,2-4:20000");
  CHECK(marked[0] == TaskStage{{2, 2}, 30000, 0.05});
  CHECK(marked[1] == TaskStage{{2, 4}, 20000});
  CHECK(to_string(marked) == "2-2:30000@0.05,2-4:20000");
  CHECK(parse_task_curriculum(to_string(marked)) == marked);
  CHECK(parse_task_curriculum("1:5@0.1")[0].until_loss == 0.1);  // the shortest text reads back as the same double
  CHECK(to_string(parse_task_curriculum("1:5@0.1")) == "1-1:5@0.1");
  const TaskSpec marked_spec{TaskKind::associative_recall, {2, 8}, marked};
  CHECK(stage_at_step(marked_spec, 0)->end == 30000);
  CHECK(stage_at_step(marked_spec, 29999)->until_loss == 0.05);
  CHECK(stage_at_step(marked_spec, 30000)->end == 50000);
  CHECK_FALSE(stage_at_step(marked_spec, 30000)->until_loss);
  CHECK_FALSE(stage_at_step(marked_spec, 50000));
  CHECK_FALSE(TaskData(Task(TaskKind::copy), {1, 4}).stage_at(0));
  CHECK(TaskData(Task(TaskKind::copy), {1, 4}, std::nullopt, marked_spec.curriculum).stage_at(49999)->end == 50000);
  for (const char* bad : {"2:5@", "2:5@0", "2:5@-1", "2:5@x", "2:5@nan", "2:5@inf", "2:5@1e999", "2:5@0.1@0.2",
                          "2@0.1:5", "2:5@ 0.1"})
    CHECK_THROWS_WITH(parse_task_curriculum(bad), Catch::Contains("task curriculum '"));
  CHECK_THROWS_WITH(parse_task_curriculum("2:5@-1"),
                    Catch::Contains("ends at a loss '-1', which is not a number above 0"));
  CHECK_THROWS_WITH(TaskData(Task(TaskKind::copy), {1, 4}, std::nullopt, {{{2, 6}, 5}}),
                    Catch::Contains("stage lengths 2-6 exceed the task lengths 1-4"));
  CHECK_THROWS_WITH(TaskData(Task(TaskKind::associative_recall), {1, 8}, std::nullopt, {{{2, 700}, 5}}),
                    Catch::Contains("length 700 exceeds the longest it has"));
}

TEST_CASE("a curriculum's stream draws each step's lengths, and a stream never told a step the trained ones") {
  const TaskData data(Task(TaskKind::copy), {1, 6}, std::nullopt, {{{2, 2}, 3}, {{1, 3}, 2}});
  CHECK(data.context() == 12);  // the trained lengths' longest example sets it
  const auto lengths_drawn = [&](BatchStream& stream) {
    Batch batch;
    std::set<std::size_t> lengths;
    for (int k = 0; k < 20; ++k) {
      stream.sample(batch);
      for (std::size_t b = 0; b < batch.inputs.shape()[0]; ++b) {
        std::size_t answers = 0;
        for (std::size_t t = 0; t < batch.inputs.shape()[1]; ++t) answers += (*batch.mask)(b, t);
        lengths.insert(answers);  // copy answers its n characters
      }
    }
    return lengths;
  };
  const auto stream = data.batches(Split::train, 8, data.context(), 1);
  for (const std::int64_t step : {0, 2}) {
    stream->at_step(step);
    CHECK(lengths_drawn(*stream) == std::set<std::size_t>{2});
  }
  stream->at_step(3);
  CHECK(lengths_drawn(*stream) == std::set<std::size_t>{1, 2, 3});
  stream->at_step(5);
  CHECK(lengths_drawn(*stream) == std::set<std::size_t>{1, 2, 3, 4, 5, 6});
  const auto evaluation = data.batches(Split::validation, 8, data.context(), 1);
  CHECK(lengths_drawn(*evaluation) == std::set<std::size_t>{1, 2, 3, 4, 5, 6});
}

TEST_CASE("bad task settings are errors that say what is wrong") {
  CHECK_THROWS_WITH(parse_task_kind("sorting"), Catch::Contains("unknown task 'sorting'") &&
                                                    Catch::Contains("copy, reverse, associative-recall, passkey"));
  CHECK(parse_task_kind("associative-recall") == TaskKind::associative_recall);
  CHECK(parse_task_lengths("3-17") == TaskLengths{3, 17});
  CHECK(parse_task_lengths("8") == TaskLengths{8, 8});
  for (const char* bad : {"0-4", "5-2", "a-3", "1-", "-4", "", "1-2-3", "1.5"})
    CHECK_THROWS_WITH(parse_task_lengths(bad), Catch::Contains("task lengths"));
  CHECK_THROWS_WITH(Task(TaskKind::passkey), Catch::Contains("needs a corpus"));
  CHECK_THROWS_WITH(Task(TaskKind::copy, "some text"), Catch::Contains("takes no corpus"));
  CHECK_THROWS_WITH(Task(TaskKind::associative_recall).check({1, 677}),
                    Catch::Contains("length 677 exceeds the longest it has (676 key-value pairs)"));
  CHECK_THROWS_WITH(Task(TaskKind::passkey, filler()).check({1, 100000}), Catch::Contains("exceeds the longest"));
  CHECK_THROWS_WITH(TaskData(Task(TaskKind::copy), {1, 8}).batches(Split::train, 4, 10, 1),
                    Catch::Contains("longest example has 16 inputs, more than the context 10"));
  CHECK_THROWS_WITH(TaskData(Task(TaskKind::copy), {1, 8}, CharTokenizer("abc|")),
                    Catch::Contains("lacks the symbol 'd'"));
}

TEST_CASE("tested lengths: a list of ranges read and written back, to 8 × the trained by default, grouped in bands") {
  CHECK(parse_length_list("1-4,8,6,3,16-17") == std::vector<std::size_t>{1, 2, 3, 4, 6, 8, 16, 17});
  CHECK(length_list_text({1, 2, 3, 4, 6, 8, 16, 17}) == "1-4,6,8,16-17");
  CHECK(length_list_text({5}) == "5");
  for (const char* bad : {"", "1,,2", "0-3", "4-2", "1,x"})
    CHECK_THROWS_WITH(parse_length_list(bad), Catch::Contains("task lengths"));
  CHECK_THROWS_WITH(parse_length_list("1-99999999"), Catch::Contains("more than 2^20 lengths"));
  const std::vector<std::size_t> every = default_test_lengths({1, 16});
  CHECK(every.size() == 128);
  CHECK(every.front() == 1);
  CHECK(every.back() == 128);
  const std::vector<std::size_t> spaced = default_test_lengths({1, 256});  // 2048: every 16th
  CHECK(spaced.size() == 128);
  CHECK(spaced.front() == 16);
  CHECK(spaced[1] == 32);
  CHECK(spaced.back() == 2048);
  const std::vector<LengthBand> bands = length_bands(16, every);
  REQUIRE(bands.size() == 4);
  CHECK(bands[0].trained);
  CHECK(bands[0].lengths.size() == 16);
  CHECK(bands[1].label() == "17–32");
  CHECK(bands[3].first == 65);
  CHECK(bands[3].last == 128);
  CHECK(bands[3].lengths.size() == 64);
  const std::vector<LengthBand> sparse = length_bands(4, {2, 40});  // no tested length in 5–8, 9–16, 17–32
  REQUIRE(sparse.size() == 2);
  CHECK(sparse[1].label() == "33–64");
}

namespace {

// A task's data whose training stream records what it is told and when it draws: "step N" for
// at_step(N), "draw" for sample().
class RecordingData final : public TrainingData {
 public:
  explicit RecordingData(const TaskData& task) : task_(task) {}
  const Tokenizer& tokenizer() const override { return task_.tokenizer(); }
  std::unique_ptr<BatchStream> batches(Split split, std::size_t batch, std::size_t context,
                                       std::uint64_t seed) const override {
    const bool first_training_stream = split == Split::train && !made_training_stream_;
    made_training_stream_ = made_training_stream_ || split == Split::train;
    return std::make_unique<Stream>(task_.batches(split, batch, context, seed), first_training_stream ? &log : nullptr);
  }
  mutable std::vector<std::string> log;  // the first training stream's (a trainer's sampler; the loss estimates
                                         // draw from streams of their own)

 private:
  class Stream final : public BatchStream {
   public:
    Stream(std::unique_ptr<BatchStream> inner, std::vector<std::string>* log) : inner_(std::move(inner)), log_(log) {}
    void sample(Batch& batch) override {
      if (log_ != nullptr) log_->push_back("draw");
      inner_->sample(batch);
    }
    Rng& rng() override { return inner_->rng(); }
    void at_step(std::int64_t step) override {
      if (log_ != nullptr) log_->push_back("step " + std::to_string(step));
      inner_->at_step(step);
    }

   private:
    std::unique_ptr<BatchStream> inner_;
    std::vector<std::string>* log_;
  };
  const TaskData& task_;
  mutable bool made_training_stream_ = false;
};

}  // namespace

TEST_CASE("a run tells its training batches each step before drawing them, so a curriculum follows the steps") {
  using Model = CharTransformer<RoPE, 1, 16, 2>;
  const TaskData task(Task(TaskKind::copy), {1, 3}, std::nullopt, {{{1, 1}, 2}});
  const RecordingData data(task);
  TrainConfig config;
  config.steps = 3;
  config.batch = 4;
  config.grad_accum = 2;
  config.context = task.context();
  config.eval_every = 100;
  config.eval_iters = 1;
  Model model(data.vocab_size(), task.context(), 1);
  Trainer<Model> trainer(model, data, config);
  trainer.run([](const StepReport&) {}, [](const EvalRecord&) {});
  CHECK(data.log == std::vector<std::string>{"step 0", "draw", "draw", "step 1", "draw", "draw", "step 2", "draw",
                                             "draw"});
}

namespace {
using StagedModel = CharTransformer<RoPE, 1, 16, 2>;

struct StagedRun {
  std::vector<EvalRecord> evals;
  std::vector<StepReport> steps;
  std::vector<float> parameters;
};

// A copy model trained on lengths 1-3 after `curriculum`, evaluated every 10 steps.
StagedRun train_staged(const TaskCurriculum& curriculum, std::int64_t steps) {
  const TaskData data(Task(TaskKind::copy), {1, 3}, std::nullopt, curriculum);
  TrainConfig config;
  config.steps = steps;
  config.batch = 16;
  config.context = data.context();
  config.lr = 1e-2;
  config.eval_every = 10;
  config.eval_iters = 2;
  config.schedule = {.kind = ScheduleKind::cosine, .warmup_steps = 2};
  StagedModel model(data.vocab_size(), data.context(), 1);
  Trainer<StagedModel> trainer(model, data, config);
  StagedRun run;
  trainer.run([&](const StepReport& r) { run.steps.push_back(r); },
              [&](const EvalRecord& r) { run.evals.push_back(r); });
  run.parameters.assign(model.parameters().data(), model.parameters().data() + model.parameters().size());
  return run;
}
}  // namespace

TEST_CASE("a stage that ends at a loss ends at the first evaluation below it, and the run skips the steps it leaves") {
  // without a mark: the stage's loss is estimated inside the stage only, and it falls
  const StagedRun plain = train_staged({{{1, 1}, 100}}, 130);
  REQUIRE(plain.evals.size() == 14);
  for (std::size_t i = 0; i < plain.evals.size(); ++i) {
    CHECK(plain.evals[i].stage_loss.has_value() == (plain.evals[i].step < 100));
    CHECK(plain.evals[i].skipped_steps == 0);
  }
  REQUIRE(*plain.evals[1].stage_loss < *plain.evals[0].stage_loss);
  // a mark never reached changes nothing
  const StagedRun unreached = train_staged({{{1, 1}, 100, 1e-9}}, 130);
  CHECK(unreached.parameters == plain.parameters);
  CHECK(unreached.evals.back().skipped_steps == 0);
  // a mark between the stage's losses at steps 0 and 10: the stage ends at step 10, the run skips
  // its 90 steps left — 40 steps trained, at the schedule's rates of steps 0-9 and 100-129
  const double mark = (*plain.evals[0].stage_loss + *plain.evals[1].stage_loss) / 2;
  const StagedRun ended = train_staged({{{1, 1}, 100, mark}}, 130);
  REQUIRE(ended.steps.size() == 40);
  REQUIRE(ended.evals.size() == 5);  // steps 0, 10, 20, 30, 40
  CHECK(ended.evals[0].skipped_steps == 0);
  CHECK(ended.evals[1].stage_loss == plain.evals[1].stage_loss);  // the same run until the stage ends
  CHECK(ended.evals[1].skipped_steps == 90);
  CHECK_FALSE(ended.evals[2].stage_loss);  // past the stage
  CHECK(ended.evals.back().step == 40);
  const LearningRateSchedule cosine{.kind = ScheduleKind::cosine, .warmup_steps = 2};
  CHECK(ended.steps[9].lr == cosine.at(1e-2, 9, 130));
  CHECK(ended.steps[10].lr == cosine.at(1e-2, 100, 130));
  CHECK(ended.steps[39].lr == cosine.at(1e-2, 129, 130));
  CHECK(ended.steps[10].total == 40);
  // a mark the step-0 model already meets: nothing of the stage is trained
  const StagedRun skipped = train_staged({{{1, 1}, 100, 1e9}}, 130);
  CHECK(skipped.evals[0].skipped_steps == 100);
  CHECK(skipped.steps.size() == 30);
}

TEST_CASE("a run whose stage ended at its loss resumes with the steps it skipped, to the uninterrupted run's bits") {
  const TaskData data(Task(TaskKind::copy), {1, 3}, std::nullopt, {{{1, 1}, 100, 1e9}});
  TrainConfig config;
  config.steps = 112;
  config.batch = 8;
  config.context = data.context();
  config.eval_every = 4;
  config.eval_iters = 1;
  config.schedule = {.kind = ScheduleKind::cosine, .warmup_steps = 2};
  const auto base = std::filesystem::temp_directory_path() / "posenc-test-tasks-stage-resume";
  std::filesystem::remove_all(base);
  StagedModel whole(data.vocab_size(), data.context(), 1), stopped(data.vocab_size(), data.context(), 1);
  const auto whole_records = run_training(whole, data, config, RunDirectory(base / "whole"), false);
  REQUIRE(whole_records.back().step == 12);
  TrainingCallbacks stop_at_6;
  std::int64_t steps_seen = 0;
  stop_at_6.on_step = [&](const StepReport& r) { steps_seen = r.step; };
  stop_at_6.should_stop = [&] { return steps_seen == 6; };
  const RunDirectory split(base / "split");
  try {
    run_training(stopped, data, config, split, false, stop_at_6);
    FAIL("the run was not interrupted");
  } catch (const Interrupted& e) {
    CHECK(e.step() == 6);
    CHECK(e.total() == 12);  // the steps the run trains, not its schedule's 112
    CHECK_THAT(e.what(), Catch::Matchers::Contains("step 6 of 12"));
  }
  CHECK(read_eval_log(split.log()).front().skipped_steps == 100);  // the log keeps what was skipped
  StagedModel resumed(data.vocab_size(), data.context(), 2);
  const auto records = run_training(resumed, data, config, split, true);
  REQUIRE(records.size() == whole_records.size());
  for (std::size_t i = 0; i < records.size(); ++i) {
    CHECK(records[i].step == whole_records[i].step);
    CHECK(records[i].val_loss == whole_records[i].val_loss);
    CHECK(records[i].skipped_steps == 100);
  }
  const auto parameters = [](const StagedModel& m) {
    return std::vector<float>(m.parameters().data(), m.parameters().data() + m.parameters().size());
  };
  CHECK(parameters(resumed) == parameters(whole));
  std::filesystem::remove_all(base);
}

TEST_CASE("training on a task: loss on the answers falls, and the run is the same at 1 and 2 threads") {
  posenc_test::ThreadCounts restore;
  using Model = CharTransformer<RoPE, 1, 16, 2>;
  const TaskData data(Task(TaskKind::copy), {1, 3});
  TrainConfig config;
  config.steps = 60;
  config.batch = 16;
  config.context = data.context();
  config.lr = 1e-2;
  config.eval_every = 30;
  config.eval_iters = 4;
  std::vector<std::vector<EvalRecord>> runs;
  for (const std::size_t threads : {1, 2}) {
    set_num_threads(threads);
    Model model(data.vocab_size(), data.context(), 1);
    Trainer<Model> trainer(model, data, config);
    std::vector<EvalRecord> records;
    trainer.run([](const StepReport&) {}, [&](const EvalRecord& r) { records.push_back(r); });
    runs.push_back(records);
  }
  REQUIRE(runs[0].size() == 3);
  // a uniform guess over 27 symbols costs ln 27 = 3.30 per answer character
  CHECK(runs[0][0].val_loss > 3.0);
  CHECK(runs[0][2].val_loss < 0.8 * runs[0][0].val_loss);
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(runs[0][i].train_loss == runs[1][i].train_loss);
    CHECK(runs[0][i].val_loss == runs[1][i].val_loss);
  }
}
