// Tests of the training settings: learning-rate schedules, gradient clipping, weight decay on matrices, accumulation.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include <posenc/encodings/all.hpp>
#include <posenc/train/training_run.hpp>
#include <posenc/transformer.hpp>

#include "thread_counts.hpp"

using namespace posenc;

namespace {

using Model = CharTransformer<RoPE, 1, 8, 2>;

std::string corpus() {
  std::string text;
  for (int i = 0; i < 80; ++i) text += "what's in a name? that which we call a rose " + std::to_string(i % 5) + "\n";
  return text;
}

template <class AnyPolicyModel>
std::vector<float> parameters_of(const AnyPolicyModel& model) {
  const auto& p = model.parameters();
  return {p.data(), p.data() + p.size()};
}

// Trains `model` with `config`; returns the step reports.
template <class AnyPolicyModel>
std::vector<StepReport> train(AnyPolicyModel& model, const TextDataset& data, const TrainConfig& config) {
  Trainer<AnyPolicyModel> trainer(model, data, config);
  std::vector<StepReport> reports;
  trainer.run([&](const StepReport& r) { reports.push_back(r); }, [](const EvalRecord&) {});
  return reports;
}

TrainConfig small_config() {
  return TrainConfig{.steps = 4, .batch = 8, .context = 8, .lr = 3e-3, .eval_every = 100, .eval_iters = 1, .seed = 11};
}

}  // namespace

TEST_CASE("learning-rate schedules give llm.c's rates at chosen steps") {
  const double lr = 1e-3;
  const LearningRateSchedule constant{};
  CHECK(constant.at(lr, 0, 100) == lr);
  CHECK(constant.at(lr, 99, 100) == lr);

  const LearningRateSchedule warm{.kind = ScheduleKind::constant, .warmup_steps = 4};
  CHECK(warm.at(lr, 0, 100) == Approx(0.25e-3));  // (s+1)/warmup
  CHECK(warm.at(lr, 1, 100) == Approx(0.5e-3));
  CHECK(warm.at(lr, 3, 100) == Approx(1e-3));
  CHECK(warm.at(lr, 50, 100) == lr);

  // warm-up 10 of 110 steps, floor 0.1·lr: the decay runs over steps 10 … 110
  const LearningRateSchedule cosine{.kind = ScheduleKind::cosine, .warmup_steps = 10, .min_lr_fraction = 0.1};
  CHECK(cosine.at(lr, 0, 110) == Approx(1e-4));
  CHECK(cosine.at(lr, 9, 110) == Approx(1e-3));
  CHECK(cosine.at(lr, 10, 110) == Approx(1e-3));
  CHECK(cosine.at(lr, 60, 110) == Approx(5.5e-4));  // halfway: the mean of peak and floor
  CHECK(cosine.at(lr, 35, 110) == Approx(1e-4 + 9e-4 * (1 + std::cos(M_PI / 4)) / 2));
  CHECK(cosine.at(lr, 109, 110) == Approx(1e-4 + 9e-4 * (1 + std::cos(M_PI * 0.99)) / 2));
  CHECK(cosine.at(lr, 500, 110) == Approx(1e-4));  // past the run: the floor

  const LearningRateSchedule linear{.kind = ScheduleKind::linear, .warmup_steps = 10, .min_lr_fraction = 0};
  CHECK(linear.at(lr, 35, 110) == Approx(0.75e-3));
  CHECK(linear.at(lr, 85, 110) == Approx(0.25e-3));

  // 100 steps, the last 20 decaying from step 80 to a floor of 0.1·lr
  const LearningRateSchedule wsd{.kind = ScheduleKind::wsd, .warmup_steps = 5, .decay_fraction = 0.2};
  CHECK(wsd.decay_steps(100) == 20);
  CHECK(wsd.at(lr, 2, 100) == Approx(0.6e-3));
  CHECK(wsd.at(lr, 79, 100) == lr);
  CHECK(wsd.at(lr, 80, 100) == lr);
  // llm.c's 1 − sqrt cool-down: floor 1e-4 + 9e-4·(1 − √r), r = (s − 80)/20
  CHECK(wsd.at(lr, 90, 100) == Approx(1e-4 + 9e-4 * (1 - std::sqrt(0.5))));  // 3.636e-4
  CHECK(wsd.at(lr, 99, 100) == Approx(1.2279e-4).epsilon(1e-4));

  CHECK(!constant.depends_on_length());
  CHECK(cosine.depends_on_length());
  CHECK_THROWS_WITH(cosine.check(9), "--warmup-steps 10 exceeds the run's 9 steps");
  CHECK_THROWS_WITH((LearningRateSchedule{.min_lr_fraction = 1.5}.check(10)),
                    "--min-lr-fraction must lie in [0, 1], got 1.5");
  CHECK_THROWS_WITH((LearningRateSchedule{.kind = ScheduleKind::wsd, .decay_fraction = 0}.check(10)),
                    "--decay-fraction must lie in (0, 1], got 0");
  // settings the kind does not read, and a warm-up that leaves nothing to decay
  CHECK_THROWS_WITH((LearningRateSchedule{.min_lr_fraction = 0.05}.check(10)),
                    Catch::StartsWith("--min-lr-fraction: the constant schedule does not decay"));
  CHECK_THROWS_WITH((LearningRateSchedule{.kind = ScheduleKind::cosine, .decay_fraction = 0.5}.check(10)),
                    "--decay-fraction: only the wsd schedule reads it, not cosine");
  CHECK_THROWS_WITH((LearningRateSchedule{.kind = ScheduleKind::linear, .warmup_steps = 10}.check(10)),
                    Catch::Contains("the linear schedule never decays"));
  CHECK_NOTHROW(LearningRateSchedule{.warmup_steps = 10}.check(10));  // constant: all warm-up, but it is asked for
  CHECK(parse_schedule_kind("wsd") == ScheduleKind::wsd);
  CHECK_THROWS_WITH(parse_schedule_kind("step"), Catch::Contains("unknown learning-rate schedule 'step'"));
}

