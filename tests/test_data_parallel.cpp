// Tests of data-parallel training (Trainer, run_training with a ProcessGroup): N processes give one's losses.
// The processes are threads here (ThreadGroup below), so the test needs no MPI; tests/cli/test_mpi.sh runs the
// same equivalence through MPI itself.
#include <catch2/catch.hpp>

#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include <posenc/train/training_run.hpp>
#include <posenc/transformer.hpp>

using namespace posenc;

namespace {

// The shared state of a group of threads that stand in for processes.
struct Hub {
  explicit Hub(int n) : size(n), barrier(n), slots(static_cast<std::size_t>(n)) {}
  int size;
  std::barrier<> barrier;
  std::vector<void*> slots;  // each member's buffer during a collective
};

// A ProcessGroup of threads: sums add the members' buffers in rank order, as MPI_Allreduce would
// in some fixed order, and every member gets the same bits.
class ThreadGroup final : public ProcessGroup {
 public:
  ThreadGroup(Hub& hub, int rank) : hub_(hub), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return hub_.size; }
  void sum(float* data, std::size_t n) override { reduce(data, n); }
  void sum(double* data, std::size_t n) override { reduce(data, n); }
  void broadcast(void* bytes, std::size_t n) override {
    hub_.slots[static_cast<std::size_t>(rank_)] = bytes;
    hub_.barrier.arrive_and_wait();
    if (rank_ != 0) std::memcpy(bytes, hub_.slots[0], n);
    hub_.barrier.arrive_and_wait();
  }
  using ProcessGroup::broadcast;

 private:
  template <class S>
  void reduce(S* data, std::size_t n) {
    hub_.slots[static_cast<std::size_t>(rank_)] = data;
    hub_.barrier.arrive_and_wait();
    std::vector<S> total(n, S(0));
    for (void* slot : hub_.slots)
      for (std::size_t i = 0; i < n; ++i) total[i] += static_cast<const S*>(slot)[i];
    hub_.barrier.arrive_and_wait();  // every member has read every buffer before any is written
    std::copy(total.begin(), total.end(), data);
  }
  Hub& hub_;
  int rank_;
};

// Runs body(group) on `ranks` threads at once.
void run_group(int ranks, const std::function<void(ProcessGroup&)>& body) {
  Hub hub(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      ThreadGroup group(hub, r);
      body(group);
    });
  for (auto& t : threads) t.join();
}

std::string corpus() {
  std::string text;
  for (int i = 0; i < 60; ++i) text += "to be or not to be, that is the question " + std::to_string(i % 7) + "\n";
  return text;
}

struct Trace {
  std::vector<double> losses;     // every step's training loss
  std::vector<EvalRecord> evals;  // every evaluation
  std::vector<double> parameters;
};

template <class Model>
Trace train(const TrainingData& data, const TrainConfig& config, ProcessGroup* group, std::size_t position_range = 0) {
  Model model(ModelConfig{
      .vocab_size = data.vocab_size(), .context = config.context, .seed = 5, .position_range = position_range});
  Trainer<Model> trainer(model, data, config, group);
  Trace trace;
  trainer.run([&](const StepReport& r) { trace.losses.push_back(r.loss); },
              [&](const EvalRecord& r) { trace.evals.push_back(r); });
  const auto& p = model.parameters();
  trace.parameters.assign(p.data(), p.data() + p.size());
  return trace;
}

double max_relative_difference(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::abs(a[i] - b[i]) / std::max(1e-3, std::abs(b[i])));
  return worst;
}

}  // namespace

