// Tests of study/runner.hpp: a study's runs executed, resumed, extended, extrapolated and collected.
#include <catch2/catch.hpp>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <functional>
#include <stdexcept>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <posenc/transformer.hpp>

#include "test_models.hpp"
#include "thread_counts.hpp"

using namespace posenc;
using posenc_test::make_test_model;
using posenc_test::ThreadCounts;

namespace {

std::string corpus() {
  std::string text;
  Rng rng(5);
  const std::vector<std::string> words = {"to ", "be ", "or ", "not ", "that ", "is ", "the ", "question\n"};
  while (text.size() < 6000) text += words[rng.uniform_index(words.size())];
  return text;
}

StudyDesign tiny_design() {
  StudyDesign d;
  d.variants = {"rope", "alibi"};
  d.seeds = {1, 2};
  d.steps = 6;
  d.extended_steps = 10;
  d.extended_seeds = {1};
  d.run.layers = 1;
  d.run.dim = 8;
  d.run.heads = 2;
  d.run.train.batch = 2;
  d.run.train.context = 8;
  d.run.train.eval_every = 3;
  d.run.train.eval_iters = 2;
  d.run.data = "corpus.txt";
  d.extrapolate = {16};
  return d;
}

// tiny_design's runs of rope and learned on copy (lengths 1–3: a context of 6 inputs), no extended
// runs or evaluations of text.
StudyDesign tiny_task_design() {
  StudyDesign d = tiny_design();
  d.variants = {"rope", "learned"};
  d.extended_steps = 0;
  d.extended_seeds.clear();
  d.extrapolate.clear();
  d.run.data.clear();
  d.run.task = TaskSpec{TaskKind::copy, {1, 3}};
  d.run.train.context = task_context(*d.run.task);
  return d;
}

// A fresh directory under the system's temporary one, removed at the end of the test.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& name)
      : path(std::filesystem::temp_directory_path() / ("posenc-test-" + name)) {
    std::filesystem::remove_all(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

// Stops the run it is watching by throwing at a chosen step, as an interruption would.
class InterruptAt final : public StudyObserver {
 public:
  explicit InterruptAt(std::int64_t step) : step_(step) {}
  void step(std::size_t, const StepReport& r) override {
    if (r.step == step_) throw std::runtime_error("interrupted");
  }

 private:
  std::int64_t step_;
};

// Counts the training steps it sees.
class StepCounter final : public StudyObserver {
 public:
  void step(std::size_t, const StepReport&) override { ++steps; }
  std::atomic<std::int64_t> steps{0};
};

void check_same_numbers(const RunRecord& a, const RunRecord& b) {
  CHECK(a.config == b.config);
  CHECK(a.final_train_loss == b.final_train_loss);
  CHECK(a.final_val_loss == b.final_val_loss);
  REQUIRE(a.curve.size() == b.curve.size());
  for (std::size_t i = 0; i < a.curve.size(); ++i) {
    CHECK(a.curve[i].step == b.curve[i].step);
    CHECK(a.curve[i].train_loss == b.curve[i].train_loss);
    CHECK(a.curve[i].val_loss == b.curve[i].val_loss);
  }
}

}  // namespace

TEST_CASE("a study runs every run of its plan, with two jobs, and then has nothing pending") {
  ThreadCounts restore;
  set_num_threads(1);
  TempDir dir("study-runner-all");
  const StudyRunner runner(tiny_design(), dir.path, corpus(), make_test_model);
  REQUIRE(runner.plan().size() == 6);  // 2 variants × 2 seeds, + 2 extended runs of seed 1
  const auto pending = runner.pending();
  CHECK(pending.size() == 6);
  CHECK(runner.steps_to_train(pending) == 4 * 6 + 2 * 4);  // an extended run trains only its last 4 steps
  StudyObserver quiet;
  StudyFailures failures;
  runner.run(pending, 2, quiet, failures);
  CHECK(failures.list().empty());
  CHECK(runner.pending().empty());

  const std::vector<RunRecord> records = runner.records(false, failures);
  REQUIRE(records.size() == 6);
  for (const RunRecord& r : records) {
    CHECK(std::filesystem::exists(r.checkpoint));
    CHECK(r.curve.back().step == r.steps());
    CHECK(r.final_val_loss > 0);
    if (r.steps() == 6) {  // base runs are evaluated at the extrapolation length
      REQUIRE(r.extrapolation_at(16) != nullptr);
      CHECK(r.extrapolation_at(16)->at("non_overlapping").get<double>() > 0);
    }
  }
  const StudySummary summary = summarize_study(runner.design(), records);
  CHECK(summary.missing_runs.empty());
  CHECK(summary.ranking_complete);
}

TEST_CASE("an extended run continues its base run: it trains only the steps past it, and equals an uninterrupted run") {
  ThreadCounts restore;
  set_num_threads(1);
  TempDir with_base("study-runner-extended"), direct("study-runner-direct");
  StudyDesign d = tiny_design();
  d.variants = {"kerple"};
  d.seeds = {1};
  d.extrapolate.clear();
  const StudyRunner extended(d, with_base.path, corpus(), make_test_model);
  StepCounter counter;
  StudyFailures failures;
  extended.run(extended.pending(), 1, counter, failures);
  CHECK(counter.steps == 6 + 4);  // not 6 + 10
  StudyObserver quiet;
  d.steps = 10;
  d.extended_steps = 0;
  const StudyRunner straight(d, direct.path, corpus(), make_test_model);
  straight.run(straight.pending(), 1, quiet, failures);
  REQUIRE(failures.list().empty());
  const auto continued = load_record(extended.paths().record({"kerple", 1, 10}));
  const auto uninterrupted = load_record(straight.paths().record({"kerple", 1, 10}));
  REQUIRE(continued);
  REQUIRE(uninterrupted);
  check_same_numbers(*continued, *uninterrupted);
}

TEST_CASE("an interrupted run is reported, and running the study again resumes it to the same numbers") {
  ThreadCounts restore;
  // T5's, Kerple's and FIRE's bias gradients are sums over threads: at 3 threads the resumed run
  // must still equal the uninterrupted one bit for bit.
  for (const auto& [variant, threads] : {std::pair<std::string, int>{"t5", 1}, {"kerple", 3}, {"fire", 3}}) {
    DYNAMIC_SECTION(variant << " at " << threads << " thread(s)") {
      set_num_threads(threads);
      TempDir interrupted("study-runner-interrupted"), whole("study-runner-whole");
      StudyDesign d = tiny_design();
      d.variants = {variant};
      d.seeds = {2};
      d.extended_steps = 0;
      const StudyRunner runner(d, interrupted.path, corpus(), make_test_model);
      InterruptAt stop(5);  // after the checkpoint of step 3
      StudyFailures failures;
      runner.run(runner.pending(), 1, stop, failures);
      REQUIRE(failures.list().size() == 1);
      CHECK(failures.list()[0].find(variant + "-seed2-steps6: interrupted") != std::string::npos);
      CHECK(runner.pending().size() == 1);
      CHECK(std::filesystem::exists(runner.paths().run_dir({variant, 2, 6}) / "optimizer.safetensors"));
      CHECK(runner.steps_to_train(runner.pending()) == 3);  // what an ETA counts: the steps past the saved state

      StepCounter resumed;
      StudyFailures none;
      runner.run(runner.pending(), 1, resumed, none);
      CHECK(resumed.steps == 3);  // from the checkpoint of step 3, not from the start
      StudyObserver quiet;
      const StudyRunner reference(d, whole.path, corpus(), make_test_model);
      reference.run(reference.pending(), 1, quiet, none);
      REQUIRE(none.list().empty());
      check_same_numbers(*load_record(runner.paths().record({variant, 2, 6})),
                         *load_record(reference.paths().record({variant, 2, 6})));
    }
  }
}

TEST_CASE("a record of another configuration is an error, and a new extrapolation length is added to old records") {
  ThreadCounts restore;
  set_num_threads(1);
  TempDir dir("study-runner-config");
  StudyDesign d = tiny_design();
  d.variants = {"learned"};
  d.seeds = {1};
  d.extended_steps = 0;
  d.extrapolate.clear();
  StudyObserver quiet;
  StudyFailures failures;
  const StudyRunner first(d, dir.path, corpus(), make_test_model);
  first.run(first.pending(), 1, quiet, failures);
  REQUIRE(failures.list().empty());

  StudyDesign longer = d;
  longer.extrapolate = {8, 16};
  const StudyRunner again(longer, dir.path, corpus(), make_test_model);
  CHECK(again.pending().empty());  // the extrapolation lengths are not part of a run's identity
  const std::vector<RunRecord> records = again.records(true, failures);
  REQUIRE(records.size() == 1);
  CHECK(records[0].extrapolation_at(8)->at("non_overlapping").get<double>() > 0);
  CHECK(records[0].extrapolation_at(16)->at("note").get<std::string>().find("learned table has 8 rows") !=
        std::string::npos);
  CHECK(load_record(again.paths().record({"learned", 1, 6}))->extrapolation_at(8) != nullptr);  // rewritten

  StudyDesign other = d;
  other.run.train.lr = 0.5;
  const StudyRunner mismatched(other, dir.path, corpus(), make_test_model);
  CHECK_THROWS_WITH(mismatched.pending(), Catch::Contains("another configuration (lr: ") &&
                                              Catch::Contains(" → 0.5); use another --out"));
}

TEST_CASE("a run that cannot be made is reported, and the job goes on to the next") {
  ThreadCounts restore;
  set_num_threads(1);
  TempDir dir("study-runner-failure");
  StudyDesign d = tiny_design();
  d.variants = {"rope"};
  d.extended_steps = 0;
  d.extrapolate.clear();
  // the runs' models (seeds 1 and 2) cannot be made; the runner's check before the study (its own seed 0) can
  const auto fails_for_runs = [](const ModelShape& shape, const ModelConfig& config) {
    if (config.seed != 0) fail("no memory left for seed ", config.seed);
    return make_test_model(shape, config);
  };
  const StudyRunner runner(d, dir.path, corpus(), fails_for_runs);
  StudyObserver quiet;
  StudyFailures failures;
  runner.run(runner.pending(), 2, quiet, failures);
  REQUIRE(failures.list().size() == 2);
  CHECK(failures.list()[0].find("no memory left for seed") != std::string::npos);
}

TEST_CASE("a configuration that cannot train fails when the study is made, naming its run") {
  TempDir dir("study-runner-unfit");
  const auto problem = [&](const std::function<void(StudyDesign&)>& change) {
    StudyDesign d = tiny_design();
    d.extended_steps = 0;
    change(d);
    try {
      const StudyRunner runner(d, dir.path, corpus(), make_test_model);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(problem([](StudyDesign& d) { d.grid = {parse_grid_axis("dropout=0,1.5")}; }) ==
        "run rope-seed1-steps6-dropout-1.5: CharTransformer: dropout must lie in [0, 1), got 1.5");
  CHECK(problem([](StudyDesign& d) { d.grid_list = {parse_grid_point("grad_accum=0")}; }) ==
        "run rope-seed1-steps6-grad_accum-0: training: grad_accum must be positive");
  CHECK(problem([](StudyDesign& d) { d.grid_list = {parse_grid_point("beta2=1")}; })
            .find("run rope-seed1-steps6-beta2-1: AdamW: betas must lie in [0, 1)") == 0);
  CHECK(problem([](StudyDesign& d) { d.run.layers = 2; }).find("not built for a model of 2 layers") !=
        std::string::npos);
  CHECK(problem([](StudyDesign&) {}).empty());
}

TEST_CASE("after training, a study records the loss by position, the copy probe and each RoPE scaling, and adds "
          "only what a record lacks") {
  ThreadCounts restore;
  set_num_threads(1);
  TempDir dir("study-runner-evaluations");
  StudyDesign d = tiny_design();
  d.extended_steps = 0;
  d.extended_seeds.clear();
  d.extrapolate = {16, 32};
  d.per_position_bins = 4;
  d.copy_probe = {4, 12};
  d.copy_segments = 5;
  // settings beside the method and factor: the evaluation must use them, not the checkpoint's. In
  // this model (2 rotated pairs, trained at 8 positions) the pair turning once over the context is
  // pair 0.05, so only betas this small move YaRN's ramp off pairs 0 to 1.
  const RopeScaling yarn = parse_rope_scaling_spec("yarn:4:beta_fast=0.01:beta_slow=0.001:attention_factor=1.2"),
                    linear = parse_rope_scaling_spec("linear:2:base=500"),
                    new_base = parse_rope_scaling_spec("base=500");  // a new base alone
  d.extrapolate_rope = {yarn, linear, new_base};
  const StudyRunner runner(d, dir.path, corpus(), make_test_model);
  StudyObserver quiet;
  StudyFailures failures;
  runner.run(runner.pending(), 1, quiet, failures);
  REQUIRE(failures.list().empty());
  const std::vector<RunRecord> records = runner.records(false, failures);
  REQUIRE(records.size() == 4);
  const TextDataset data(corpus());
  for (const RunRecord& r : records) {
    INFO(r.variant() << " seed " << r.seed());
    const bool rotary = r.variant() == "rope";
    CHECK(r.extrapolation.size() == (rotary ? 8u : 2u));  // 2 lengths × (trained angles + 3 scalings)
    CHECK(r.copy_probe.size() == (rotary ? 8u : 2u));
    CHECK((r.extrapolation_at(16, yarn) != nullptr) == rotary);
    // each entry is what the library computes for the final model under its scaling
    auto model = make_test_model({r.variant(), 1, 8, 2}, ModelConfig{.vocab_size = data.vocab_size(), .context = 8});
    model->load_parameters(read_safetensors(r.checkpoint));
    const std::vector<RopeScaling> scalings =
        rotary ? std::vector<RopeScaling>{{}, yarn, linear, new_base} : std::vector<RopeScaling>{{}};
    for (const RopeScaling& scaling : scalings) {
      if (rotary) model->set_rope_scaling(scaling);
      for (std::size_t L : {16, 32}) {
        const nlohmann::json* e = r.extrapolation_at(L, scaling);
        REQUIRE(e != nullptr);
        CHECK(e->at("non_overlapping") == evaluate_at_length(*model, data.val(), L, L / 2, 4)["non_overlapping"]);
        const nlohmann::json& bins = e->at("per_position").at("bins");
        REQUIRE(bins.size() == 4);
        CHECK(bins[3]["first"].get<std::size_t>() == 3 * L / 4);
        CHECK(bins[3]["last"].get<std::size_t>() == L - 1);
        CHECK(bins[3]["loss"].get<double>() == model->per_position_loss(data.val(), L).mean_over(3 * L / 4, L));
      }
      const nlohmann::json* probe = r.copy_probe_at(12, scaling);
      REQUIRE(probe != nullptr);
      CHECK(probe->at("segments").get<std::size_t>() == 5);
      CHECK(probe->at("drop").get<double>() == model->copy_probe(data.val(), 12, 5).drop);
    }
    if (rotary) {  // past the trained context of 8, the scalings change the numbers; so does each beta
      CHECK(r.extrapolation_at(32, yarn)->at("non_overlapping") != r.extrapolation_at(32)->at("non_overlapping"));
      for (const char* dropped : {"yarn:4:beta_slow=0.001:attention_factor=1.2", "yarn:4:attention_factor=1.2"}) {
        INFO(dropped);
        model->set_rope_scaling(parse_rope_scaling_spec(dropped));
        CHECK(r.extrapolation_at(32, yarn)->at("non_overlapping") !=
              evaluate_at_length(*model, data.val(), 32, 16, 4)["non_overlapping"]);
      }
    }
  }

  const StudySummary summary = summarize_study(d, records);
  CHECK(summary.scaling_comparisons.size() == 6);  // rope × 3 scalings × 2 lengths
  for (const ScalingComparison& c : summary.scaling_comparisons) CHECK(c.n == 2);
  CHECK(summary.position_curves.size() == 10);     // rope × 4 × 2 lengths + alibi × 2 lengths
  CHECK(summary.copy_probe.size() == 10);          // rope × 4 × 2 distances + alibi × 2 distances
  const std::string markdown = summary_markdown(summary);
  CHECK(markdown.find("| rope · yarn ×4 beta_fast=0.01 beta_slow=0.001 attention_factor=1.2 |") != std::string::npos);
  CHECK(markdown.find("| rope · base=500 |") != std::string::npos);

  // Without its checkpoint a complete record is still read (nothing to evaluate) ...
  const RunRecord& rope = records[0];
  REQUIRE(rope.variant() == "rope");
  const std::filesystem::path moved = rope.checkpoint + ".away";
  std::filesystem::rename(rope.checkpoint, moved);
  CHECK(runner.records(true, failures).size() == 4);
  CHECK(failures.list().empty());
  // ... and a study asking for more evaluates only that, and rewrites the record.
  std::filesystem::rename(moved, rope.checkpoint);
  StudyDesign more = d;
  more.extrapolate_rope.push_back(parse_rope_scaling_spec("ntk:4"));
  more.copy_segments = 6;
  const StudyRunner again(more, dir.path, corpus(), make_test_model);
  std::mutex reports_mutex;
  std::map<std::string, std::size_t> reported;  // run → entries, as the evaluation reports them
  std::size_t most_checked = 0;
  const auto on_evaluated = [&](const std::string& run, std::size_t entries, std::size_t checked) {
    std::lock_guard lock(reports_mutex);
    reported[run] = entries;
    most_checked = std::max(most_checked, checked);
  };
  // two records at a time, in plan order
  const std::vector<RunRecord> updated = again.records(true, failures, 2, {}, on_evaluated);
  CHECK(failures.list().empty());
  // rope: ntk:4 at both lengths, and the copy probe at 6 segments under all 5 scalings; alibi: its 2 probes
  CHECK(reported == std::map<std::string, std::size_t>{
                        {"rope-seed1-steps6", 12}, {"rope-seed2-steps6", 12},
                        {"alibi-seed1-steps6", 2}, {"alibi-seed2-steps6", 2}});
  CHECK(most_checked == 4);
  REQUIRE(updated[0].variant() == "rope");
  CHECK(updated[0].extrapolation.size() == 10);
  CHECK(updated[0].extrapolation_at(32, parse_rope_scaling_spec("ntk:4")) != nullptr);
  CHECK(updated[0].extrapolation_at(16)->at("non_overlapping") == rope.extrapolation_at(16)->at("non_overlapping"));
  CHECK(updated[0].copy_probe.size() == 10);
  CHECK(updated[0].copy_probe_at(12)->at("segments").get<std::size_t>() == 6);
  CHECK(load_record(again.paths().record({"rope", 1, 6}))->copy_probe.size() == 10);

  // A probe against the first copy (a record of before 2026-12-03) is made again as the control's.
  const std::filesystem::path path = again.paths().record({"rope", 1, 6});
  RunRecord old = *load_record(path);
  nlohmann::json& entry = *old.copy_probe_at(4);
  entry["first_copy_loss"] = entry.at("control_loss");
  entry.erase("control_loss");
  write_record(old, path);
  CHECK(summarize_study(more, {old}).copy_probe[0].control.empty());  // not read as a control
  const std::vector<RunRecord> redone = again.records(true, failures);
  CHECK(failures.list().empty());
  CHECK(redone[0].copy_probe_at(4)->at("control_loss") == updated[0].copy_probe_at(4)->at("control_loss"));
  CHECK(redone[0].copy_probe.size() == 10);
}

TEST_CASE("validate_design names the first problem of a design") {
  const auto problem = [](auto change) {
    StudyDesign d = tiny_design();
    change(d);
    try {
      validate_design(d);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(problem([](StudyDesign&) {}).empty());
  CHECK(problem([](StudyDesign& d) { d.variants = {"rope", "alibi", "rope"}; }) == "--variants: 'rope' is given twice");
  CHECK(problem([](StudyDesign& d) { d.seeds = {2, 1, 2}; }) == "--seeds: '2' is given twice");
  CHECK(problem([](StudyDesign& d) { d.variants = {}; }) == "--variants: no variant given");
  CHECK(problem([](StudyDesign& d) { d.variants = {"rotary"}; }).find("unknown positional encoding 'rotary'") == 0);
  CHECK(problem([](StudyDesign& d) { d.extended_seeds = {7}; }).find("--extended-seeds: 7 is not among --seeds") == 0);
  CHECK(problem([](StudyDesign& d) { d.extended_steps = 6; }) == "--extended-steps 6 must exceed --steps 6 (or be 0)");
  CHECK(problem([](StudyDesign& d) { d.extrapolate = {16, 16}; }) == "--extrapolate: '16' is given twice");
  CHECK(problem([](StudyDesign& d) { d.extrapolate = {0}; }) == "--extrapolate: a length must be at least 1");
  CHECK(problem([](StudyDesign& d) { d.extrapolate.clear(), d.per_position_bins = 4; }) ==
        "--per-position: the loss by position is taken at the --extrapolate lengths; give some");
  CHECK(problem([](StudyDesign& d) { d.copy_probe = {8, 1}; }) == "--copy-probe: a distance must be at least 2, got 1");
  CHECK(problem([](StudyDesign& d) { d.copy_probe = {8, 8}; }) == "--copy-probe: '8' is given twice");
  CHECK(problem([](StudyDesign& d) { d.copy_segments = 0; }) == "--copy-segments must be at least 1");
  CHECK(problem([](StudyDesign& d) { d.extrapolate_rope = {parse_rope_scaling_spec("yarn:4")}; }).empty());
  CHECK(problem([](StudyDesign& d) {
          d.extrapolate_rope = {parse_rope_scaling_spec("yarn:4"), parse_rope_scaling_spec("yarn:4")};
        }) == "--extrapolate-rope: 'yarn ×4' is given twice");
  CHECK(problem([](StudyDesign& d) {
          d.variants = {"alibi", "t5"};
          d.extrapolate_rope = {parse_rope_scaling_spec("linear:2")};
        }) == "--extrapolate-rope: none of the variants is rotary (" + name_list(rotary_policy_names()) + ")");
  CHECK(problem([](StudyDesign& d) {
          d.extrapolate.clear();
          d.extrapolate_rope = {parse_rope_scaling_spec("linear:2")};
        }).find("--extrapolate-rope: the scalings apply to the --extrapolate lengths") == 0);
  CHECK(problem([](StudyDesign& d) { d.run.train.schedule.kind = ScheduleKind::cosine; })
            .find("--extended-steps 10: an extended run continues its seed's base run, which the 'cosine' schedule "
                  "forbids") == 0);
  CHECK(problem([](StudyDesign& d) { d.run.train.schedule.warmup_steps = 7; }) ==
        "--warmup-steps 7 exceeds the run's 6 steps");
  CHECK(problem([](StudyDesign& d) { d.fine_tune_rope = {parse_rope_scaling_spec("linear:2")}; }) ==
        "--fine-tune-rope: the scalings apply to fine-tunes; give --fine-tune too");
  CHECK(problem([](StudyDesign& d) { d.fine_tune_context = 8; }) ==
        "--fine-tune 8: the runs train at that context already; fine-tune at another");
  CHECK(problem([](StudyDesign& d) { d.fine_tune_context = 16, d.fine_tune_steps = 0; }) ==
        "--fine-tune-steps 0 must be at least 1");
  CHECK(problem([](StudyDesign& d) {
          d.variants = {"alibi"};
          d.fine_tune_context = 16;
          d.fine_tune_rope = {parse_rope_scaling_spec("linear:2")};
        }) == "--fine-tune-rope: none of the variants is rotary (" + name_list(rotary_policy_names()) + ")");
  CHECK(problem([](StudyDesign& d) {
          d.fine_tune_context = 16;
          d.grid = {parse_grid_axis("batch=2,4")};
        }) == "--grid batch with --fine-tune: the fine-tunes set their own batch; study the two apart");
  CHECK(problem([](StudyDesign& d) {
          d.extended_steps = 0;
          d.fine_tune_context = 16;
          d.fine_tune_steps = 4;
          d.run.train.schedule.warmup_steps = 5;
        }) == "--warmup-steps 5 exceeds the run's 4 steps");
  // a task study: the evaluations of text and the designs its summary does not compare are refused
  const auto on_task = [](StudyDesign& d) {
    d.run.task = TaskSpec{TaskKind::copy, {1, 3}};
    d.extrapolate.clear();
  };
  CHECK(problem(on_task).empty());
  CHECK(problem([&](StudyDesign& d) { on_task(d), d.extrapolate = {16}; }) ==
        "--extrapolate with --task: a task study tests its models at --task-test-lengths");
  CHECK(problem([&](StudyDesign& d) { on_task(d), d.copy_probe = {8}; }).find("--copy-probe with --task") == 0);
  CHECK(problem([&](StudyDesign& d) { on_task(d), d.fine_tune_context = 16; }).find("--fine-tune with --task") == 0);
  CHECK(problem([&](StudyDesign& d) { on_task(d), d.grid = {parse_grid_axis("lr=0.001,0.002")}; }).empty());
  CHECK(problem([&](StudyDesign& d) { on_task(d), d.task_examples = 0; }) == "--task-examples must be at least 1");
  CHECK(problem([&](StudyDesign& d) { on_task(d), d.extrapolate_rope = {parse_rope_scaling_spec("yarn:2")}; })
            .empty());  // the scalings apply to the task's lengths
  CHECK(problem([](StudyDesign& d) { d.task_lengths = {4}; }) ==
        "--task-test-lengths: the lengths a task's models are tested at; give --task too");
}

TEST_CASE("a task study crossed with randomized positions tests every run, and compares each variant's accuracy "
          "by band across the settings") {
  ThreadCounts restore;
  set_num_threads(1);
  TempDir dir("study-runner-task-grid");
  StudyDesign d = tiny_task_design();
  d.task_examples = 4;
  d.grid = {parse_grid_axis("random_positions=0,48")};  // 48: the inputs of the longest tested copy, 24
  const StudyRunner runner(d, dir.path, "", make_test_model);
  StudyObserver quiet;
  StudyFailures failures;
  runner.run(runner.pending(), 1, quiet, failures);
  REQUIRE(failures.list().empty());
  const std::vector<RunRecord> records = runner.records(false, failures);
  REQUIRE(records.size() == 8);
  for (const RunRecord& r : records) {
    INFO(r.variant() << " seed " << r.seed() << " at " << r.config.random_positions);
    // at random positions learned's table has a row for every position of the range: every length
    // is tested; at 0, 1, 2, … its table ends at the trained context
    const bool whole_range = r.variant() == "rope" || r.config.random_positions == 48;
    CHECK(r.task_at(24)->contains("accuracy") == whole_range);
    CHECK(r.task_at(3)->contains("accuracy"));
  }
  const GridSummary g = summarize_grid(d, records);
  REQUIRE(g.settings.size() == 2);
  REQUIRE(g.settings[1].second.task);
  const std::size_t bands = g.settings[1].second.task->bands.size();
  REQUIRE(g.task_across.size() == bands * 2);  // each band: rope and learned, one comparison each
  const TaskSettingComparison& rope_trained = g.task_across[0];
  CHECK(rope_trained.variant == "rope");
  CHECK(rope_trained.setting == "random_positions=48");
  CHECK(rope_trained.seeds == std::vector<std::uint64_t>{1, 2});
  // learned past its table at 0, 1, 2, …: nothing to compare
  CHECK(g.task_across[2 * (bands - 1) + 1].accuracy.empty());
}

TEST_CASE("a task study tests each base run at every tested length and scaling, completes a record part-way, and "
          "summarizes the accuracy") {
  ThreadCounts restore;
  set_num_threads(1);
  TempDir dir("study-runner-task");
  StudyDesign d = tiny_task_design();  // 6 inputs: learned's table ends at length 3
  d.task_examples = 4;
  d.extrapolate_rope = {parse_rope_scaling_spec("yarn:2")};
  CHECK_THROWS_WITH(StudyRunner(d, dir.path, "some text", make_test_model), Catch::Contains("takes no corpus"));
  StudyDesign long_lengths = d;
  long_lengths.task_lengths = {1, 700};
  long_lengths.run.task->kind = TaskKind::associative_recall;
  long_lengths.run.train.context = task_context(*long_lengths.run.task);
  CHECK_THROWS_WITH(StudyRunner(long_lengths, dir.path, "", make_test_model),
                    Catch::Contains("length 700 exceeds the longest it has"));

  const StudyRunner runner(d, dir.path, "", make_test_model);
  const std::vector<std::size_t> tested = tested_task_lengths(d);
  REQUIRE(tested.size() == 24);  // 1 to 8 × 3
  StudyObserver quiet;
  StudyFailures failures;
  runner.run(runner.pending(), 1, quiet, failures);
  REQUIRE(failures.list().empty());
  std::vector<RunRecord> records = runner.records(false, failures);
  REQUIRE(records.size() == 4);
  const Task task(TaskKind::copy);
  for (const RunRecord& r : records) {
    INFO(r.variant() << " seed " << r.seed());
    CHECK(r.final_train_loss > 0);
    CHECK(r.final_val_loss > 0);
    CHECK(r.final_train_loss != r.final_val_loss);  // other examples
    const bool rotary = r.variant() == "rope";
    CHECK(r.task.size() == (rotary ? 2 : 1) * tested.size());
    for (std::size_t n : tested) {
      const nlohmann::json* e = r.task_at(n);
      REQUIRE(e != nullptr);
      CHECK(e->at("seed").get<std::uint64_t>() == d.task_seed);
      CHECK(e->contains("accuracy") == (rotary || n <= 3));  // past the table: a note, no accuracy
      CHECK((r.task_at(n, parse_rope_scaling_spec("yarn:2")) != nullptr) == rotary);
    }
    // the recorded numbers are the checkpoint's own, each length drawn from its own stream
    const SafetensorsFile file = read_safetensors(r.checkpoint);
    const CheckpointInfo info = read_checkpoint_info(file);
    const auto model = make_test_model(r.config.shape(), info.model_config(64));
    model->load_parameters(file);
    const TaskScore score =
        model->evaluate_task(task, task.tokenizer(), {2, 2}, d.task_examples, d.task_seed).front();
    CHECK(r.task_at(2)->at("accuracy").get<double>() == score.accuracy);
    CHECK(r.task_at(2)->at("answer_loss").get<double>() == score.answer_loss);
  }

  // a record whose evaluation stopped part-way is completed to the same entries
  const RunSpec rope1{"rope", 1, d.steps};
  const RunRecord whole = *load_record(runner.paths().record(rope1));
  RunRecord part = whole;
  part.task.erase(part.task.begin() + 10, part.task.end());
  write_record(part, runner.paths().record(rope1));
  records = runner.records(true, failures);
  REQUIRE(failures.list().empty());
  const RunRecord completed = *load_record(runner.paths().record(rope1));
  REQUIRE(completed.task.size() == whole.task.size());
  for (std::size_t n : tested) CHECK(*completed.task_at(n) == *whole.task_at(n));

  const StudySummary summary = summarize_study(d, records);
  REQUIRE(summary.task);
  const TaskSummary& t = *summary.task;
  REQUIRE(t.bands.size() == 4);  // ≤ 3, 4–6, 7–12, 13–24
  CHECK(t.bands[1].label() == "4–6");
  CHECK(t.band_cells.size() == 3 * 4);  // rope, rope · yarn ×2, learned
  const TaskBandCell& rope_near = t.band_cells[1];
  REQUIRE(rope_near.accuracy.size() == 2);
  double by_hand = 0;
  for (std::size_t n : {4, 5, 6}) by_hand += records[0].task_at(n)->at("accuracy").get<double>();
  CHECK(rope_near.accuracy[0] == Approx(by_hand / 3));
  const TaskBandCell& learned_near = t.band_cells[2 * 4 + 1];
  CHECK(learned_near.variant == "learned");
  CHECK(learned_near.accuracy.empty());
  CHECK(learned_near.note.find("from length 4 not applicable") == 0);
  REQUIRE(t.pairs.size() == 4);  // one pair a band
  CHECK(t.pairs[0].shared_seeds == 2);
  CHECK(t.pairs[1].note == "fewer than two seeds with the band evaluated for both: no test");
  CHECK(summary_markdown(summary).find("## Task copy: trained on lengths 1-3") != std::string::npos);

  // other example counts make every entry again
  StudyDesign more = d;
  more.task_examples = 6;
  const StudyRunner again(more, dir.path, "", make_test_model);
  CHECK(again.pending().empty());
  for (const RunRecord& r : again.records(true, failures))
    for (const nlohmann::json& e : r.task)
      if (e.contains("examples")) CHECK(e.at("examples").get<std::size_t>() == 6);
}

TEST_CASE("a study fine-tunes each base run from its final model at a new context, right after it, and evaluates "
          "the fine-tuned models") {
  ThreadCounts restore;
  set_num_threads(1);
  TempDir dir("study-runner-fine-tune");
  StudyDesign d = tiny_design();
  d.extended_steps = 0;
  d.extended_seeds.clear();
  d.extrapolate = {32};
  d.copy_probe = {8};
  d.copy_segments = 3;
  d.extrapolate_rope = {parse_rope_scaling_spec("ntk:4")};
  d.fine_tune_context = 16;
  d.fine_tune_steps = 4;
  const RopeScaling linear = parse_rope_scaling_spec("linear:2");
  d.fine_tune_rope = {linear};
  const StudyRunner runner(d, dir.path, corpus(), make_test_model);
  REQUIRE(runner.plan().size() == 4 + 3 * 2);  // rope: 2 fine-tunes per seed, alibi: 1
  const std::vector<std::size_t> pending = runner.pending();
  CHECK(runner.steps_to_train(pending) == 4 * 6 + 6 * 4);
  // every fine-tune follows its base run in the same job
  const auto items = runner.work_items(pending);
  REQUIRE(items.size() == 4);
  CHECK(runner.plan()[items[0].followers.at(1)].id() == "rope-seed1-steps6-ft16x4-linear2");
  StudyObserver quiet;
  StudyFailures failures;
  runner.run(pending, 2, quiet, failures);
  REQUIRE(failures.list().empty());
  CHECK(runner.pending().empty());

  const std::vector<RunRecord> records = runner.records(false, failures);
  REQUIRE(records.size() == 10);
  const TextDataset data(corpus());
  for (std::size_t i = 4; i < records.size(); ++i) {
    const RunSpec& spec = runner.plan()[i];
    const RunRecord& tuned = records[i];
    const RunRecord base = *load_record(runner.paths().record(spec.base()));
    INFO(spec.id());
    CHECK(tuned.config.train.context == 16);
    CHECK(tuned.config.train.batch == 1);  // 2 windows of 8 tokens a step in the base runs
    CHECK(tuned.config.init_from == InitFrom{base.checkpoint, 6, 8});
    CHECK(tuned.config.rope.method == spec.fine_tune->rope.method);
    CHECK(tuned.curve.back().step == 4);
    // its training is the library's own fine-tune of the base run's final model
    auto model = make_test_model(tuned.config.shape(), tuned.config.model_config(data.vocab_size()));
    const SafetensorsFile source = read_safetensors(base.checkpoint);
    model->initialize_from(source, read_checkpoint_info(source));
    const RunDirectory again(dir.path / ("again-" + spec.id()));
    const auto curve = model->train(data, tuned.config.train, again, false, {}, nullptr);
    REQUIRE(curve.size() == tuned.curve.size());
    CHECK(curve.front().val_loss == tuned.curve.front().val_loss);
    CHECK(curve.back().val_loss == tuned.curve.back().val_loss);
    CHECK(tuned.curve.front().val_loss < base.curve.front().val_loss);  // it starts trained, not fresh
    // evaluated as the base runs are, with the angles it was fine-tuned with only
    CHECK(tuned.extrapolation.size() == 1);
    CHECK(tuned.copy_probe.size() == 1);
    CHECK(tuned.extrapolation_at(32) != nullptr);
  }
  const StudySummary summary = summarize_study(d, records);
  CHECK(summary.missing_runs.empty());
  CHECK(summary.scaling_comparisons.size() == 4);  // rope: ntk, ft, ft · linear; alibi: ft
  for (const ScalingComparison& c : summary.scaling_comparisons) CHECK(c.n == 2);
  CHECK(summary_markdown(summary).find("| rope · ft 16×4 · linear ×2 |") != std::string::npos);
}

TEST_CASE("a grid study runs every variant and seed at every setting, and its summary compares them") {
  ThreadCounts restore;
  set_num_threads(1);
  TempDir dir("study-runner-grid");
  StudyDesign d = tiny_design();
  d.variants = {"alibi"};
  d.seeds = {1, 2};
  d.extended_steps = 0;
  d.extrapolate.clear();
  d.run.train.lr = 3e-2;  // large enough that clipping at 0.05 changes the run
  d.grid = {parse_grid_axis("grad_clip=none,0.05")};
  StudyObserver quiet;
  StudyFailures failures;
  const StudyRunner runner(d, dir.path, corpus(), make_test_model);
  REQUIRE(runner.plan().size() == 4);
  runner.run(runner.pending(), 2, quiet, failures);
  REQUIRE(failures.list().empty());
  CHECK(runner.pending().empty());
  const auto clipped = load_record(runner.paths().record(runner.plan()[2]));
  REQUIRE(clipped);
  CHECK(runner.paths().record(runner.plan()[2]).filename() == "alibi-seed1-steps6-grad_clip-0.05.json");
  CHECK(clipped->config.train.max_grad_norm == 0.05);
  const auto unclipped = load_record(runner.paths().record(runner.plan()[0]));
  CHECK_FALSE(unclipped->config.train.max_grad_norm.has_value());
  CHECK(clipped->final_val_loss != unclipped->final_val_loss);

  const GridSummary g = summarize_grid(d, runner.records(false, failures));
  REQUIRE(g.across.size() == 1);
  CHECK(g.across[0].seeds == std::vector<std::uint64_t>{1, 2});
  CHECK(g.across[0].val[0] == clipped->final_val_loss);
  CHECK(g.across[0].baseline_val[0] == unclipped->final_val_loss);
  // running it again trains nothing: every run of every setting is found
  StepCounter counter;
  runner.run(runner.pending(), 1, counter, failures);
  CHECK(counter.steps == 0);
}

TEST_CASE("a grid across tokenizers trains each point in its own tokens, and its records carry bits per byte") {
  ThreadCounts restore;
  set_num_threads(1);
  TempDir dir("study-runner-tokens");
  StudyDesign d = tiny_design();
  d.variants = {"alibi"};
  d.seeds = {1};
  d.extended_steps = 0;
  d.extrapolate = {16};  // evaluated in the point's own tokens
  d.run.tokenizer.vocab_size = 270;
  d.grid = {parse_grid_axis("tokenizer=char,bpe")};
  StudyObserver quiet;
  StudyFailures failures;
  const StudyRunner runner(d, dir.path, corpus(), make_test_model);
  runner.run(runner.pending(), 1, quiet, failures);
  REQUIRE(failures.list().empty());
  const auto characters = load_record(runner.paths().record(runner.plan()[0]));
  const auto bpe = load_record(runner.paths().record(runner.plan()[1]));
  REQUIRE((characters && bpe));
  CHECK(runner.paths().record(runner.plan()[1]).filename() == "alibi-seed1-steps6-tokenizer-bpe.json");
  CHECK(bpe->config.tokenizer == TokenizerSpec{TokenizerKind::bpe, 270});
  CHECK(characters->config.tokenizer == TokenizerSpec{});
  const TextDataset bpe_data(corpus(), bpe->config.tokenizer);
  CHECK(bpe->bytes_per_target.validation == bpe_data.bytes_per_target(Split::validation));
  CHECK(bpe->bytes_per_target.validation > 1.5);
  CHECK(characters->bytes_per_target == BytesPerTarget{1, 1});
  const CheckpointInfo info = read_checkpoint_info(read_safetensors(bpe->checkpoint));
  CHECK(info.tokenizer.spec() == bpe->config.tokenizer);
  REQUIRE(bpe->extrapolation.size() == 1);
  CHECK(bpe->extrapolation[0]["non_overlapping"].get<double>() > 0);
  CHECK(summarize_grid(d, runner.records(false, failures)).in_bits_per_byte);
}

TEST_CASE("a study of a token folder trains on its tokens, as the study of its text does, and refuses other tokens") {
  ThreadCounts restore;
  set_num_threads(1);
  TempDir text_dir("study-runner-text"), folder_dir("study-runner-folder"), tokens_dir("study-runner-tokens-folder");
  StudyDesign d = tiny_design();
  d.variants = {"rope"};
  d.seeds = {1};
  d.extended_steps = 0;
  d.run.tokenizer = {TokenizerKind::bpe, 270};
  save_token_folder(tokens_dir.path.string(), TextDataset(corpus(), d.run.tokenizer), corpus_digest(corpus()),
                    "corpus.txt");
  StudyObserver quiet;
  StudyFailures failures;
  const StudyRunner on_text(d, text_dir.path, corpus(), make_test_model);
  on_text.run(on_text.pending(), 1, quiet, failures);
  const StudyRunner on_tokens(d, folder_dir.path, read_token_folder(tokens_dir.path.string()), make_test_model);
  on_tokens.run(on_tokens.pending(), 1, quiet, failures);
  REQUIRE(failures.list().empty());
  const auto a = load_record(on_text.paths().record(on_text.plan()[0]));
  const auto b = load_record(on_tokens.paths().record(on_tokens.plan()[0]));
  REQUIRE((a && b));
  CHECK(a->config == b->config);  // the corpus's digest too: the folder stands for its text
  CHECK(a->final_val_loss == b->final_val_loss);
  CHECK(a->bytes_per_target == b->bytes_per_target);
  CHECK(a->extrapolation == b->extrapolation);
  StudyDesign characters = d;
  characters.run.tokenizer = {};
  CHECK_THROWS_WITH(StudyRunner(characters, folder_dir.path, read_token_folder(tokens_dir.path.string()),
                                make_test_model),
                    Catch::Contains("the token folder holds tokens of bpe 270, not of the run's char"));
  CHECK_THROWS_WITH(read_corpus(tokens_dir.path.string()), Catch::Contains("is a token folder"));
}

// Asks the runs to stop once any of them reaches a step (or, with after_estimates, once the
// estimates at that step are made), as Ctrl-C would.
class StopAt final : public StudyObserver {
 public:
  explicit StopAt(std::int64_t step, bool after_estimates = false) : step_(step), after_estimates_(after_estimates) {}
  void step(std::size_t, const StepReport& r) override {
    if (!after_estimates_ && r.step >= step_) stop_ = true;
  }
  void eval(std::size_t, const EvalRecord& r) override {
    if (after_estimates_ && r.step >= step_) stop_ = true;
  }
  bool stop_requested() override { return stop_; }
  void finished(std::size_t, RunEnd end, const std::string&, std::int64_t) override { ends.push_back(end); }
  std::vector<RunEnd> ends;  // one job: no other thread calls finished()

 private:
  std::int64_t step_;
  bool after_estimates_;
  std::atomic<bool> stop_{false};
};

TEST_CASE("a study asked to stop saves its runs in progress, starts no other, and resumes them exactly") {
  ThreadCounts restore;
  set_num_threads(1);
  TempDir stopped("study-runner-stopped"), whole("study-runner-unstopped");
  StudyDesign d = tiny_design();
  d.variants = {"rope"};
  d.seeds = {1, 2};
  d.extended_steps = 0;
  d.extrapolate.clear();
  const StudyRunner runner(d, stopped.path, corpus(), make_test_model);
  StopAt stop(4);
  StudyFailures failures;
  runner.run(runner.pending(), 1, stop, failures);
  CHECK(failures.list().empty());  // asked for: not a failure
  CHECK(stop.ends == std::vector<RunEnd>{RunEnd::stopped});  // a program counts it as still to do
  CHECK(runner.pending().size() == 2);
  CHECK(std::filesystem::exists(runner.paths().run_dir(runner.plan()[0]) / "checkpoint-step000004.safetensors"));
  CHECK_FALSE(std::filesystem::exists(runner.paths().run_dir(runner.plan()[1])));  // never started
  StudyObserver quiet;
  runner.run(runner.pending(), 1, quiet, failures);
  REQUIRE(failures.list().empty());
  const StudyRunner reference(d, whole.path, corpus(), make_test_model);
  reference.run(reference.pending(), 1, quiet, failures);
  check_same_numbers(*load_record(runner.paths().record(runner.plan()[0])),
                     *load_record(reference.paths().record(reference.plan()[0])));
}

// Dropout reaches every policy's attention kernel (the probabilities are dropped where they are
// made); its masks follow each (sequence, head), never the thread that computes it. Runs at one
// thread count are bitwise the same; across thread counts, the policies with trainable bias
// parameters sum their gradients per thread, so their last bits may differ (FIRE's train loss by
// 7e-9), while a mask that depended on the thread moved every policy's losses by 4e-7 or more.
TEST_CASE("with dropout, every policy's run is bitwise the same at 2 threads, has 1 thread's masks, and not none") {
  ThreadCounts restore;
  StudyDesign d = tiny_design();
  d.variants = policy_names();
  d.seeds = {1};
  d.extended_steps = 0;
  d.extrapolate = {};
  d.run.train.batch = 4;
  StudyObserver quiet;
  StudyFailures failures;
  // Every policy's record, in the plan's order (the same for every study here).
  const auto records = [&](const std::string& name, double dropout, int threads) {
    set_num_threads(threads);
    d.run.dropout = dropout;
    TempDir dir("study-runner-dropout-" + name);
    const StudyRunner runner(d, dir.path, corpus(), make_test_model);
    runner.run(runner.pending(), 1, quiet, failures);
    REQUIRE(failures.list().empty());
    std::vector<RunRecord> all;
    for (const RunSpec& spec : runner.plan()) all.push_back(load_record(runner.paths().record(spec)).value());
    return all;
  };
  const auto two = records("two", 0.3, 2), again = records("again", 0.3, 2);
  const auto one = records("one", 0.3, 1), none = records("none", 0.0, 2);
  REQUIRE(two.size() == policy_names().size());
  for (std::size_t i = 0; i < two.size(); ++i) {
    INFO(two[i].config.posenc);
    check_same_numbers(again[i], two[i]);
    CHECK(one[i].final_train_loss == Approx(two[i].final_train_loss).epsilon(1e-8));
    CHECK(one[i].final_val_loss == Approx(two[i].final_val_loss).epsilon(1e-8));
    CHECK(std::abs(none[i].final_val_loss - two[i].final_val_loss) > 1e-4);
  }
}

namespace {
// Counts the questions whether to stop that a run asks after its last estimate (its full passes
// and its evaluation after training), or says yes from the `stop_at`-th of them on.
class StopInEvaluation final : public StudyObserver {
 public:
  StopInEvaluation(std::int64_t last_step, std::size_t stop_at) : last_step_(last_step), stop_at_(stop_at) {}
  void eval(std::size_t, const EvalRecord& r) override { evaluating_ = r.step >= last_step_; }
  bool stop_requested() override {
    if (!evaluating_) return false;
    ++asked;
    return stop_at_ != 0 && asked >= stop_at_;
  }
  void finished(std::size_t, RunEnd end, const std::string&, std::int64_t) override {
    evaluating_ = false;
    ends.push_back(end);
  }
  std::size_t asked = 0;
  std::vector<RunEnd> ends;

 private:
  std::int64_t last_step_;
  std::size_t stop_at_;  // 0: never, only count
  bool evaluating_ = false;
};
}  // namespace

TEST_CASE("a stop in the evaluation after training keeps the run and each entry it finished, and records() adds "
          "the rest") {
  ThreadCounts restore;
  set_num_threads(1);
  StudyDesign d = tiny_design();
  d.variants = {"rope"};
  d.seeds = {1};
  d.extended_steps = 0;
  d.extended_seeds.clear();
  d.extrapolate = {16, 32};
  d.per_position_bins = 2;
  d.copy_probe = {4};
  d.copy_segments = 16;  // two batches of 8
  StudyFailures failures;
  TempDir whole("study-runner-evaluated"), dir("study-runner-stopped-in-evaluation");
  const StudyRunner reference(d, whole.path, corpus(), make_test_model);
  StopInEvaluation counting(d.steps, 0);
  reference.run(reference.pending(), 1, counting, failures);
  REQUIRE(failures.list().empty());
  const RunSpec& spec = reference.plan()[0];
  const RunRecord uninterrupted = *load_record(reference.paths().record(spec));
  REQUIRE(uninterrupted.copy_probe.size() == 1);

  // Stopped at the last question, in the copy probe's second batch: everything before it is recorded.
  const StudyRunner runner(d, dir.path, corpus(), make_test_model);
  StopInEvaluation stop(d.steps, counting.asked);
  runner.run(runner.pending(), 1, stop, failures);
  CHECK(failures.list().empty());
  CHECK(stop.ends == std::vector<RunEnd>{RunEnd::stopped});
  const std::optional<RunRecord> partial = load_record(runner.paths().record(spec));
  REQUIRE(partial);
  CHECK(runner.pending().empty());  // finished: its training and full passes are done
  check_same_numbers(*partial, uninterrupted);
  CHECK(partial->extrapolation == uninterrupted.extrapolation);
  CHECK(partial->copy_probe.empty());

  const std::vector<RunRecord> completed = runner.records(true, failures);
  CHECK(failures.list().empty());
  REQUIRE(completed.size() == 1);
  CHECK(completed[0].copy_probe == uninterrupted.copy_probe);
  CHECK(load_record(runner.paths().record(spec))->copy_probe == uninterrupted.copy_probe);
}

TEST_CASE("a stop in a run's last estimate or in its evaluation after training resumes exactly for every policy") {
  ThreadCounts restore;
  StudyDesign d = tiny_design();
  d.seeds = {1};
  d.extended_steps = 0;
  StudyObserver quiet;
  StudyFailures failures;
  for (const int threads : {1, 2}) {
    for (const std::string& policy : policy_names()) {
      DYNAMIC_SECTION(policy << " at " << threads << " thread(s)") {
        set_num_threads(threads);
        d.variants = {policy};
        TempDir whole("study-runner-unstopped-evaluation");
        const StudyRunner reference(d, whole.path, corpus(), make_test_model);
        reference.run(reference.pending(), 1, quiet, failures);
        REQUIRE(failures.list().empty());
        const RunSpec& spec = reference.plan()[0];
        for (const bool after_estimates : {false, true}) {
          // false: asked during the estimate of the last step; true: after it (the trainer is
          // done), in the final full passes, before anything is recorded
          INFO("stop asked " << (after_estimates ? "after" : "during") << " the last step's estimate");
          TempDir dir("study-runner-stopped-evaluation");
          StopAt stop(6, after_estimates);
          const StudyRunner runner(d, dir.path, corpus(), make_test_model);
          runner.run(runner.pending(), 1, stop, failures);
          CHECK(failures.list().empty());
          CHECK(stop.ends == std::vector<RunEnd>{RunEnd::stopped});
          CHECK(runner.pending().size() == 1);  // no record: still to do
          runner.run(runner.pending(), 1, quiet, failures);
          REQUIRE(failures.list().empty());
          const auto resumed = load_record(runner.paths().record(spec));
          const auto uninterrupted = load_record(reference.paths().record(spec));
          check_same_numbers(*resumed, *uninterrupted);
          CHECK(resumed->extrapolation == uninterrupted->extrapolation);
        }
      }
    }
  }
}