TEST_CASE("clip_grad_norm scales to the maximum as torch.nn.utils.clip_grad_norm_, by hand") {
  auto table = std::make_shared<ParameterTable>();
  table->add("w", {2, 1}, Init::zeros);
  table->add("b", {1}, Init::zeros);
  ParameterBuffer<float> grads(table);
  const auto fill = [&] {
    grads.data()[0] = 3;
    grads.data()[1] = 0;
    grads.data()[2] = -4;
  };
  fill();
  CHECK(clip_grad_norm(grads, 10.0) == Approx(5.0));  // below the maximum: untouched
  CHECK(grads.data()[0] == 3.0f);
  CHECK(grads.data()[2] == -4.0f);
  fill();
  CHECK(clip_grad_norm(grads, 1.0) == Approx(5.0));
  const float c = static_cast<float>(1.0 / (5.0 + 1e-6));  // PyTorch's max_norm / (norm + 1e-6)
  CHECK(grads.data()[0] == 3.0f * c);
  CHECK(grads.data()[1] == 0.0f);
  CHECK(grads.data()[2] == -4.0f * c);
  CHECK(gradient_norm(grads) == Approx(1.0).epsilon(1e-6));
  CHECK_THROWS_WITH(clip_grad_norm(grads, 0.0), "clip_grad_norm: max_norm must be positive, got 0");
}

TEST_CASE("weight decay on matrices only leaves biases, layer norms and an encoding's scalars undecayed") {
  using KerpleModel = CharTransformer<Kerple, 1, 8, 2>;
  const ModelConfig model_config{.vocab_size = 5, .context = 8, .seed = 1};
  KerpleModel model(model_config);
  for (const WeightDecayScope scope : {WeightDecayScope::all, WeightDecayScope::matrices}) {
    KerpleModel copy(model_config);
    copy.zero_grad();  // with zero gradients AdamW's update is zero: only the decay moves a value
    AdamW optimizer(copy, {.lr = 0.1, .weight_decay = 0.5}, scope);
    optimizer.step(copy.store());
    for (const ParameterInfo& e : copy.parameter_table().entries()) {
      const bool decayed = scope == WeightDecayScope::all || e.shape.size() >= 2;
      const float factor = decayed ? 1.0f - 0.05f : 1.0f;
      bool all_match = true;
      for (std::size_t i = 0; i < e.slot.size; ++i)
        all_match = all_match && copy.parameters()[e.slot][i] == model.parameters()[e.slot][i] * factor;
      INFO(e.name << " with weight decay on " << weight_decay_scope_name(scope));
      CHECK(all_match);
    }
  }
  // what nanoGPT leaves out: Kerple's scalars, every bias and layer-norm parameter
  const ParameterTable& table = model.parameter_table();
  CHECK(table.find("transformer.h.0.attn.kerple.r1").shape.size() == 1);
  CHECK(table.find("transformer.h.0.ln_1.weight").shape.size() == 1);
  CHECK(table.find("transformer.wte.weight").shape.size() == 2);
}

TEST_CASE("a step is clipping then AdamW at the schedule's rate, and reports both") {
  const TextDataset data(corpus());
  TrainConfig config = small_config();
  config.schedule = {.kind = ScheduleKind::cosine, .warmup_steps = 1, .min_lr_fraction = 0.2};
  config.max_grad_norm = 0.05;  // far below the gradient's norm: every step clips
  const ModelConfig model_config{.vocab_size = data.vocab_size(), .context = 8, .seed = 3};
  Model trained(model_config), by_hand(model_config);
  const auto reports = train(trained, data, config);
  REQUIRE(reports.size() == 4);

  BatchSampler sampler(data.train(), config.batch, config.context, config.seed);
  AdamW optimizer(by_hand, config.adamw());
  Tokens x, y;
  for (std::int64_t s = 0; s < 4; ++s) {
    sampler.sample(x, y);
    by_hand.zero_grad();
    const float loss = by_hand.loss_and_backward(x, y);
    const double norm = gradient_norm(by_hand.gradients());
    CHECK(norm > 0.05);
    const float c = static_cast<float>(0.05 / (norm + 1e-6));
    for (std::size_t i = 0; i < by_hand.gradients().size(); ++i) by_hand.gradients().data()[i] *= c;
    const double lr = config.schedule.at(config.lr, s, config.steps);
    optimizer.set_learning_rate(lr);
    optimizer.step(by_hand.store());
    const auto& r = reports[static_cast<std::size_t>(s)];
    CHECK(r.step == s + 1);
    CHECK(r.loss == static_cast<double>(loss));
    CHECK(r.grad_norm == norm);
    CHECK(r.lr == lr);
  }
  CHECK(reports[0].lr == Approx(3e-3));  // the one warm-up step reaches the peak
  CHECK(reports[3].lr < reports[1].lr);
  CHECK(parameters_of(trained) == parameters_of(by_hand));
}