TEST_CASE("batch_shard cuts a batch into contiguous shards in rank order, differing by at most one row") {
  CHECK(batch_shard(32, 0, 2) == std::pair<std::size_t, std::size_t>{0, 16});
  CHECK(batch_shard(32, 1, 2) == std::pair<std::size_t, std::size_t>{16, 32});
  // 6 rows over 4 ranks: 1, 2, 1, 2 (6·r/4 rounded down)
  CHECK(batch_shard(6, 0, 4) == std::pair<std::size_t, std::size_t>{0, 1});
  CHECK(batch_shard(6, 1, 4) == std::pair<std::size_t, std::size_t>{1, 3});
  CHECK(batch_shard(6, 2, 4) == std::pair<std::size_t, std::size_t>{3, 4});
  CHECK(batch_shard(6, 3, 4) == std::pair<std::size_t, std::size_t>{4, 6});
}

TEMPLATE_TEST_CASE("data-parallel training over 2, 3 and 4 processes gives one process's losses and model", "",
                   float, double) {
  using S = TestType;
  using Model = CharTransformer<RoPE, 2, 16, 2, S>;
  set_num_threads(1);
  const TextDataset data(corpus());
  // batch 6: even shards over 2 and 3 processes, uneven (1, 2, 1, 2 rows) over 4
  const TrainConfig config{
      .steps = 6, .batch = 6, .context = 12, .lr = 3e-3, .eval_every = 3, .eval_iters = 2, .seed = 9};
  const Trace alone = train<Model>(data, config, nullptr);
  // Tolerance: the same arithmetic but for the order of the sums over the batch; in float, six
  // AdamW steps of rounding differences stay far below 1e-4 of the loss, in double below 1e-10.
  const double tolerance = std::is_same_v<S, float> ? 1e-4 : 1e-10;
  for (int ranks : {2, 3, 4}) {
    std::vector<Trace> traces(static_cast<std::size_t>(ranks));
    run_group(ranks,
              [&](ProcessGroup& g) { traces[static_cast<std::size_t>(g.rank())] = train<Model>(data, config, &g); });
    INFO(ranks << " processes");
    for (const Trace& t : traces) {  // every process took identical steps
      CHECK(t.losses == traces[0].losses);
      CHECK(t.parameters == traces[0].parameters);
    }
    CHECK(max_relative_difference(traces[0].losses, alone.losses) < tolerance);
    // Parameters only in double: in float, AdamW's normalised step m/√v turns the rounding of a
    // gradient near zero into a step of ±lr (its sign can flip), which the losses do not feel.
    if constexpr (std::is_same_v<S, double>)
      CHECK(max_relative_difference(traces[0].parameters, alone.parameters) < tolerance);
    REQUIRE(traces[0].evals.size() == alone.evals.size());
    for (std::size_t i = 0; i < alone.evals.size(); ++i) {
      CHECK(traces[0].evals[i].train_loss == Approx(alone.evals[i].train_loss).epsilon(tolerance));
      CHECK(traces[0].evals[i].val_loss == Approx(alone.evals[i].val_loss).epsilon(tolerance));
    }
  }
}

TEST_CASE("data-parallel training on a task weighs each shard by its share of the answers: one process's run") {
  // copy examples of 1 to 6 letters: the shards of a batch hold different numbers of scored targets
  using Model = CharTransformer<RoPE, 1, 16, 2, double>;
  set_num_threads(1);
  const TaskData data(Task(TaskKind::copy), {1, 6});
  TrainConfig config{.steps = 5, .batch = 6, .context = data.context(), .lr = 3e-3, .eval_every = 5,
                     .eval_iters = 2, .seed = 3};
  config.grad_accum = 2;
  const Trace alone = train<Model>(data, config, nullptr);
  for (int ranks : {2, 4}) {
    std::vector<Trace> traces(static_cast<std::size_t>(ranks));
    run_group(ranks,
              [&](ProcessGroup& g) { traces[static_cast<std::size_t>(g.rank())] = train<Model>(data, config, &g); });
    INFO(ranks << " processes");
    CHECK(max_relative_difference(traces[0].losses, alone.losses) < 1e-10);
    CHECK(max_relative_difference(traces[0].parameters, alone.parameters) < 1e-10);
    CHECK(traces[0].evals.back().val_loss == Approx(alone.evals.back().val_loss).epsilon(1e-10));
  }
}

TEMPLATE_TEST_CASE("data-parallel training and estimates at randomized positions give one process's", "", RoPE,
                   Learned, T5Bias, FIRE) {
  // every process reads a micro-batch, and an estimate's batch, at the whole batch's positions
  using Model = CharTransformer<TestType, 1, 16, 2, double>;
  set_num_threads(1);
  const TextDataset data(corpus());
  const TrainConfig config{
      .steps = 4, .batch = 6, .context = 12, .lr = 3e-3, .eval_every = 2, .eval_iters = 2, .seed = 9};
  const Trace alone = train<Model>(data, config, nullptr, 40);
  CHECK(alone.parameters != train<Model>(data, config, nullptr).parameters);
  for (int ranks : {2, 3}) {
    std::vector<Trace> traces(static_cast<std::size_t>(ranks));
    run_group(ranks, [&](ProcessGroup& g) {
      traces[static_cast<std::size_t>(g.rank())] = train<Model>(data, config, &g, 40);
    });
    INFO(ranks << " processes");
    CHECK(max_relative_difference(traces[0].losses, alone.losses) < 1e-10);
    // 1e-9: FIRE's MLP output bias has a gradient of 0 but for rounding (softmax cancels it), which
    // AdamW's m/√v magnifies (1.0e-10 at 3 processes)
    CHECK(max_relative_difference(traces[0].parameters, alone.parameters) < 1e-9);
    REQUIRE(traces[0].evals.size() == alone.evals.size());
    for (std::size_t i = 0; i < alone.evals.size(); ++i)
      CHECK(traces[0].evals[i].val_loss == Approx(alone.evals[i].val_loss).epsilon(1e-10));
  }
}

TEST_CASE("data-parallel training with gradient accumulation equals one process's large batch") {
  using Model = CharTransformer<RoPE, 1, 16, 2, double>;
  set_num_threads(1);
  const TextDataset data(corpus());
  TrainConfig large{.steps = 4, .batch = 12, .context = 12, .lr = 3e-3, .eval_every = 2, .eval_iters = 2, .seed = 4};
  large.max_grad_norm = 0.5;
  TrainConfig micro = large;
  micro.batch = 4;
  micro.grad_accum = 3;
  const Trace alone = train<Model>(data, large, nullptr);
  for (int ranks : {2, 3}) {
    std::vector<Trace> traces(static_cast<std::size_t>(ranks));
    run_group(ranks,
              [&](ProcessGroup& g) { traces[static_cast<std::size_t>(g.rank())] = train<Model>(data, micro, &g); });
    INFO(ranks << " processes");
    CHECK(max_relative_difference(traces[0].losses, alone.losses) < 1e-10);
    CHECK(max_relative_difference(traces[0].parameters, alone.parameters) < 1e-10);
  }
}