TEST_CASE("gradient accumulation equals the large batch to rounding") {
  // In double: in float, AdamW's m/√v turns the rounding of a gradient near zero into a step of
  // ±lr, which would hide a real difference behind a loose tolerance.
  using Double = CharTransformer<RoPE, 1, 8, 2, double>;
  const TextDataset data(corpus());
  for (const auto& [accum, dropout] : std::vector<std::pair<std::size_t, double>>{{2, 0.0}, {4, 0.0}, {2, 0.2}}) {
    DYNAMIC_SECTION(accum << " micro-batches, dropout " << dropout) {
      TrainConfig large = small_config();
      large.max_grad_norm = 1.0;  // clipping sees the whole step's gradient
      TrainConfig micro = large;
      micro.batch = large.batch / accum;
      micro.grad_accum = accum;
      const ModelConfig model_config{.vocab_size = data.vocab_size(), .context = 8, .seed = 3, .dropout = dropout};
      Double a(model_config), b(model_config);
      std::vector<StepReport> large_reports, micro_reports;
      Trainer<Double>(a, data, large).run([&](const StepReport& r) { large_reports.push_back(r); },
                                          [](const EvalRecord&) {});
      Trainer<Double>(b, data, micro).run([&](const StepReport& r) { micro_reports.push_back(r); },
                                          [](const EvalRecord&) {});
      REQUIRE(micro_reports.size() == large_reports.size());
      for (std::size_t s = 0; s < large_reports.size(); ++s) {
        CHECK(micro_reports[s].loss == Approx(large_reports[s].loss).epsilon(1e-12));
        CHECK(micro_reports[s].grad_norm == Approx(large_reports[s].grad_norm).epsilon(1e-10));
      }
      double worst = 0;
      for (std::size_t i = 0; i < a.parameters().size(); ++i)
        worst = std::max(worst, std::abs(a.parameters().data()[i] - b.parameters().data()[i]));
      CHECK(worst < 1e-12);
      // the micro-batch run really is another sequence of windows than one micro-batch alone
      TrainConfig one = micro;
      one.grad_accum = 1;
      Double c(model_config);
      std::vector<StepReport> one_reports;
      Trainer<Double>(c, data, one).run([&](const StepReport& r) { one_reports.push_back(r); },
                                        [](const EvalRecord&) {});
      CHECK(std::abs(one_reports[0].loss - large_reports[0].loss) > 1e-6);
    }
  }
}

TEST_CASE("a run with a decaying schedule, clipping and accumulation resumes to the uninterrupted run's bits") {
  const TextDataset data(corpus());
  TrainConfig config = small_config();
  config.steps = 6;
  config.eval_every = 3;
  config.schedule = {.kind = ScheduleKind::wsd, .warmup_steps = 2, .decay_fraction = 0.5};
  config.max_grad_norm = 0.5;
  config.grad_accum = 2;
  config.weight_decay_scope = WeightDecayScope::matrices;
  const auto base = std::filesystem::temp_directory_path() / "posenc-test-training-resume";
  std::filesystem::remove_all(base);
  const ModelConfig model_config{.vocab_size = data.vocab_size(), .context = 8, .seed = 3};
  Model whole(model_config), resumed(model_config);
  run_training(whole, data, config, RunDirectory(base / "whole"), false);

  // Interrupted after the evaluation at step 3 (an exception from the callback), then resumed.
  struct Stop {};
  TrainingCallbacks stop;
  stop.on_eval = [](const EvalRecord& r) {
    if (r.step == 3) throw Stop{};
  };
  CHECK_THROWS_AS(run_training(resumed, data, config, RunDirectory(base / "split"), false, stop), Stop);
  Model fresh(ModelConfig{.vocab_size = data.vocab_size(), .context = 8, .seed = 99});  // every value restored
  run_training(fresh, data, config, RunDirectory(base / "split"), true);
  CHECK(parameters_of(fresh) == parameters_of(whole));

  // The checkpoint says how it was trained.
  const SafetensorsFile checkpoint = read_safetensors((base / "whole" / "model.safetensors").string());
  const TrainConfig recorded = train_config_from_json(nlohmann::json::parse(checkpoint.metadata().at("training")));
  CHECK(recorded == config);
  std::filesystem::remove_all(base);
}