TEST_CASE("a data-parallel run resumed from rank 0's files continues as one process's resumed run") {
  using Model = CharTransformer<ALiBi, 2, 16, 2, double>;
  set_num_threads(1);
  const TextDataset data(corpus());
  TrainConfig config{.steps = 6, .batch = 4, .context = 12, .lr = 3e-3, .eval_every = 3, .eval_iters = 2, .seed = 4};
  const auto base = std::filesystem::temp_directory_path() / "posenc-test-data-parallel-resume";
  std::filesystem::remove_all(base);

  // Both runs stop after 3 steps and resume to 6. Checkpoints hold F32, so the resumed models
  // are the float-rounded ones in both: the comparison is like for like.
  std::vector<double> alone_parameters;
  std::vector<EvalRecord> alone_records;
  std::vector<std::vector<double>> group_parameters(2);
  std::vector<std::vector<EvalRecord>> group_records(2);
  for (std::int64_t steps : {3, 6}) {
    config.steps = steps;
    const bool resume = steps == 6;
    Model alone(ModelConfig{.vocab_size = data.vocab_size(), .context = config.context, .seed = 5});
    alone_records = run_training(alone, data, config, RunDirectory(base / "alone"), resume);
    alone_parameters.assign(alone.parameters().data(), alone.parameters().data() + alone.parameters().size());
    run_group(2, [&](ProcessGroup& g) {
      const auto r = static_cast<std::size_t>(g.rank());
      Model model(ModelConfig{.vocab_size = data.vocab_size(), .context = config.context, .seed = 5});
      group_records[r] = run_training(model, data, config, RunDirectory(base / "group"), resume, {}, &g);
      group_parameters[r].assign(model.parameters().data(), model.parameters().data() + model.parameters().size());
    });
  }
  CHECK(group_parameters[0] == group_parameters[1]);
  // The sums' order may round a parameter to the neighbouring float at the checkpoint: 1e-6.
  CHECK(max_relative_difference(group_parameters[0], alone_parameters) < 1e-6);
  // rank 0 holds every evaluation (read back from its log), rank 1 those it took part in
  REQUIRE(group_records[0].size() == alone_records.size());
  CHECK(group_records[1].size() == 1);
  for (std::size_t i = 0; i < alone_records.size(); ++i)
    CHECK(group_records[0][i].val_loss == Approx(alone_records[i].val_loss).epsilon(1e-8));
  // only rank 0 wrote: one log, no stray files from rank 1
  CHECK(std::filesystem::exists(RunDirectory(base / "group").final_model()));
  std::filesystem::remove_all(base);
}

TEST_CASE("a data-parallel run whose curriculum stage ended at its loss resumes, every process, past the stage") {
  // the stage ends at step 0 (a mark any model meets); resumed, every process must skip it again
  using Model = CharTransformer<RoPE, 1, 16, 2, double>;
  set_num_threads(1);
  const TaskData data(Task(TaskKind::copy), {1, 3}, std::nullopt, {{{1, 1}, 100, 1e9}});
  TrainConfig config{.steps = 103, .batch = 4, .context = data.context(), .lr = 3e-3, .eval_every = 3,
                     .eval_iters = 1, .seed = 4};
  const auto base = std::filesystem::temp_directory_path() / "posenc-test-data-parallel-stage";
  std::filesystem::remove_all(base);
  std::vector<std::vector<EvalRecord>> records(2);
  std::vector<std::int64_t> steps(2);
  for (std::int64_t total : {103, 106}) {  // 3 steps, then 3 more
    config.steps = total;
    run_group(2, [&](ProcessGroup& g) {
      const auto r = static_cast<std::size_t>(g.rank());
      Model model(ModelConfig{.vocab_size = data.vocab_size(), .context = config.context, .seed = 5});
      records[r] = run_training(model, data, config, RunDirectory(base / "group"), total == 106, {}, &g);
      steps[r] = records[r].back().step;
    });
  }
  CHECK(steps == std::vector<std::int64_t>{6, 6});
  CHECK(records[1].back().skipped_steps == 100);
  std::filesystem::remove_all(base);
}