TEST_CASE("bad training settings are errors naming the setting") {
  const TextDataset data(corpus());
  Model model(ModelConfig{.vocab_size = data.vocab_size(), .context = 8, .seed = 3});
  const auto error = [&](auto change) {
    TrainConfig config = small_config();
    change(config);
    try {
      Trainer<Model> trainer(model, data, config);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(error([](TrainConfig&) {}).empty());
  CHECK(error([](TrainConfig& c) { c.grad_accum = 0; }) == "training: grad_accum must be positive");
  CHECK(error([](TrainConfig& c) { c.max_grad_norm = -1.0; }) ==
        "training: the gradient-clipping norm must be a positive number, got -1");
  CHECK(error([](TrainConfig& c) { c.schedule.warmup_steps = 5; }) == "--warmup-steps 5 exceeds the run's 4 steps");
  CHECK(error([](TrainConfig& c) { c.beta2 = 1.0; }) == "AdamW: betas must lie in [0, 1), got (0.9, 1)");
  CHECK(error([](TrainConfig& c) { c.eps = 0; }) == "AdamW: eps must be positive, got 0");
}

TEST_CASE("training with dropout is bitwise the same at 1 and 2 threads, and differs from training without") {
  posenc_test::ThreadCounts restore;
  const TextDataset data(corpus());
  TrainConfig config = small_config();
  const auto trained = [&](int threads, double dropout) {
    set_num_threads(threads);
    Model model(ModelConfig{.vocab_size = data.vocab_size(), .context = 8, .seed = 3, .dropout = dropout});
    train(model, data, config);
    return parameters_of(model);
  };
  const auto one = trained(1, 0.1);
  CHECK(trained(2, 0.1) == one);
  CHECK(trained(1, 0.0) != one);
}

// The loss estimates draw their batches from their own seeds and run without dropout, so a study
// may estimate less often or over fewer batches and train the same models (longer-contexts/run.sh).
TEST_CASE("the loss estimates leave training alone: any eval_every and eval_iters train the same bits") {
  posenc_test::ThreadCounts restore;
  const TextDataset data(corpus());
  for (const auto& [threads, dropout] : {std::pair{1, 0.0}, {1, 0.1}, {2, 0.0}, {2, 0.1}}) {
    CAPTURE(threads, dropout);
    set_num_threads(threads);
    const auto trained = [&](std::int64_t eval_every, std::size_t eval_iters) {
      TrainConfig config = small_config();
      config.steps = 6;
      config.eval_every = eval_every;
      config.eval_iters = eval_iters;
      Model model(ModelConfig{.vocab_size = data.vocab_size(), .context = 8, .seed = 3, .dropout = dropout});
      const std::vector<StepReport> reports = train(model, data, config);
      return std::make_pair(parameters_of(model), reports.back().loss);
    };
    const auto rare = trained(100, 1);
    CHECK(trained(2, 5) == rare);
    CHECK(trained(1, 3) == rare);
  }
}

TEST_CASE("a run asked to stop saves the step it is at, and resumes to the uninterrupted run's bits") {
  const TextDataset data(corpus());
  TrainConfig config = small_config();
  config.steps = 9;
  config.eval_every = 3;
  config.schedule = {.kind = ScheduleKind::cosine, .warmup_steps = 2};
  const auto base = std::filesystem::temp_directory_path() / "posenc-test-training-stop";
  std::filesystem::remove_all(base);
  const ModelConfig model_config{.vocab_size = data.vocab_size(), .context = 8, .seed = 3, .dropout = 0.1};
  Model whole(model_config), stopped(model_config);
  const auto whole_records = run_training(whole, data, config, RunDirectory(base / "whole"), false);

  TrainingCallbacks stop_at_4;
  std::int64_t steps_seen = 0;
  stop_at_4.on_step = [&](const StepReport& r) { steps_seen = r.step; };
  stop_at_4.should_stop = [&] { return steps_seen == 4; };
  const RunDirectory split(base / "split");
  try {
    run_training(stopped, data, config, split, false, stop_at_4);
    FAIL("run_training did not stop");
  } catch (const Interrupted& e) {
    CHECK(e.step() == 4);
  }
  CHECK(std::filesystem::exists(split.checkpoint(4)));  // between evaluations: saved where it stopped
  CHECK(read_eval_log(split.log()).back().step == 3);

  Model resumed(ModelConfig{.vocab_size = data.vocab_size(), .context = 8, .seed = 99, .dropout = 0.1});
  const auto records = run_training(resumed, data, config, split, true);
  CHECK(parameters_of(resumed) == parameters_of(whole));
  REQUIRE(records.size() == whole_records.size());  // no evaluation was added at the stop
  for (std::size_t i = 0; i < records.size(); ++i) {
    CHECK(records[i].step == whole_records[i].step);
    CHECK(records[i].val_loss == whole_records[i].val_loss);
  }
  CHECK_FALSE(std::filesystem::exists(split.checkpoint(4)));  // gone once a newer state was saved
  CHECK(std::filesystem::exists(split.checkpoint(6)));
  std::filesystem::remove_all(base);
}

TEST_CASE("a stop in an evaluation abandons it at once, and the resumed run makes it to the uninterrupted run's bits") {
  const TextDataset data(corpus());
  TrainConfig config = small_config();
  config.steps = 9;
  config.eval_every = 3;
  config.eval_iters = 4;
  const auto base = std::filesystem::temp_directory_path() / "posenc-test-training-stop-in-eval";
  std::filesystem::remove_all(base);
  const ModelConfig model_config{.vocab_size = data.vocab_size(), .context = 8, .seed = 3};
  Model whole(model_config);
  const auto whole_records = run_training(whole, data, config, RunDirectory(base / "whole"), false);
  REQUIRE(whole_records.size() == 4);  // steps 0, 3, 6, 9

  for (const std::int64_t stop_step : {std::int64_t{6}, std::int64_t{9}}) {  // an evaluation within and at the end
    DYNAMIC_SECTION("stopped in the evaluation at step " << stop_step) {
      Model stopped(model_config);
      TrainingCallbacks stop;
      std::int64_t steps_seen = 0;
      int polls_after_asking = 0;
      stop.on_step = [&](const StepReport& r) { steps_seen = r.step; };
      stop.should_stop = [&] {
        if (steps_seen == stop_step) ++polls_after_asking;
        return steps_seen == stop_step;
      };
      const RunDirectory split(base / ("split" + std::to_string(stop_step)));
      try {
        run_training(stopped, data, config, split, false, stop);
        FAIL("run_training did not stop");
      } catch (const Interrupted& e) {
        CHECK(e.step() == stop_step);
      }
      CHECK(polls_after_asking == 1);  // the first batch of the estimate asked, and none was scored
      CHECK(read_eval_log(split.log()).back().step == stop_step - 3);  // the evaluation was not made
      CHECK(std::filesystem::exists(split.checkpoint(stop_step)));

      Model resumed(ModelConfig{.vocab_size = data.vocab_size(), .context = 8, .seed = 99});
      const auto records = run_training(resumed, data, config, split, true);
      CHECK(parameters_of(resumed) == parameters_of(whole));
      REQUIRE(records.size() == whole_records.size());
      for (std::size_t i = 0; i < records.size(); ++i) {
        CHECK(records[i].step == whole_records[i].step);
        CHECK(records[i].train_loss == whole_records[i].train_loss);
        CHECK(records[i].val_loss == whole_records[i].val_loss);
      }
      CHECK(read_eval_log(split.log()).size() == whole_records.size());
      CHECK(std::filesystem::exists(split.checkpoint(stop_step)));  // an evaluation's checkpoint now: kept
    }
  }
  std::filesystem::remove_all(base);
}

TEST_CASE("a run with no complete state yet (its first save never finished) resumes from the start") {
  const TextDataset data(corpus());
  TrainConfig config = small_config();
  config.eval_every = 2;
  const auto base = std::filesystem::temp_directory_path() / "posenc-test-training-no-state";
  std::filesystem::remove_all(base);
  const ModelConfig model_config{.vocab_size = data.vocab_size(), .context = 8, .seed = 3};
  Model whole(model_config), again(model_config);
  const RunDirectory run(base);
  run_training(whole, data, config, run, false);
  // what a kill or a full disk during the first save leaves: step 0's checkpoint and log, no optimizer state
  const auto log = read_eval_log(run.log());
  write_file_atomically(run.log(), to_json(log.front()).dump() + "\n");
  for (const std::int64_t step : {2, 4}) std::filesystem::remove(run.checkpoint(step));
  std::filesystem::remove(run.optimizer());
  run_training(again, data, config, run, true);
  CHECK(parameters_of(again) == parameters_of(whole));
  CHECK(read_eval_log(run.log()).size() == 3);  // steps 0, 2, 4: the old log replaced, not appended to
  std::filesystem::remove_all(base);
}

TEST_CASE("a run that saved past its start refuses to resume without its optimizer state or newest checkpoint, "
          "and names a damaged one") {
  const TextDataset data(corpus());
  TrainConfig config = small_config();
  config.eval_every = 2;
  const auto base = std::filesystem::temp_directory_path() / "posenc-test-training-lost-state";
  std::filesystem::remove_all(base);
  const ModelConfig model_config{.vocab_size = data.vocab_size(), .context = 8, .seed = 3};
  const auto fresh_run = [&](const std::string& name) {
    Model model(model_config);
    const RunDirectory run(base / name);
    run_training(model, data, config, run, false);
    return run;
  };
  Model again(model_config);
  const RunDirectory no_optimizer = fresh_run("no-optimizer");
  std::filesystem::remove(no_optimizer.optimizer());
  CHECK_THROWS_WITH(run_training(again, data, config, no_optimizer, true),
                    Catch::Contains("cannot be resumed: its optimizer state") &&
                        Catch::Contains("optimizer.safetensors' is missing") &&
                        Catch::Contains("saved step 4") && Catch::Contains("start over"));
  CHECK(std::filesystem::exists(no_optimizer.checkpoint(4)));  // nothing overwritten
  CHECK(read_eval_log(no_optimizer.log()).size() == 3);

  const RunDirectory no_checkpoint = fresh_run("no-checkpoint");
  std::filesystem::remove(no_checkpoint.checkpoint(4));
  CHECK_THROWS_WITH(run_training(again, data, config, no_checkpoint, true),
                    Catch::Contains("cannot be resumed: the checkpoint of its saved step 4") &&
                        Catch::Contains("is missing"));

  const RunDirectory damaged = fresh_run("damaged");
  write_file_atomically(damaged.optimizer(), "not a safetensors file");
  CHECK_THROWS_WITH(run_training(again, data, config, damaged, true),
                    Catch::Contains("cannot be resumed: its optimizer state") && Catch::Contains("cannot be read"));
  std::filesystem::remove_all(base);
}

namespace {
std::vector<TokenId> random_ids(std::size_t n, std::size_t V, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<TokenId> ids(n);
  for (auto& id : ids) id = static_cast<TokenId>(rng.uniform_index(V));
  return ids;
}
}  // namespace

TEST_CASE("per-position losses average, over the windows, to the full-pass loss of those windows") {
  CharTransformer<RoPE, 2, 16, 2, double> model(ModelConfig{.vocab_size = 7, .context = 8, .seed = 50});
  const std::size_t L = 12;
  const std::vector<TokenId> tokens = random_ids(5 * L + 1, 7, 51);  // exactly 5 windows
  const PositionLoss by_position = per_position_loss(model, tokens, L, 2);
  CHECK(by_position.windows == 5);
  REQUIRE(by_position.mean_loss.size() == L);
  CHECK(by_position.mean_over(0, L) == Approx(evaluate_loss(model, tokens, L).loss).epsilon(1e-12));
  // position t is the mean of each window's loss at t alone: the first, from one token
  double first = 0;
  for (std::size_t w = 0; w < 5; ++w) {
    Tokens x({1, 1}), y({1, 1});
    x(0, 0) = tokens[w * L];
    y(0, 0) = tokens[w * L + 1];
    first += model.loss(x, y) / 5;
  }
  CHECK(by_position.mean_loss[0] == Approx(first).epsilon(1e-12));
  CHECK_THROWS_WITH(per_position_loss(model, tokens, 61), Catch::Contains("too few for one window of 61"));
}

TEST_CASE("the copy probe: a segment's loss after itself and after an unrelated segment from the model's loss of "
          "each prefix") {
  CharTransformer<RoPE, 2, 16, 2, double> model(ModelConfig{.vocab_size = 7, .context = 8, .seed = 52});
  const std::size_t n = 6, segments = 5;
  const std::vector<TokenId> tokens = random_ids(200, 7, 53);
  const CopyProbe probe = copy_probe(model, tokens, n, segments, 2);
  CHECK(probe.distance == n);
  CHECK(probe.segments == segments);
  // the same segments A (evenly spaced over the 195 starts) and controls B (97 starts on, wrapping
  // round) through model.loss: the mean loss over targets n+1…2n−1 of A·A and of B·A, by difference
  // of the mean losses over their first 2n − 1 and first n targets
  const std::size_t spacing = (tokens.size() - n) / segments;
  auto mean_loss_of_targets_past_n = [&](bool control) {
    auto prefix = [&](std::size_t k) {
      Tokens x({segments, k}), y({segments, k});
      for (std::size_t s = 0; s < segments; ++s) {
        const std::size_t a = s * spacing, b = (a + 97) % 195;
        for (std::size_t t = 0; t <= k; ++t) {
          const TokenId token = t < n && control ? tokens[b + t] : tokens[a + t % n];
          if (t < k) x(s, t) = token;
          if (t > 0) y(s, t - 1) = token;
        }
      }
      return static_cast<double>(model.loss(x, y)) * static_cast<double>(k);
    };
    return (prefix(2 * n - 1) - prefix(n)) / static_cast<double>(n - 1);
  };
  const double second = mean_loss_of_targets_past_n(false), control = mean_loss_of_targets_past_n(true);
  CHECK(probe.second_copy_loss == Approx(second).epsilon(1e-12));
  CHECK(probe.control_loss == Approx(control).epsilon(1e-12));
  CHECK(probe.drop == Approx(control - second).epsilon(1e-9));
  CHECK(probe.control_sd > 0);
  CHECK_THROWS_WITH(copy_probe(model, tokens, 1, 4), Catch::Contains("at least 2"));
  CHECK_THROWS_WITH(copy_probe(model, tokens, 60, 4), Catch::Contains("too few for 4 segments of 60"));
  CHECK_THROWS_WITH(copy_probe(model, tokens, 100, 1), Catch::Contains("needs 200 positions; the model accepts 128"));
  const std::vector<TokenId> fifty(tokens.begin(), tokens.begin() + 50);  // two segments of 20, no control
  CHECK_THROWS_WITH(copy_probe(model, fifty, 20, 2), Catch::Contains("too few for a segment of 20 and a control"));
}

namespace {
// Reads only the current token and its position: a model that retrieves nothing from n back.
struct PositionalBigram {
  std::size_t vocab_size() const { return 5; }
  std::size_t max_context() const { return 64; }
  Tensor<double, 3> forward(const Tokens& x) const {
    Tensor<double, 3> logits({x.shape(0), x.shape(1), 5});
    for (std::size_t b = 0; b < x.shape(0); ++b)
      for (std::size_t t = 0; t < x.shape(1); ++t)
        for (std::size_t v = 0; v < 5; ++v)
          logits(b, t, v) = 0.3 * static_cast<double>((static_cast<std::size_t>(x(b, t)) + v) % 5) +
                            (v == 0 ? 0.05 * static_cast<double>(t) : 0.0);
    return logits;
  }
};
}  // namespace

TEST_CASE("the copy probe's control: no drop for a model that reads nothing far back, where the first copy shows one") {
  const std::vector<TokenId> tokens = random_ids(300, 5, 54);
  PositionalBigram bigram;
  const CopyProbe probe = copy_probe(bigram, tokens, 10, 8, 3);
  CHECK(probe.drop == 0);  // the same targets at the same positions, each read from its own token alone
  CHECK(probe.control_loss == probe.second_copy_loss);
  // Against its first copy (targets 1…n−1 at positions 0…n−2), the same model would "drop".
  Tokens repeated({1, 20});
  for (std::size_t t = 0; t < 20; ++t) repeated(0, t) = tokens[t % 10];
  const Tensor<double, 3> logits = bigram.forward(repeated);
  const auto mean_loss = [&](std::size_t from) {  // over the 9 targets after position `from`
    double loss = 0;
    for (std::size_t t = from; t < from + 9; ++t) {
      double sum = 0;
      for (std::size_t v = 0; v < 5; ++v) sum += std::exp(logits(0, t, v));
      loss += (std::log(sum) - logits(0, t, static_cast<std::size_t>(repeated(0, t + 1)))) / 9;
    }
    return loss;
  };
  CHECK(std::abs(mean_loss(0) - mean_loss(10)) > 1e-3);
}

TEST_CASE("a stop between a step's accumulated micro-batches abandons the step, and the run resumes to the "
          "uninterrupted run's bits") {
  const TextDataset data(corpus());
  TrainConfig config = small_config();
  config.steps = 8;
  config.eval_every = 4;
  config.grad_accum = 4;
  const auto base = std::filesystem::temp_directory_path() / "posenc-test-training-stop-in-accumulation";
  std::filesystem::remove_all(base);
  const ModelConfig model_config{.vocab_size = data.vocab_size(), .context = 8, .seed = 3, .dropout = 0.1};
  Model whole(model_config), stopped(model_config);
  run_training(whole, data, config, RunDirectory(base / "whole"), false);

  TrainingCallbacks stop;
  std::int64_t steps_seen = 0;
  int polls_after_step_5 = 0;
  stop.on_step = [&](const StepReport& r) { steps_seen = r.step; };
  // the poll after step 5, then the one after step 6's first micro-batch: stop there
  stop.should_stop = [&] { return steps_seen == 5 && ++polls_after_step_5 == 2; };
  const RunDirectory split(base / "split");
  try {
    run_training(stopped, data, config, split, false, stop);
    FAIL("run_training did not stop");
  } catch (const Interrupted& e) {
    CHECK(e.step() == 5);
  }
  CHECK(steps_seen == 5);  // step 6 was not reported: it was abandoned
  CHECK(std::filesystem::exists(split.checkpoint(5)));
  Model resumed(ModelConfig{.vocab_size = data.vocab_size(), .context = 8, .seed = 99, .dropout = 0.1});
  run_training(resumed, data, config, split, true);
  CHECK(parameters_of(resumed) == parameters_of(whole));
  std::filesystem::remove_all(base);
}

TEST_CASE("a run directory another process writes is refused, naming the holder, and nothing of it is written") {
  const TextDataset data(corpus());
  const auto base = std::filesystem::temp_directory_path() / "posenc-test-training-lock";
  std::filesystem::remove_all(base);
  const ModelConfig model_config{.vocab_size = data.vocab_size(), .context = 8, .seed = 3};
  Model model(model_config);
  {
    // an flock belongs to its open file, so this process's own second lock stands in for another process's
    const DirectoryLock other(base);
    REQUIRE(other.held());
    CHECK_THROWS_WITH(run_training(model, data, small_config(), RunDirectory(base), false),
                      Catch::Contains("the directory '" + base.string() + "' is in use by another process (process " +
                                      std::to_string(::getpid()) + " on ") &&
                          Catch::Contains("choose another directory"));
    CHECK_FALSE(std::filesystem::exists(RunDirectory(base).log()));
    CHECK_FALSE(std::filesystem::exists(RunDirectory(base).checkpoint(0)));
  }
  const RunDirectory run(base);  // the lock ended with its holder
  run.lock();
  run.lock();  // a program's lock, then run_training's: the same lock, kept
  CHECK_NOTHROW(run_training(model, data, small_config(), run, false));
  CHECK_THROWS_WITH(DirectoryLock(base), Catch::Contains("is in use by another process"));
  std::filesystem::remove_all(base);
}

TEST_CASE("start_or_resume records the run, continues its own saved state, and refuses a folder of another run") {
  const auto base = std::filesystem::temp_directory_path() / "posenc-test-training-start";
  std::filesystem::remove_all(base);
  RunConfig config;
  config.posenc = "rope";
  const RunDirectory run(base);
  CHECK_FALSE(start_or_resume(run, config));  // nothing there: from step 0, recorded
  CHECK(recorded_run_config(run) == config);
  CHECK(start_or_resume(run, config) == false);  // the record alone is no state to continue
  write_file_atomically(run.optimizer(), "a saved state");
  CHECK(start_or_resume(run, config));
  RunConfig longer = config;
  longer.train.steps *= 2;  // a constant rate's run may be extended
  CHECK(start_or_resume(run, longer));
  CHECK(recorded_run_config(run)->train.steps == longer.train.steps);
  RunConfig other = longer;
  other.train.lr = 0.5;
  CHECK_THROWS_WITH(start_or_resume(run, other),
                    Catch::Contains("holds a run of another configuration (lr: ") && Catch::Contains(" → 0.5)"));
  RunConfig decaying = longer;
  decaying.train.schedule = {.kind = ScheduleKind::cosine, .warmup_steps = 2};
  record_run_config(run, decaying);
  RunConfig decaying_longer = decaying;
  decaying_longer.train.steps *= 2;  // a decaying rate's run may not
  CHECK_THROWS_WITH(start_or_resume(run, decaying_longer), Catch::Contains("another configuration (steps: "));
  // a study's run folder of before 2026-12-05 named the record study-run.json
  std::filesystem::remove(run_config_path(run));
  write_file_atomically((base / "study-run.json").string(), to_json(config).dump());
  CHECK(recorded_run_config(run) == config);
  CHECK(start_or_resume(run, config));
  std::filesystem::remove(base / "study-run.json");
  std::filesystem::remove(run_config_path(run));
  CHECK_THROWS_WITH(start_or_resume(run, config), Catch::Contains("holds a saved state but no config.json"));
  std::filesystem::remove_all(base);
}

TEST_CASE("every enumeration's table: each name parses back to its value, an unknown name lists the known ones") {
  const auto check = [](const auto& table) {
    INFO(table.what);
    CHECK(table.in_order());
    for (const auto& [value, name] : table.entries) CHECK(table.parse(name) == value);
    CHECK(table.names().size() == table.entries.size());
    CHECK_THROWS_WITH(table.parse("no-such"),
                      Catch::Contains(std::string("unknown ") + std::string(table.what) + " 'no-such' (known: " +
                                      table.known() + ")"));
  };
  check(schedule_kinds);
  check(weight_decay_scopes);
  check(init_schemes);
  check(precisions);
  check(rope_scaling_names);
  CHECK(schedule_kinds.known() == "constant, cosine, linear, wsd");
}

TEMPLATE_LIST_TEST_CASE("training at randomized positions is bitwise the same on every run at 1 and at 2 threads, "
                        "and moves the model otherwise than at 0…T−1", "", AllPolicies) {
  // (across thread counts the sums of a trainable bias's gradient round differently, as without
  // randomized positions)
  posenc_test::ThreadCounts restore;
  const TextDataset data(corpus());
  TrainConfig config = small_config();
  config.steps = 4;
  const auto trained = [&](int threads, std::size_t range) {
    set_num_threads(threads);
    CharTransformer<TestType, 1, 8, 2> model(
        ModelConfig{.vocab_size = data.vocab_size(), .context = 8, .seed = 3, .position_range = range});
    train(model, data, config);
    return parameters_of(model);
  };
  for (const int threads : {1, 2}) {
    CAPTURE(threads);
    const auto first = trained(threads, 40);
    CHECK(trained(threads, 40) == first);
    if constexpr (!std::is_same_v<TestType, NoPE>) CHECK(trained(threads, 41) != first);
  }
}

TEST_CASE("a run at randomized positions resumes to the uninterrupted run's bits") {
  const TextDataset data(corpus());
  TrainConfig config = small_config();
  config.steps = 6;
  config.eval_every = 3;
  const auto base = std::filesystem::temp_directory_path() / "posenc-test-training-positions";
  std::filesystem::remove_all(base);
  const ModelConfig model_config{.vocab_size = data.vocab_size(), .context = 8, .seed = 3, .position_range = 32};
  Model whole(model_config), stopped(model_config);
  run_training(whole, data, config, RunDirectory(base / "whole"), false);
  TrainingCallbacks stop_at_4;
  std::int64_t steps_seen = 0;
  stop_at_4.on_step = [&](const StepReport& r) { steps_seen = r.step; };
  stop_at_4.should_stop = [&] { return steps_seen == 4; };
  const RunDirectory split(base / "split");
  CHECK_THROWS_AS(run_training(stopped, data, config, split, false, stop_at_4), Interrupted);
  Model resumed(model_config);
  run_training(resumed, data, config, split, true);
  CHECK(parameters_of(resumed) == parameters_of(whole));
  std::filesystem::remove_all(base);
}

TEST_CASE("the training memory estimate counts what bf16 keeps: each layer's rounded inputs") {
  RunConfig config;  // the study's model, batch 32 and context 128 (TrainConfig's defaults)
  const double fp32 = config.training_bytes(65);
  config.precision = Precision::bf16;
  // one chunk of 8 sequences × 128 rows: in each of 3 layers 7·192 bfloat16 numbers more and the
  // GELU's 4·192 float outputs less, and once the GELU's gradient rounded, 4·192 bfloat16 numbers
  const double rows = 8.0 * config.train.context;
  CHECK(config.training_bytes(65) - fp32 == Approx(rows * (3 * (7 * 192 * 2 - 4 * 192 * 4) + 4 * 192 * 2)));
}