TEST_CASE("a stop one process asks for during an evaluation stops the group there, and the group resumes it") {
  using Model = CharTransformer<ALiBi, 2, 16, 2, double>;
  set_num_threads(1);
  const TextDataset data(corpus());
  const TrainConfig config{.steps = 6, .batch = 4, .context = 12, .lr = 3e-3, .eval_every = 3, .eval_iters = 4,
                           .seed = 4};
  const auto base = std::filesystem::temp_directory_path() / "posenc-test-data-parallel-stop-in-eval";
  std::filesystem::remove_all(base);
  const ModelConfig model_config{.vocab_size = data.vocab_size(), .context = config.context, .seed = 5};
  // Rank 0's records and parameters of a group run.
  const auto group_run = [&](const RunDirectory& run, bool resume, std::vector<EvalRecord>& records,
                             std::vector<double>& parameters, std::vector<std::int64_t>* stopped_at = nullptr) {
    run_group(2, [&](ProcessGroup& g) {
      Model model(model_config);
      TrainingCallbacks callbacks;
      std::int64_t steps_seen = 0;
      callbacks.on_step = [&](const StepReport& r) { steps_seen = r.step; };
      if (stopped_at != nullptr && g.rank() == 1) callbacks.should_stop = [&] { return steps_seen == 3; };
      try {
        const auto r = run_training(model, data, config, run, resume, callbacks, &g);
        if (g.rank() == 0) {
          records = r;
          parameters.assign(model.parameters().data(), model.parameters().data() + model.parameters().size());
        }
      } catch (const Interrupted& e) {
        if (stopped_at != nullptr) (*stopped_at)[static_cast<std::size_t>(g.rank())] = e.step();
      }
    });
  };
  std::vector<EvalRecord> whole, resumed, unused;
  std::vector<double> whole_parameters, resumed_parameters, unused_parameters;
  group_run(RunDirectory(base / "whole"), false, whole, whole_parameters);

  // Rank 1 alone asks, once it has taken step 3: inside the evaluation at step 3.
  std::vector<std::int64_t> stopped_at(2, -1);
  const RunDirectory split(base / "split");
  group_run(split, false, unused, unused_parameters, &stopped_at);
  CHECK(stopped_at == std::vector<std::int64_t>{3, 3});  // both processes, at the same step
  CHECK(read_eval_log(split.log()).back().step == 0);     // the evaluation at step 3 was abandoned

  group_run(split, true, resumed, resumed_parameters);  // every process makes the evaluation at 3 first
  REQUIRE(resumed.size() == whole.size());
  for (std::size_t i = 0; i < whole.size(); ++i) {
    CHECK(resumed[i].step == whole[i].step);
    // the checkpoint at step 3 holds F32: the resumed run continues from the float-rounded model
    CHECK(resumed[i].val_loss == Approx(whole[i].val_loss).epsilon(1e-6));
  }
  CHECK(max_relative_difference(resumed_parameters, whole_parameters) < 1e-5);
  std::filesystem::remove_all(base);
}

TEST_CASE("a batch smaller than the group is refused with a message naming both") {
  using Model = CharTransformer<NoPE, 2, 16, 2>;
  const TextDataset data(corpus());
  run_group(3, [&](ProcessGroup& g) {
    Model model(ModelConfig{.vocab_size = data.vocab_size(), .context = 8});
    CHECK_THROWS_WITH((Trainer<Model>(model, data, TrainConfig{.batch = 2, .context = 8}, &g)),
                      Catch::Contains("batch 2 cannot be split over 3 processes"));
  });
}

TEST_CASE("a diverged run stops with its step named, alone and on every process of a group") {
  using Model = CharTransformer<NoPE, 2, 16, 2>;
  const TextDataset data(corpus());
  const TrainConfig config{.steps = 5, .batch = 4, .context = 8, .eval_every = 100, .eval_iters = 1};
  // Every process gets the same summed loss, so all of them stop at the same step and none is
  // left waiting in a collective.
  auto error_of = [&](ProcessGroup* group) -> std::string {
    Model model(ModelConfig{.vocab_size = data.vocab_size(), .context = config.context, .seed = 5});
    auto& p = model.parameters();
    std::fill(p.data(), p.data() + p.size(), std::numeric_limits<float>::quiet_NaN());
    Trainer<Model> trainer(model, data, config, group);
    try {
      trainer.run([](const StepReport&) {}, [](const EvalRecord&) {});
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  CHECK_THAT(error_of(nullptr), Catch::Contains("training diverged at step 1: the training loss is nan"));
  std::vector<std::string> errors(2);
  run_group(2, [&](ProcessGroup& g) { errors[static_cast<std::size_t>(g.rank())] = error_of(&g); });
  for (const std::string& e : errors) CHECK_THAT(e, Catch::Contains("training diverged at step 1"));
}
