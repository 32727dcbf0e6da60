// Tests of study/: the design and its plan, run configurations and records, the summary's rankings and tests.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include <posenc/io/checkpoint.hpp>
#include <posenc/lists.hpp>
#include <posenc/study/grid_summary.hpp>
#include <posenc/study/summary_report.hpp>

using namespace posenc;

namespace {

RunRecord record(const std::string& variant, std::uint64_t seed, std::int64_t steps, double val, double train,
                 const StudyDesign& d = {}, const std::string& data_digest = "test-data") {
  RunRecord r;
  r.config = run_config(d, RunSpec{variant, seed, steps}, data_digest);
  r.curve = {EvalRecord{0, 4.17, 4.17, 0.0, 0.0}, EvalRecord{steps, train + 0.01, val + 0.01, 10.0, 5000.0}};
  r.final_val_loss = val;
  r.final_train_loss = train;
  r.wall_seconds = 10;
  r.tokens_per_second = 5000;
  r.checkpoint = "runs/" + variant + "/model.safetensors";
  return r;
}

}  // namespace

TEST_CASE("the published design plans 12 base runs and 4 extended runs") {
  const std::vector<RunSpec> plan = plan_runs(StudyDesign{});
  REQUIRE(plan.size() == 16);
  CHECK(plan.front().id() == "learned-seed1337-steps2000");
  CHECK(plan[11].id() == "alibi-single-seed42-steps2000");
  CHECK(plan.back().id() == "alibi-single-seed1337-steps4000");
  std::int64_t steps = 0;
  for (const RunSpec& r : plan) steps += r.steps;
  CHECK(steps == 40'000);  // the issue's "40,000 training steps"
}

TEST_CASE("a run's identity is its whole configuration but the corpus's path") {
  StudyDesign d;
  d.run.data = "data/a.txt";
  const RunSpec run{"learned", 1337, 2000};
  const RunConfig base = run_config(d, run, "fnv1a64:0123456789abcdef:100");
  CHECK(base.posenc == "learned");
  CHECK(base.train.seed == 1337);
  CHECK(base.train.steps == 2000);
  RunConfig moved = base;
  moved.data = "elsewhere/a.txt";  // the same bytes somewhere else
  CHECK(moved.same_run(base));
  for (auto change : std::vector<void (*)(RunConfig&)>{
           [](RunConfig& c) { c.embedding_std = 1.0; }, [](RunConfig& c) { c.precision = Precision::bf16; },
           [](RunConfig& c) { c.train.lr = 3e-4; }, [](RunConfig& c) { c.train.eval_iters = 7; },
           [](RunConfig& c) { c.heads = 2; }, [](RunConfig& c) { c.data_digest = "fnv1a64:other:100"; },
           [](RunConfig& c) { c.train.schedule.kind = ScheduleKind::cosine; },
           [](RunConfig& c) { c.train.max_grad_norm = 1.0; }, [](RunConfig& c) { c.train.grad_accum = 2; },
           [](RunConfig& c) { c.train.weight_decay_scope = WeightDecayScope::matrices; }}) {
    RunConfig changed = base;
    change(changed);
    CHECK_FALSE(changed.same_run(base));
    CHECK_FALSE(base.differences(changed).empty());  // every difference is named
  }
  CHECK(base.differences(moved).empty());
  RunConfig other = base;
  other.train.lr = 3e-4;
  other.heads = 2;
  other.rope = parse_rope_scaling_spec("ntk:4");  // a key the default's JSON lacks
  CHECK(base.differences(other) == "heads: " + nlohmann::json(base.heads).dump() + " → 2; lr: " +
                                       nlohmann::json(base.train.lr).dump() + " → 0.0003; rope: (none) → " +
                                       to_json(other.rope).dump());
}

TEST_CASE("a run configuration survives its JSON, and JSON written before a key existed reads as its default") {
  StudyDesign d;
  d.run.embedding_std = 1.0;
  d.run.precision = Precision::bf16;
  d.run.data = "corpus.txt";
  // every training setting away from its default
  TrainConfig& t = d.run.train;
  t.schedule = {.kind = ScheduleKind::wsd, .warmup_steps = 30, .min_lr_fraction = 0.05, .decay_fraction = 0.3};
  t.weight_decay_scope = WeightDecayScope::matrices;
  t.beta1 = 0.8;
  t.beta2 = 0.95;
  t.eps = 1e-6;
  t.max_grad_norm = 1.5;
  t.grad_accum = 3;
  const RunConfig c = run_config(d, RunSpec{"kerple", 7, 300}, "fnv1a64:0123456789abcdef:100");
  CHECK(run_config_from_json(nlohmann::json::parse(to_json(c).dump()), "test") == c);
  CHECK(train_config_from_json(to_json(c.train)) == c.train);
  RunConfig unclipped = c;
  unclipped.train.max_grad_norm.reset();
  CHECK(run_config_from_json(nlohmann::json::parse(to_json(unclipped).dump()), "test") == unclipped);
  // randomized positions: written when set, read back; absent (as before they existed) means none
  RunConfig randomized = c;
  randomized.random_positions = 264;
  CHECK(to_json(randomized).at("random_positions") == 264);
  CHECK_FALSE(to_json(c).contains("random_positions"));
  CHECK(run_config_from_json(nlohmann::json::parse(to_json(randomized).dump()), "test") == randomized);
  CHECK(randomized.model_config(10).position_range == 264);
  // a task's curriculum: written when set, read back; absent (as before it existed) means none
  RunConfig staged = c;
  staged.task = TaskSpec{TaskKind::associative_recall, {2, 8}, {{{2, 2}, 30}, {{2, 4}, 20}}};
  CHECK(to_json(staged).at("task") ==
        nlohmann::json{{"name", "associative-recall"}, {"lengths", "2-8"}, {"curriculum", "2-2:30,2-4:20"}});
  CHECK(run_config_from_json(nlohmann::json::parse(to_json(staged).dump()), "test") == staged);
  RunConfig unstaged = staged;
  unstaged.task->curriculum.clear();
  CHECK_FALSE(to_json(unstaged).at("task").contains("curriculum"));
  CHECK(run_config_from_json(nlohmann::json::parse(to_json(unstaged).dump()), "test") == unstaged);
  nlohmann::json too_long = to_json(staged);
  too_long["task"]["curriculum"] = "2-9:5";
  CHECK_THROWS_WITH(run_config_from_json(too_long, "'x.json'"),
                    Catch::Contains("'x.json' is not a run configuration") &&
                        Catch::Contains("stage lengths 2-9 exceed the task lengths 2-8"));

  // A study record of 2026-11: no embedding_std, precision or data_digest; the digest under "data".
  const nlohmann::json legacy = nlohmann::json::parse(R"({"batch": 32, "context": 128,
      "data": "fnv1a64:8c00862c831d9e7a:1115394", "dim": 192, "eval_every": 250, "eval_iters": 200, "heads": 4,
      "layers": 3, "lr": 0.001, "posenc": "rope", "seed": 42, "steps": 2000, "weight_decay": 0.01})");
  const RunConfig old = run_config_from_json(legacy, "legacy record");
  CHECK(old.data_digest == "fnv1a64:8c00862c831d9e7a:1115394");
  CHECK(old.data.empty());
  CHECK(old.embedding_std == init_std);
  CHECK(old.precision == Precision::fp32);
  CHECK(old.train.schedule == LearningRateSchedule{});
  CHECK(old.train.grad_accum == 1);
  CHECK_FALSE(old.train.max_grad_norm.has_value());
  StudyDesign published;
  published.run.data = "data/tinyshakespeare/input.txt";
  CHECK(old.same_run(run_config(published, RunSpec{"rope", 42, 2000}, "fnv1a64:8c00862c831d9e7a:1115394")));

  nlohmann::json broken = legacy;
  broken.erase("heads");
  CHECK_THROWS_WITH(run_config_from_json(broken, "'x.json'"),
                    Catch::Contains("'x.json' is not a run configuration") && Catch::Contains("heads"));
  broken = legacy;
  broken["precision"] = "fp8";
  CHECK_THROWS_WITH(run_config_from_json(broken, "'x.json'"), Catch::Contains("fp8"));
}

TEST_CASE("corpus_digest tells corpora apart by content and size") {
  CHECK(corpus_digest("abc") == corpus_digest(std::string("abc")));
  CHECK(corpus_digest("abc") != corpus_digest("abd"));
  CHECK(corpus_digest("abc").ends_with(":3"));
  CHECK(corpus_digest("abc").starts_with("fnv1a64:"));
}

TEST_CASE("a run record survives its JSON") {
  const RunRecord r = record("rope", 2024, 2000, 1.59, 1.45);
  const RunRecord back = run_record_from_json(nlohmann::json::parse(to_json(r).dump()));
  CHECK(back.config == r.config);
  CHECK(back.final_val_loss == r.final_val_loss);
  CHECK(back.generalization_gap() == Approx(0.14));
  CHECK(back.curve.size() == 2);
  CHECK(back.curve[1].tokens_per_second == 5000.0);
  CHECK(back.bytes_per_target == BytesPerTarget{1, 1});  // characters
  RunRecord bpe = r;
  bpe.bytes_per_target = {2.5, 2.25};
  const nlohmann::json j = to_json(bpe);
  CHECK(j["final_val_bits_per_byte"] == Approx(1.59 / 2.25 / std::log(2.0)));
  CHECK(run_record_from_json(j).bytes_per_target == bpe.bytes_per_target);
  nlohmann::json before = to_json(r);  // a record from before BPE: characters
  before.erase("bytes_per_target");
  CHECK(run_record_from_json(before).final_val_bits_per_byte() == Approx(1.59 / std::log(2.0)));
}

TEST_CASE("the summary: statistics per variant, rankings, pairwise tests and the extended runs") {
  StudyDesign d;
  d.variants = {"rope", "learned"};
  d.seeds = {1, 2, 3};
  d.extended_seeds = {1};
  std::vector<RunRecord> records = {
      record("rope", 1, 2000, 1.50, 1.40),    record("learned", 1, 2000, 1.60, 1.55),
      record("rope", 2, 2000, 1.52, 1.41),    record("learned", 2, 2000, 1.61, 1.57),
      record("rope", 3, 2000, 1.55, 1.43),    record("learned", 3, 2000, 1.54, 1.50),
      record("rope", 1, 4000, 1.48, 1.30),    record("learned", 1, 4000, 1.45, 1.40)};
  const StudySummary s = summarize_study(d, records);
  CHECK(s.missing_runs.empty());
  REQUIRE(s.variants.size() == 2);
  const VariantSummary& rope = s.variants[0];
  CHECK(rope.mean_val == Approx((1.50 + 1.52 + 1.55) / 3));
  CHECK(*rope.sd_val == Approx(*stats::sample_sd({1.50, 1.52, 1.55})));
  CHECK(rope.mean_gap == Approx((0.10 + 0.11 + 0.12) / 3));
  CHECK(rope.ci95_val->low < rope.mean_val);
  // Seeds 1 and 2 rank rope first, seed 3 ranks learned first.
  CHECK(s.ranking_by_seed.at(1) == std::vector<std::string>{"rope", "learned"});
  CHECK(s.ranking_by_seed.at(3) == std::vector<std::string>{"learned", "rope"});
  CHECK(s.ranking_complete);
  CHECK_FALSE(s.ranking_consistent);
  // One pair: the differences by seed are −0.10, −0.09, +0.01.
  REQUIRE(s.pairs.size() == 1);
  const PairComparison& c = s.pairs[0];
  CHECK(*c.mean_difference == Approx(rope.mean_val - s.variants[1].mean_val));
  CHECK(c.shared_seeds == 3);
  CHECK(*c.paired_mean_difference == Approx(*c.mean_difference));
  CHECK(c.paired->t == Approx(stats::paired_t_test({1.50, 1.52, 1.55}, {1.60, 1.61, 1.54})->t));
  CHECK(c.welch->p == Approx(stats::welch_t_test({1.50, 1.52, 1.55}, {1.60, 1.61, 1.54})->p));
  CHECK(*c.paired_p_holm == Approx(c.paired->p));  // a family of one: Holm changes nothing
  CHECK(c.note.find("n = 3") != std::string::npos);
  // Extended: rope led at 2000 steps (seed 1), learned leads at 4000.
  REQUIRE(s.extended.size() == 1);
  CHECK(s.extended[0].complete);
  CHECK(s.extended[0].ranking_at_steps == std::vector<std::string>{"rope", "learned"});
  CHECK(s.extended[0].ranking_at_extended == std::vector<std::string>{"learned", "rope"});
  CHECK(s.extended[0].ranking_changed);

  const std::string md = summary_markdown(s);
  CHECK(md.find("| rope | 3 | 1.5233 ± 0.0252") != std::string::npos);
  CHECK(md.find("1.5894 ± 0.0051") != std::string::npos);  // the published RoPE result beside it
  CHECK(md.find("**not** the same in every seed") != std::string::npos);
  CHECK(md.find("**the ranking changed**") != std::string::npos);
  const std::string csv = summary_csv(s);
  CHECK(csv.find("variant,n,mean_val_loss") == 0);
  CHECK(csv.find("\nrope,3,") != std::string::npos);
  const nlohmann::json j = summary_json(s);
  CHECK(j["variants"][0]["published"]["mean_val_loss"] == 1.5894);
  CHECK(j["ranking_consistent"] == false);
}

TEST_CASE("missing runs are named and left out of the numbers") {
  StudyDesign d;
  d.variants = {"rope", "alibi"};
  d.seeds = {1, 2};
  d.extended_steps = 0;
  const StudySummary s = summarize_study(d, {record("rope", 1, 2000, 1.5, 1.4), record("rope", 2, 2000, 1.6, 1.5),
                                             record("alibi", 1, 2000, 1.55, 1.45)});
  CHECK(s.missing_runs == std::vector<std::string>{"alibi-seed2-steps2000"});
  // Seed 1 ranks both, seed 2 only rope: the rankings cannot be compared, so they are not called consistent.
  CHECK_FALSE(s.ranking_complete);
  CHECK_FALSE(s.ranking_consistent);
  CHECK(summary_markdown(s).find("cannot be compared yet") != std::string::npos);
  // Only seed 1 finished, for both variants: one seed's ranking is not "the same in every seed".
  const StudySummary one_seed =
      summarize_study(d, {record("rope", 1, 2000, 1.5, 1.4), record("alibi", 1, 2000, 1.55, 1.45)});
  CHECK(one_seed.ranking_by_seed.size() == 1);
  CHECK_FALSE(one_seed.ranking_complete);
  CHECK_FALSE(one_seed.ranking_consistent);
  CHECK(s.variants[1].val.size() == 1);
  CHECK_FALSE(s.variants[1].sd_val.has_value());
  CHECK_FALSE(s.pairs[0].welch.has_value());
  CHECK(s.pairs[0].note.find("fewer than two seeds") != std::string::npos);
  CHECK(summary_markdown(s).find("**Missing runs**") != std::string::npos);
}

TEST_CASE("a pair with unequal seeds says which seeds its tests rest on, and an empty variant has no numbers") {
  StudyDesign d;
  d.variants = {"rope", "alibi", "learned"};
  d.seeds = {1, 2, 3};
  d.extended_steps = 0;
  // rope finished every seed, alibi seeds 1 and 2, learned none
  const StudySummary s = summarize_study(d, {record("rope", 1, 2000, 1.50, 1.4), record("rope", 2, 2000, 1.60, 1.5),
                                             record("rope", 3, 2000, 1.40, 1.3), record("alibi", 1, 2000, 1.53, 1.4),
                                             record("alibi", 2, 2000, 1.61, 1.5)});
  REQUIRE(s.pairs.size() == 3);
  const PairComparison& rope_alibi = s.pairs[0];
  CHECK(rope_alibi.n_a == 3);
  CHECK(rope_alibi.n_b == 2);
  CHECK(rope_alibi.shared_seeds == 2);
  CHECK(*rope_alibi.mean_difference == Approx(1.50 - 1.57));             // over each one's seeds
  CHECK(*rope_alibi.paired_mean_difference == Approx((-0.03 - 0.01) / 2));  // over seeds 1 and 2
  CHECK(rope_alibi.paired->df == 1);
  CHECK(rope_alibi.note.find("n = 3 and 2 seeds (2 shared)") != std::string::npos);
  for (const PairComparison& empty : {s.pairs[1], s.pairs[2]}) {
    CHECK_FALSE(empty.mean_difference.has_value());
    CHECK_FALSE(empty.welch.has_value());
  }
  const std::string md = summary_markdown(s);
  CHECK(md.find("| rope | alibi | -0.0700 (shared seeds: -0.0200) |") != std::string::npos);
  CHECK(md.find("| rope | learned | — |") != std::string::npos);
  CHECK(md.find("Holm-adjusted over the tests there are (1 Welch, 1 paired, of 3 pairs)") != std::string::npos);
  const nlohmann::json j = summary_json(s);
  CHECK(j["pairs"][0]["shared_seeds"] == 2);
  CHECK(j["pairs"][1]["mean_difference"].is_null());
  CHECK(j["variants"][2]["n"] == 0);
  CHECK(j["variants"][2]["mean_val_loss"].is_null());
  CHECK(j["variants"][2]["mean_tokens_per_second"].is_null());

  // Differences that are equal in every seed have no t statistic; the note says why.
  d.variants = {"rope", "alibi"};
  d.seeds = {1, 2};
  const StudySummary equal =
      summarize_study(d, {record("rope", 1, 2000, 1.5, 1.4), record("rope", 2, 2000, 1.75, 1.5),
                          record("alibi", 1, 2000, 1.25, 1.4), record("alibi", 2, 2000, 1.5, 1.5)});
  CHECK_FALSE(equal.pairs[0].paired.has_value());
  CHECK(equal.pairs[0].note.find("the differences by seed are all equal") != std::string::npos);
  CHECK(equal.pairs[0].note.find("n = 2 seeds per variant") != std::string::npos);
}

TEST_CASE("the published numbers are like-for-like only beside the published design on Tiny Shakespeare") {
  const auto summary_of = [](const StudyDesign& d, const std::string& digest) {
    std::vector<RunRecord> records;
    for (const std::string& v : d.variants)
      for (std::uint64_t seed : d.seeds) records.push_back(record(v, seed, d.steps, 1.6, 1.5, d, digest));
    return summarize_study(d, records);
  };
  const std::string warning = "This design differs from the published one";
  StudyDesign published;
  published.extended_steps = 0;
  const StudySummary on_shakespeare = summary_of(published, std::string(tiny_shakespeare_digest));
  CHECK(on_shakespeare.published_design);
  CHECK(summary_json(on_shakespeare)["published_design"] == true);
  CHECK(summary_markdown(on_shakespeare).find(warning) == std::string::npos);
  CHECK(summary_of(published, "").published_design);  // a record written before digests: not known to differ

  const StudySummary other_text = summary_of(published, "fnv1a64:0123456789abcdef:100");
  CHECK_FALSE(other_text.published_design);
  CHECK(summary_markdown(other_text).find(warning) != std::string::npos);
  for (auto change : std::vector<void (*)(StudyDesign&)>{
           [](StudyDesign& d) { d.run.train.lr = 3e-3; }, [](StudyDesign& d) { d.run.train.weight_decay = 0.1; },
           [](StudyDesign& d) { d.run.embedding_std = 1.0; }, [](StudyDesign& d) { d.run.precision = Precision::bf16; },
           [](StudyDesign& d) { d.run.dropout = 0.1; }, [](StudyDesign& d) { d.run.train.batch = 64; },
           [](StudyDesign& d) { d.steps = 1000; }, [](StudyDesign& d) { d.run.init = InitScheme::pytorch; },
           [](StudyDesign& d) { d.run.train.schedule.kind = ScheduleKind::cosine; },
           [](StudyDesign& d) { d.run.tokenizer = {TokenizerKind::byte}; }}) {
    StudyDesign changed = published;
    change(changed);
    CHECK_FALSE(is_published_design(changed));
    CHECK_FALSE(summary_of(changed, std::string(tiny_shakespeare_digest)).published_design);
  }
}

TEST_CASE("the summary of the evaluations after training: RoPE scalings and the copy probe paired by seed, the loss "
          "by position averaged") {
  StudyDesign d;
  d.variants = {"rope", "learned"};
  d.extended_steps = 0;
  d.extended_seeds.clear();
  d.extrapolate = {512};
  d.per_position_bins = 2;
  d.copy_probe = {64};
  const RopeScaling yarn = parse_rope_scaling_spec("yarn:4");
  d.extrapolate_rope = {yarn};
  const nlohmann::json yarn_key = to_json(yarn);
  const std::vector<double> trained = {2.5, 2.7, 2.6}, scaled = {2.0, 2.1, 2.3};
  const std::vector<double> control = {2.0, 2.2, 2.1}, second = {1.0, 1.5, 1.3};
  std::vector<RunRecord> records;
  for (std::size_t i = 0; i < d.seeds.size(); ++i) {
    RunRecord rope = record("rope", d.seeds[i], 2000, 1.6, 1.5);
    const auto bins = [&](double shift) {
      return nlohmann::json{{"windows", 20},
                            {"bins",
                             {{{"first", 0}, {"last", 255}, {"loss", 1.5 + shift}},
                              {{"first", 256}, {"last", 511}, {"loss", 2.5 + shift}}}}};
    };
    rope.extrapolation = {{{"length", 512},
                           {"stride", 256},
                           {"non_overlapping", trained[i]},
                           {"sliding", 2.0},
                           {"per_position", bins(0.1 * i)}},
                          {{"length", 512},
                           {"stride", 256},
                           {"non_overlapping", scaled[i]},
                           {"sliding", 1.9},
                           {"per_position", bins(0)},
                           {"rope_scaling", yarn_key}}};
    rope.copy_probe = {
        {{"distance", 64}, {"segments", 64}, {"control_loss", control[i]}, {"second_copy_loss", second[i]}},
        {{"distance", 64},
         {"segments", 64},
         {"control_loss", 2.0},
         {"second_copy_loss", 2.0},
         {"rope_scaling", yarn_key}}};
    records.push_back(rope);
    RunRecord learned = record("learned", d.seeds[i], 2000, 1.65, 1.5);
    learned.extrapolation = {{{"length", 512},
                              {"stride", 256},
                              {"non_overlapping", nullptr},
                              {"sliding", nullptr},
                              {"note", "not applicable: the learned table has 128 rows"}}};
    learned.copy_probe = {{{"distance", 64}, {"segments", 64}, {"note", "not applicable: needs 128 positions"}}};
    records.push_back(learned);
  }
  const StudySummary s = summarize_study(d, records);

  // yarn − trained angles by seed: −0.5, −0.6, −0.3; the paired t with 2 degrees of freedom, whose
  // two-sided p is 1 − |t|/√(t² + 2)
  REQUIRE(s.scaling_comparisons.size() == 1);
  const ScalingComparison& c = s.scaling_comparisons[0];
  CHECK(c.variant == "rope");
  CHECK(c.scaling == "yarn ×4");
  CHECK(c.n == 3);
  CHECK(c.mean_difference == Approx(-1.4 / 3));
  const auto paired_t = [](const std::vector<double>& diff) {
    const double m = (diff[0] + diff[1] + diff[2]) / 3;
    double ss = 0;
    for (double x : diff) ss += (x - m) * (x - m);
    return m / (std::sqrt(ss / 2) / std::sqrt(3.0));
  };
  const double t_scaling = paired_t({-0.5, -0.6, -0.3});
  REQUIRE(c.paired);
  CHECK(c.paired->t == Approx(t_scaling));
  CHECK(c.paired->p == Approx(1 - std::abs(t_scaling) / std::sqrt(t_scaling * t_scaling + 2)));

  // the copy probe: drops 1.0, 0.7, 0.8 (control − second copy); learned cannot take 128 positions
  REQUIRE(s.copy_probe.size() == 3);  // rope, rope · yarn, learned
  const CopyProbeCell& probe = s.copy_probe[0];
  CHECK(probe.scaling == "none");
  CHECK(*probe.mean_drop == Approx(2.5 / 3));
  CHECK(*probe.sd_drop == Approx(std::sqrt((std::pow(1.0 - 2.5 / 3, 2) + std::pow(0.7 - 2.5 / 3, 2) +
                                            std::pow(0.8 - 2.5 / 3, 2)) / 2)));
  const double t_copy = paired_t({1.0, 0.7, 0.8});
  CHECK(probe.paired->t == Approx(t_copy));
  CHECK(s.copy_probe[1].scaling == "yarn ×4");
  CHECK(*s.copy_probe[1].mean_drop == 0.0);
  CHECK(s.copy_probe[2].variant == "learned");
  CHECK_FALSE(s.copy_probe[2].mean_drop);
  CHECK(s.copy_probe[2].note == "not applicable: needs 128 positions");
  // Holm over the copy-probe family: rope · yarn has no test (no spread), so rope's p is alone
  CHECK(*probe.p_holm == Approx(probe.paired->p));

  // the loss by position, averaged per range over seeds
  REQUIRE(s.position_curves.size() == 2);  // rope and rope · yarn; learned has no entry at 512
  CHECK(s.position_curves[0].first == std::vector<std::size_t>{0, 256});
  CHECK(s.position_curves[0].last == std::vector<std::size_t>{255, 511});
  CHECK(s.position_curves[0].mean[1] == Approx(2.6));
  CHECK(*s.position_curves[0].sd[1] == Approx(0.1));

  const std::string md = summary_markdown(s);
  CHECK(md.find("## RoPE scaling against the trained model") != std::string::npos);
  CHECK(md.find("| rope · yarn ×4 | -0.4667 (p ") != std::string::npos);
  CHECK(md.find("## Loss by position in a window of 512") != std::string::npos);
  CHECK(md.find("| learned | n/a |") != std::string::npos);
  const nlohmann::json j = summary_json(s);
  CHECK(j["copy_probe"][0]["mean_drop"].get<double>() == Approx(2.5 / 3));
  CHECK(j["design"]["extrapolate_rope"] == nlohmann::json{"yarn ×4"});
  // Holm's family is the comparisons and cells with a test, and the text counts those
  CHECK(md.find("Holm-adjusted over the 1 comparison with a test (of 1)") != std::string::npos);
  CHECK(md.find("Holm-adjusted over the 1 cell with a test (of 3)") != std::string::npos);
  CHECK(md.find("[2 seeds]") == std::string::npos);

  // a cell over fewer seeds than the design's says so: the last seed lacks its yarn evaluation
  records[records.size() - 2].extrapolation.erase(1);
  const std::string fewer = summary_markdown(summarize_study(d, records));
  CHECK(fewer.find("| rope · yarn ×4 | 2.0500 ± 0.0707 [2 seeds] |") != std::string::npos);
  CHECK(fewer.find("| rope · yarn ×4 | -0.5500 [2 seeds] (p ") != std::string::npos);
  CHECK(fewer.find("| rope | 2.6000 ± 0.1000 |") != std::string::npos);
}

TEST_CASE("a design with fine-tunes plans one per base run (and RoPE scaling), each at its own context and batch") {
  StudyDesign d;
  d.variants = {"alibi", "rope"};
  d.seeds = {1, 2};
  d.extended_steps = 0;
  d.extended_seeds.clear();
  d.fine_tune_context = 512;
  d.fine_tune_rope = {parse_rope_scaling_spec("yarn:4")};
  validate_design(d);
  const std::vector<RunSpec> plan = plan_runs(d);
  REQUIRE(plan.size() == 4 + 2 * 1 + 2 * 2);  // base runs, then alibi's one fine-tune and rope's two per seed
  CHECK(plan[4].id() == "alibi-seed1-steps2000-ft512x200");
  CHECK(plan[5].id() == "rope-seed1-steps2000-ft512x200");
  CHECK(plan[6].id() == "rope-seed1-steps2000-ft512x200-yarn4");
  CHECK(plan[6].base().id() == "rope-seed1-steps2000");
  CHECK(plan.back().id() == "rope-seed2-steps2000-ft512x200-yarn4");

  const RunConfig tuned = run_config(d, plan[6], "digest", "runs/rope-seed1/model.safetensors");
  CHECK(tuned.train.context == 512);
  CHECK(tuned.train.batch == 8);  // the base runs' 32 × 128 tokens a step
  CHECK(tuned.train.steps == 200);
  CHECK(tuned.train.eval_every == 200);
  CHECK(tuned.train.seed == 1);
  CHECK(tuned.init_from == InitFrom{"runs/rope-seed1/model.safetensors", 2000, 128});
  CHECK(tuned.rope.method == RopeScalingMethod::yarn);
  CHECK(tuned.rope.factor == 4);
  CHECK(tuned.rope.original_context == 128);  // the factor stretches the base run's context, not 512
  CHECK_FALSE(run_config(d, plan[5], "digest", "x").rope.changes_anything());
  d.fine_tune_batch = 3;
  CHECK(run_config(d, plan[5], "digest", "x").train.batch == 3);

  // the rows of the evaluations: rope's base model, its fine-tune and its fine-tune under yarn
  const std::vector<EvaluatedModel> rows = evaluated_models(d, "rope");
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].is_base());
  CHECK(rows[2].fine_tune_label() == "ft 512×200");
  CHECK(rows[2].scaling_label() == "yarn ×4");
  CHECK_FALSE(rows[2].scaling.scales());  // a fine-tuned model is evaluated with its own angles
  CHECK(evaluated_models(d, "alibi").size() == 2);

  // a fine-tune's scaling keeps every setting of its spec, and its name carries those changed
  d.fine_tune_rope = {parse_rope_scaling_spec("yarn:4:beta_fast=16")};
  const RunSpec ramp = plan_runs(d)[6];  // a copy: the plan is a temporary
  CHECK(ramp.id() == "rope-seed1-steps2000-ft512x200-yarn4-beta_fast16");
  CHECK(run_config(d, ramp, "digest", "x").rope.beta_fast == 16);
  // ... over the base runs' own settings: a fine-tune of a model trained at base 500 turns at base 500
  d.run.rope.base = 500.0;
  CHECK(run_config(d, ramp, "digest", "x").rope ==
        RopeScaling{.method = RopeScalingMethod::yarn, .factor = 4, .base = 500.0, .original_context = 128,
                    .beta_fast = 16});
  // a new base alone (Llama 2 Long's way to a longer context): fine-tuned at that base, no scaling
  d.run.rope = {};
  d.fine_tune_rope = {parse_rope_scaling_spec("base=500000")};
  validate_design(d);
  const RunSpec rebased = plan_runs(d)[6];
  CHECK(rebased.id() == "rope-seed1-steps2000-ft512x200-base500000");
  CHECK(run_config(d, rebased, "digest", "x").rope == RopeScaling{.base = 500000.0});
  CHECK(evaluated_models(d, "rope")[2].scaling_label() == "base=500000");
  // every digit of a large base in the name: bases that differ make different runs
  d.fine_tune_rope = {parse_rope_scaling_spec("base=1000000"), parse_rope_scaling_spec("base=12345678"),
                      parse_rope_scaling_spec("base=12345679")};
  CHECK(plan_runs(d)[6].id() == "rope-seed1-steps2000-ft512x200-base1000000");
  CHECK(plan_runs(d)[7].id() == "rope-seed1-steps2000-ft512x200-base12345678");
  CHECK(plan_runs(d)[8].id() == "rope-seed1-steps2000-ft512x200-base12345679");
  CHECK(d.fine_tune_rope[2].label() == "base=12345679");
}

TEST_CASE("the summary compares each fine-tuned model with its base run's, paired by seed") {
  StudyDesign d;
  d.variants = {"rope"};
  d.extended_steps = 0;
  d.extended_seeds.clear();
  d.extrapolate = {512};
  d.fine_tune_context = 512;
  d.fine_tune_rope = {parse_rope_scaling_spec("linear:4")};
  const std::vector<double> base = {2.5, 2.7, 2.6}, plain = {1.6, 1.7, 1.5}, linear = {1.55, 1.6, 1.5};
  const auto entry = [](double loss) {
    return nlohmann::json::array({{{"length", 512}, {"stride", 256}, {"non_overlapping", loss}, {"sliding", loss}}});
  };
  std::vector<RunRecord> records;
  for (std::size_t i = 0; i < d.seeds.size(); ++i) {
    RunRecord r = record("rope", d.seeds[i], 2000, 1.6, 1.5);
    r.extrapolation = entry(base[i]);
    records.push_back(r);
    for (const FineTune& tune : fine_tunes(d, "rope")) {
      RunRecord t = r;
      t.config = run_config(d, {"rope", d.seeds[i], 2000, {}, tune}, "test-data", r.checkpoint);
      t.extrapolation = entry(tune.rope.scales() ? linear[i] : plain[i]);
      records.push_back(t);
    }
  }
  const StudySummary s = summarize_study(d, records);
  CHECK(s.missing_runs.empty());
  REQUIRE(s.variants.size() == 1);
  CHECK(s.variants[0].val.size() == 3);  // the fine-tunes are not base runs
  REQUIRE(s.extrapolation.size() == 6);  // 3 models × 2 protocols
  CHECK(s.extrapolation[2].fine_tune == "ft 512×200");
  CHECK(s.extrapolation[2].scaling == "none");
  CHECK(*s.extrapolation[2].mean == Approx(1.6));
  CHECK(s.extrapolation[4].scaling == "linear ×4");
  CHECK(*s.extrapolation[4].mean == Approx(1.55));
  REQUIRE(s.scaling_comparisons.size() == 2);
  CHECK(s.scaling_comparisons[0].fine_tune == "ft 512×200");
  CHECK(s.scaling_comparisons[0].n == 3);
  CHECK(s.scaling_comparisons[0].mean_difference == Approx((4.8 - 7.8) / 3));
  CHECK(s.scaling_comparisons[1].mean_difference == Approx((4.65 - 7.8) / 3));
  REQUIRE(s.scaling_comparisons[1].paired);
  const std::string md = summary_markdown(s);
  CHECK(md.find("## RoPE scaling and fine-tuning against the trained model") != std::string::npos);
  CHECK(md.find("| rope · ft 512×200 · linear ×4 | -1.0500 (p ") != std::string::npos);
  CHECK(md.find("fine-tuned at context C for N steps (batch 8") != std::string::npos);
  const nlohmann::json j = summary_json(s);
  CHECK(j["design"]["fine_tune"]["rope"] == nlohmann::json{"linear ×4"});
  CHECK(j["extrapolation"][4]["fine_tune"] == "ft 512×200");

  // a missing fine-tune is named, and a record is not taken for another kind of run
  records.pop_back();
  const StudySummary partial = summarize_study(d, records);
  CHECK(partial.missing_runs == std::vector<std::string>{"rope-seed42-steps2000-ft512x200-linear4"});
  CHECK(is_record_of(records[1], d, {"rope", 1337, 2000, {}, FineTune{512, 200}}));
  CHECK_FALSE(is_record_of(records[1], d, {"rope", 1337, 2000}));
  CHECK_FALSE(is_record_of(records[0], d, {"rope", 1337, 2000, {}, FineTune{512, 200}}));
  CHECK_FALSE(is_record_of(records[2], d, {"rope", 1337, 2000, {}, FineTune{512, 200}}));
}

TEST_CASE("a task summary: accuracy by band of lengths per seed, band means and paired tests by hand, Holm per band") {
  StudyDesign d;
  d.variants = {"rope", "alibi", "nope"};
  d.seeds = {1, 2, 3};
  d.extended_steps = 0;
  d.extended_seeds.clear();
  d.run.task = TaskSpec{TaskKind::copy, {1, 2}};
  d.task_lengths = {1, 2, 3, 4, 6};  // bands: ≤ 2 (trained), 3–4, 5–8
  d.task_examples = 10;
  // accuracy[variant][seed] at lengths 1, 2, 3, 4, 6
  const std::vector<std::vector<std::vector<double>>> accuracy = {
      {{1, 1, 0.5, 0.3, 0.1}, {1, 0.9, 0.6, 0.2, 0}, {1, 1, 0.4, 0.2, 0.2}},  // rope
      {{1, 1, 0.8, 0.8, 0.6}, {1, 1, 0.9, 0.7, 0.5}, {1, 1, 1.0, 0.9, 0.4}},  // alibi
      {{1, 1, 0, 0, 0}, {1, 1, 0, 0, 0}, {1, 1, 0, 0, 0}}};                // nope
  std::vector<RunRecord> records;
  for (std::size_t s = 0; s < d.seeds.size(); ++s)
    for (std::size_t v = 0; v < d.variants.size(); ++v) {
      RunRecord r = record(d.variants[v], d.seeds[s], d.steps, 0.1, 0.1, d);
      for (std::size_t i = 0; i < d.task_lengths.size(); ++i)
        r.task.push_back({{"length", d.task_lengths[i]}, {"examples", 10}, {"seed", d.task_seed},
                          {"accuracy", accuracy[v][s][i]}});
      if (v == 2 && s == 2) r.task[4]["examples"] = 20;  // made with another design: left out
      records.push_back(r);
    }
  const StudySummary summary = summarize_study(d, records);
  REQUIRE(summary.task);
  const TaskSummary& t = *summary.task;
  REQUIRE(t.bands.size() == 3);
  CHECK(t.bands[0].label() == "≤ 2 (trained)");
  CHECK(t.bands[2].label() == "5–8");
  CHECK(t.bands[2].lengths == std::vector<std::size_t>{6});
  REQUIRE(t.band_cells.size() == 9);
  const TaskBandCell& rope_mid = t.band_cells[1];
  REQUIRE(rope_mid.accuracy.size() == 3);
  CHECK(rope_mid.accuracy[0] == Approx(0.4));
  CHECK(rope_mid.accuracy[1] == Approx(0.4));
  CHECK(rope_mid.accuracy[2] == Approx(0.3));
  CHECK(*rope_mid.mean == Approx(1.1 / 3));
  const TaskBandCell& nope_far = t.band_cells[8];
  CHECK(nope_far.seeds == std::vector<std::uint64_t>{1, 2});  // seed 3's entry is another design's
  const TaskLengthCell& nope_6 = t.lengths[2 * 5 + 4];
  CHECK(nope_6.length == 6);
  CHECK(nope_6.accuracy.size() == 2);
  // rope − alibi in the band 3–4, by seed: 0.4 − 0.8, 0.4 − 0.8, 0.3 − 0.95: mean −1.45/3, variance 1/48
  const TaskPairComparison& rope_alibi = t.pairs[3 * 1 + 0];
  CHECK(rope_alibi.a == "rope");
  CHECK(rope_alibi.b == "alibi");
  CHECK(*rope_alibi.mean_difference == Approx(-1.45 / 3));
  REQUIRE(rope_alibi.paired);
  CHECK(rope_alibi.paired->t == Approx(-1.45 / 3 / std::sqrt(1.0 / 48 / 3)));
  CHECK(rope_alibi.paired->df == 2);
  // the trained band: nope − alibi is 0 in every seed (no test); Holm runs over that band's other tests
  const TaskPairComparison& alibi_nope = t.pairs[2];
  CHECK(alibi_nope.a == "alibi");
  CHECK(alibi_nope.note == "the same difference in every seed: no t-test");
  CHECK_FALSE(alibi_nope.p_holm);
  const std::vector<std::optional<double>> band_p = {t.pairs[3].paired->p, t.pairs[4].paired->p,
                                                     t.pairs[5].paired ? std::optional(t.pairs[5].paired->p)
                                                                       : std::nullopt};
  const auto adjusted = stats::holm(band_p);
  for (std::size_t k = 0; k < 3; ++k) CHECK(t.pairs[3 + k].p_holm == adjusted[k]);
  const std::string md = summary_markdown(summary);
  CHECK(md.find("| rope | 0.983 ± 0.029 [0.91, 1.00] | 0.367 ± 0.058 [0.22, 0.51] |") != std::string::npos);
  CHECK(md.find("not shown beside a task's") != std::string::npos);
  CHECK(summary_json(summary)["task"]["band_cells"].size() == 9);
}

TEST_CASE("Holm's adjustment by hand") {
  // p = (0.01, 0.04, 0.03) over 3 tests: sorted 0.01·3 = 0.03, 0.03·2 = 0.06, 0.04·1 → max(0.06, 0.04) = 0.06.
  const auto adjusted = stats::holm({0.01, 0.04, 0.03, std::nullopt});
  CHECK(*adjusted[0] == Approx(0.03));
  CHECK(*adjusted[2] == Approx(0.06));
  CHECK(*adjusted[1] == Approx(0.06));
  CHECK_FALSE(adjusted[3].has_value());
}

TEST_CASE("the summary names every training setting that differs from the published study's") {
  RunConfig run;
  CHECK(describe_training_settings(run).empty());
  run.train.schedule = {.kind = ScheduleKind::cosine, .warmup_steps = 100, .min_lr_fraction = 0.1};
  run.train.max_grad_norm = 1.0;
  run.train.grad_accum = 4;
  run.train.weight_decay_scope = WeightDecayScope::matrices;
  run.init = InitScheme::pytorch;
  run.tie_weights = true;
  CHECK(describe_training_settings(run) ==
        ", cosine learning rate after 100 warm-up steps down to 0.1 × lr, gradients clipped to norm 1, 4 micro-batches "
        "per step, weight decay on matrices only, PyTorch's default initialisation, lm_head tied to the token "
        "embedding");
  StudyDesign d;
  d.run = run;
  const std::string md = summary_markdown(summarize_study(d, {}));
  CHECK(md.find("down to 0.1 × lr") != std::string::npos);
  CHECK(md.find("This design differs from the published one") != std::string::npos);
}

TEST_CASE("split_list gives the items without the spaces around them, and an empty one or an inner space is an error") {
  using V = std::vector<std::string>;
  CHECK(posenc::split_list("rope,alibi", "--variants") == V{"rope", "alibi"});
  CHECK(posenc::split_list(" 128 ,256  ", "--contexts") == V{"128", "256"});
  CHECK(posenc::split_list("1337", "--seeds") == V{"1337"});
  CHECK(posenc::split_list("", "--seeds").empty());
  CHECK_THROWS_WITH(posenc::split_list("rope,,alibi", "--variants"), "--variants: an empty item in 'rope,,alibi'");
  CHECK_THROWS_WITH(posenc::split_list(",rope", "--variants"), "--variants: an empty item in ',rope'");
  CHECK_THROWS_WITH(posenc::split_list("128,", "--contexts"), "--contexts: an empty item in '128,'");
  CHECK_THROWS_WITH(posenc::split_list("128, ", "--contexts"), "--contexts: an empty item in '128, '");
  CHECK_THROWS_WITH(posenc::split_list(" ", "--contexts"), "--contexts: an empty item in ' '");
  CHECK_THROWS_WITH(posenc::split_list("1, 13 37", "--seeds"), "--seeds: '13 37' has a space inside");
}

TEST_CASE("a grid crosses settings, named by config.json's keys, with the variants and seeds") {
  StudyDesign d;
  d.variants = {"rope", "alibi"};
  d.seeds = {1, 2};
  d.extended_steps = 0;
  d.grid = {parse_grid_axis("lr-schedule=constant,cosine"), parse_grid_axis("grad_clip=none,1")};
  CHECK(d.grid[0] == GridAxis{"lr_schedule", {"constant", "cosine"}});
  const std::vector<GridPoint> points = grid_points(d.grid);
  REQUIRE(points.size() == 4);
  CHECK(points[0].label() == "lr_schedule=constant grad_clip=none");
  CHECK(points[3].label() == "lr_schedule=cosine grad_clip=1");
  CHECK(points[3].id_suffix() == "-lr_schedule-cosine-grad_clip-1");
  const std::vector<RunSpec> plan = plan_runs(d);
  CHECK(plan.size() == 16);  // 4 points × 2 seeds × 2 variants
  CHECK(plan[0].id() == "rope-seed1-steps2000-lr_schedule-constant-grad_clip-none");
  // each run's configuration has its point's settings
  const RunConfig c = run_config(d, plan[15], "digest");
  CHECK(c.train.schedule.kind == ScheduleKind::cosine);
  CHECK(c.train.max_grad_norm == 1.0);
  CHECK(c.posenc == "alibi");
  CHECK_FALSE(run_config(d, plan[0], "digest").train.max_grad_norm.has_value());
  CHECK_NOTHROW(validate_design(d));
  // without a grid the runs keep the names they had before grids existed
  StudyDesign plain = d;
  plain.grid.clear();
  CHECK(plan_runs(plain)[0].id() == "rope-seed1-steps2000");

  const auto problem = [&](std::vector<GridAxis> grid, std::int64_t extended_steps = 0) {
    StudyDesign bad = d;
    bad.grid = std::move(grid);
    bad.extended_steps = extended_steps;
    bad.extended_seeds = {1};
    try {
      validate_design(bad);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(problem({parse_grid_axis("seed=1,2")}).find("--grid seed: not a setting a grid can cross") == 0);
  CHECK(problem({parse_grid_axis("learning_rate=1,2")}).find("--grid learning_rate: not a setting") == 0);
  CHECK(problem({parse_grid_axis("init=normal,xavier")}) ==
        "--grid init=xavier: the grid point is not a run configuration: unknown initialisation 'xavier' "
        "(known: normal, pytorch)");
  CHECK(problem({parse_grid_axis("lr=1e-3,0.001")}) == "--grid lr: '0.001' is given twice");
  CHECK(problem({parse_grid_axis("lr=1e-3"), parse_grid_axis("lr=2e-3")}) == "--grid lr: the setting is given twice");
  CHECK(problem({parse_grid_axis("lr_schedule=constant,cosine")}, 4000)
            .find("--grid lr_schedule=cosine: --extended-steps 4000: an extended run continues") == 0);
  CHECK_THROWS_WITH(parse_grid_axis("lr"), Catch::Contains("is not NAME=V1,V2"));
  CHECK_THROWS_WITH(parse_grid_axis("lr=,"), "--grid lr: an empty item in ','");
  CHECK_THROWS_WITH(parse_grid_axis("lr=1e-3,,2e-3"), "--grid lr: an empty item in '1e-3,,2e-3'");
  CHECK_THROWS_WITH(parse_grid_axis("dropout=0.1,"), "--grid dropout: an empty item in '0.1,'");
  CHECK_THROWS_WITH(parse_grid_axis("lr=1e-3,2 e-3"), "--grid lr: '2 e-3' has a space inside");
  CHECK(parse_grid_axis("lr=1e-3, 2e-3").values.size() == 2);  // spaces around an item are not part of it
}

TEST_CASE("a grid point's init starts the embeddings at its scheme's std, as --init does, unless it sets one") {
  RunConfig study;  // normal, 0.02
  CHECK(with_setting(study, parse_grid_point("init=pytorch")).embedding_std == 1.0);
  CHECK(with_setting(study, parse_grid_point("init=pytorch embedding_std=0.5")).embedding_std == 0.5);
  CHECK(with_setting(study, parse_grid_point("dropout=0.1")).embedding_std == init_std);
  study.init = InitScheme::pytorch;
  study.embedding_std = 1.0;
  CHECK(with_setting(study, parse_grid_point("init=normal")).embedding_std == init_std);
  CHECK(with_setting(study, parse_grid_point("dropout=0.1")).embedding_std == 1.0);
}

TEST_CASE("a grid crosses randomized positions, a setting config.json holds only when set") {
  const RunConfig study;
  CHECK(with_setting(study, parse_grid_point("random_positions=264")).random_positions == 264);
  CHECK(with_setting(study, parse_grid_point("random_positions=0")) == study);
  CHECK_THROWS_WITH(with_setting(study, parse_grid_point("random_positions=-1")),
                    Catch::Contains("random_positions takes a whole number"));
}

TEST_CASE("a grid's summary compares the variants within each setting and each variant across settings") {
  StudyDesign d;
  d.variants = {"rope", "learned"};
  d.seeds = {1, 2, 3};
  d.extended_steps = 0;
  d.grid = {parse_grid_axis("init=normal,pytorch")};
  const auto at = [&](const std::string& variant, std::uint64_t seed, const std::string& init, double val) {
    RunRecord r = record(variant, seed, 2000, val, val - 0.1);
    r.config = run_config(d, RunSpec{variant, seed, 2000, GridPoint{{{"init", init}}}}, "test-data");
    return r;
  };
  std::vector<RunRecord> records;
  const std::vector<double> rope_normal = {1.50, 1.52, 1.55}, rope_pytorch = {1.45, 1.49, 1.50};
  for (std::uint64_t s = 1; s <= 3; ++s) {
    records.push_back(at("rope", s, "normal", rope_normal[s - 1]));
    records.push_back(at("rope", s, "pytorch", rope_pytorch[s - 1]));
    records.push_back(at("learned", s, "normal", 1.6));
  }
  const GridSummary g = summarize_grid(d, records);
  REQUIRE(g.settings.size() == 2);
  CHECK(g.settings[0].second.variants[0].val == rope_normal);
  CHECK(g.settings[1].second.variants[0].val == rope_pytorch);
  // learned never ran with pytorch's initialisation: named as the grid names those runs
  CHECK(g.settings[1].second.missing_runs ==
        std::vector<std::string>{"learned-seed1-steps2000-init-pytorch", "learned-seed2-steps2000-init-pytorch",
                                 "learned-seed3-steps2000-init-pytorch"});
  REQUIRE(g.across.size() == 2);
  const SettingComparison& rope = g.across[0];
  CHECK(rope.variant == "rope");
  CHECK(rope.setting == "init=pytorch");
  CHECK(rope.baseline == "init=normal");
  CHECK(rope.mean_difference == Approx((1.45 + 1.49 + 1.50 - 1.50 - 1.52 - 1.55) / 3));
  CHECK(rope.test->t == Approx(stats::paired_t_test(rope_pytorch, rope_normal)->t));
  CHECK(*rope.p_holm == Approx(rope.test->p));  // the other comparison has no pairs: a family of one
  CHECK(g.across[1].val.empty());
  const std::string md = grid_summary_markdown(g);
  CHECK(md.find("| rope | init=pytorch | init=normal | 3 | 1.4800 | 1.5233 | -0.0433 |") != std::string::npos);
  CHECK(md.find("## At init=pytorch") != std::string::npos);
  CHECK(md.find("### Validation loss by variant") != std::string::npos);
  const std::string csv = grid_summary_csv(g);
  CHECK(csv.find("setting,variant,n,") == 0);
  CHECK(csv.find("\n\"init=pytorch\",rope,3,") != std::string::npos);
  CHECK(grid_summary_json(g)["across"][0]["paired_t_test"]["df"] == 2);
}

TEST_CASE("a grid across tokenizers compares in bits per byte, a BPE study's summary shows no published nats") {
  StudyDesign d;
  d.variants = {"rope"};
  d.seeds = {1, 2, 3};
  d.extended_steps = 0;
  d.run.tokenizer.vocab_size = 1024;  // --vocab-size: the bpe points'
  d.grid = {parse_grid_axis("tokenizer=byte,bpe")};
  const auto at = [&](std::uint64_t seed, const std::string& tokenizer, double val, double bytes_per_target) {
    RunRecord r = record("rope", seed, 2000, val, val - 0.1);
    r.config = run_config(d, RunSpec{"rope", seed, 2000, GridPoint{{{"tokenizer", tokenizer}}}}, "test-data");
    r.bytes_per_target = {bytes_per_target, bytes_per_target};
    return r;
  };
  // BPE's loss per token is higher, its loss per byte lower
  const std::vector<double> byte_val = {1.10, 1.12, 1.15}, bpe_val = {2.40, 2.46, 2.50};
  std::vector<RunRecord> records;
  for (std::uint64_t s = 1; s <= 3; ++s) {
    records.push_back(at(s, "byte", byte_val[s - 1], 1));
    records.push_back(at(s, "bpe", bpe_val[s - 1], 2.5));
  }
  CHECK(records[1].config.tokenizer == TokenizerSpec{TokenizerKind::bpe, 1024});
  CHECK(records[0].config.tokenizer == TokenizerSpec{TokenizerKind::byte});
  const GridSummary g = summarize_grid(d, records);
  CHECK(g.in_bits_per_byte);
  REQUIRE(g.across.size() == 1);
  const SettingComparison& c = g.across[0];
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(c.val[i] == Approx(bpe_val[i] / 2.5 / std::log(2.0)));
    CHECK(c.baseline_val[i] == Approx(byte_val[i] / std::log(2.0)));
  }
  CHECK(c.mean_difference < 0);  // fewer bits per byte, though more nats per token
  const std::string md = grid_summary_markdown(g);
  CHECK(md.find("compare in validation bits per byte") != std::string::npos);
  CHECK(md.find("| val bits/byte | baseline val bits/byte (same seeds) |") != std::string::npos);
  CHECK(grid_summary_json(g)["across"][0].contains("val_bits_per_byte"));
  // the BPE point's own summary: its bits per byte, and no published nats per character beside it
  const StudySummary& bpe = g.settings[1].second;
  CHECK(bpe.variants[0].mean_val_bits_per_byte == Approx(2.4533333 / 2.5 / std::log(2.0)));
  const std::string bpe_md = summary_markdown(bpe);
  CHECK(bpe_md.find("nats per token of tokenizer bpe 1024") != std::string::npos);
  CHECK(bpe_md.find("are not shown beside nats per BPE token") != std::string::npos);
  CHECK(bpe_md.find("1.6008 ± 0.0047") == std::string::npos);  // alibi-single's published, or any
  CHECK(bpe_md.find("| rope | 3 | 2.4533 ± ") != std::string::npos);
  // a grid within one tokenizer keeps comparing nats
  StudyDesign lr = d;
  lr.grid = {parse_grid_axis("lr=0.001,0.003")};
  CHECK_FALSE(grid_crosses_tokens(lr));
}

TEST_CASE("a task grid compares each variant's accuracy by band across the settings, paired by seed, Holm per band") {
  StudyDesign d;
  d.variants = {"rope", "alibi"};
  d.seeds = {1, 2, 3};
  d.extended_steps = 0;
  d.extended_seeds.clear();
  d.run.task = TaskSpec{TaskKind::copy, {1, 2}};
  d.task_lengths = {1, 2, 3, 4};  // bands: ≤ 2 (trained), 3–4
  d.task_examples = 10;
  d.grid = {parse_grid_axis("random_positions=0,8")};
  // accuracy at lengths 3 and 4 by seed; every model is right at 1 and 2
  const std::vector<std::vector<double>> rope_plain = {{0.2, 0.2}, {0.4, 0.2}, {0.1, 0.1}};
  const std::vector<std::vector<double>> rope_random = {{0.6, 0.6}, {0.8, 0.8}, {0.6, 0.4}};
  std::vector<RunRecord> records;
  for (std::uint64_t s = 1; s <= 3; ++s)
    for (const std::string variant : {"rope", "alibi"})
      for (const std::string range : {"0", "8"}) {
        RunRecord r = record(variant, s, 2000, 0.1, 0.1);
        r.config = run_config(d, RunSpec{variant, s, 2000, GridPoint{{{"random_positions", range}}}}, "test-data");
        const std::vector<double> far = variant == "alibi" ? std::vector<double>{0.5, 0.5}
                                        : range == "0"     ? rope_plain[s - 1]
                                                           : rope_random[s - 1];
        const std::vector<double> by_length = {1, 1, far[0], far[1]};
        for (std::size_t i = 0; i < d.task_lengths.size(); ++i)
          r.task.push_back({{"length", d.task_lengths[i]}, {"examples", 10}, {"seed", d.task_seed},
                            {"accuracy", by_length[i]}});
        records.push_back(r);
      }
  const GridSummary g = summarize_grid(d, records);
  REQUIRE(g.task_across.size() == 4);  // 2 bands × 2 variants × 1 comparison
  const TaskSettingComparison& rope = g.task_across[2];
  CHECK(rope.variant == "rope");
  CHECK(rope.band == 1);
  CHECK(rope.setting == "random_positions=8");
  CHECK(rope.baseline == "random_positions=0");
  CHECK(rope.seeds == std::vector<std::uint64_t>{1, 2, 3});
  // band means 0.6, 0.8, 0.5 against 0.2, 0.3, 0.1: differences 0.4, 0.5, 0.4
  CHECK(*rope.mean_difference == Approx(1.3 / 3));
  REQUIRE(rope.test);
  CHECK(rope.test->t == Approx((1.3 / 3) / (std::sqrt(0.01 / 3) / std::sqrt(3.0))));
  CHECK(*rope.p_holm == Approx(rope.test->p));  // alibi's difference is 0 in every seed: no test, a family of one
  CHECK_FALSE(g.task_across[3].test);
  CHECK_FALSE(g.task_across[0].test);  // the trained band: right everywhere
  const std::string md = grid_summary_markdown(g);
  CHECK(md.find("| rope | random_positions=8 | random_positions=0 | 3–4 | 3 | 0.6333 | 0.2000 | +0.4333 |") !=
        std::string::npos);
  CHECK(grid_summary_json(g)["task_across"][2]["band"] == "3–4");
}

TEST_CASE("a crossed grid compares each point with the first and with each point one axis away") {
  StudyDesign d;
  d.variants = {"rope"};
  d.seeds = {1, 2, 3};
  d.extended_steps = 0;
  d.grid = {parse_grid_axis("init=normal,pytorch"), parse_grid_axis("dropout=0,0.1")};
  // points: 0 normal/0, 1 normal/0.1, 2 pytorch/0, 3 pytorch/0.1
  CHECK(comparison_pairs(d) ==
        std::vector<std::pair<std::size_t, std::size_t>>{{1, 0}, {2, 0}, {3, 0}, {3, 1}, {3, 2}});
  StudyDesign one_axis = d;
  one_axis.grid.pop_back();
  CHECK(comparison_pairs(one_axis) == std::vector<std::pair<std::size_t, std::size_t>>{{1, 0}});
  // val = 1.5 + 0.1 for pytorch + 0.05 for dropout + 0.02 more for both together, + seed/100
  std::vector<RunRecord> records;
  for (std::uint64_t s = 1; s <= 3; ++s)
    for (const std::string init : {"normal", "pytorch"})
      for (const std::string dropout : {"0", "0.1"}) {
        const double val = 1.5 + (init == "pytorch" ? 0.1 : 0) + (dropout == "0.1" ? 0.05 : 0) +
                           (init == "pytorch" && dropout == "0.1" ? 0.02 : 0) + static_cast<double>(s) / 100;
        RunRecord r = record("rope", s, 2000, val, val - 0.1);
        r.config = run_config(d, RunSpec{"rope", s, 2000, GridPoint{{{"init", init}, {"dropout", dropout}}}},
                              "test-data");
        records.push_back(r);
      }
  const GridSummary g = summarize_grid(d, records);
  REQUIRE(g.across.size() == 5);
  CHECK(g.across[2].setting == "init=pytorch dropout=0.1");
  CHECK(g.across[2].baseline == "init=normal dropout=0");
  CHECK(g.across[2].mean_difference == Approx(0.17));
  CHECK(g.across[3].baseline == "init=normal dropout=0.1");  // init's effect with dropout held at 0.1
  CHECK(g.across[3].mean_difference == Approx(0.12));
  CHECK(g.across[4].baseline == "init=pytorch dropout=0");  // dropout's effect with init held at pytorch
  CHECK(g.across[4].mean_difference == Approx(0.07));
  CHECK(g.across[4].seeds == std::vector<std::uint64_t>{1, 2, 3});
  const std::string md = grid_summary_markdown(g);
  CHECK(md.find("| rope | init=pytorch dropout=0.1 | init=pytorch dropout=0 | 3 | 1.6900 | 1.6200 | +0.0700 |") !=
        std::string::npos);
  CHECK(md.find("against each setting one axis away") != std::string::npos);
}

TEST_CASE("listed grid points: the study's own settings, then each point's settings together, not crossed") {
  StudyDesign d;
  d.variants = {"rope", "alibi"};
  d.seeds = {1, 2};
  d.extended_steps = 0;
  d.grid_list = {parse_grid_point("dropout=0.1"), parse_grid_point("  lr-schedule=cosine\twarmup_steps=100 ")};
  CHECK(d.grid_list[1].values == std::vector<std::pair<std::string, std::string>>{{"lr_schedule", "cosine"},
                                                                                   {"warmup_steps", "100"}});
  const std::vector<GridPoint> points = study_points(d);
  REQUIRE(points.size() == 3);
  CHECK(points[0].values.empty());
  CHECK(grid_setting_names(d) == std::vector<std::string>{"dropout", "lr_schedule", "warmup_steps"});
  const std::vector<RunSpec> plan = plan_runs(d);
  REQUIRE(plan.size() == 12);  // 3 points × 2 seeds × 2 variants
  CHECK(plan[0].id() == "rope-seed1-steps2000");  // the study's own settings: a plain study's names
  CHECK(plan[11].id() == "alibi-seed2-steps2000-lr_schedule-cosine-warmup_steps-100");
  const RunConfig c = run_config(d, plan[11], "digest");
  CHECK(c.train.schedule.kind == ScheduleKind::cosine);
  CHECK(c.train.schedule.warmup_steps == 100);
  CHECK(c.dropout == 0);  // not crossed with the other point
  CHECK(run_config(d, plan[4], "digest").dropout == 0.1);
  CHECK_NOTHROW(validate_design(d));

  const auto problem = [&](std::vector<GridPoint> listed, std::vector<GridAxis> crossed = {}) {
    StudyDesign bad = d;
    bad.grid_list = std::move(listed);
    bad.grid = std::move(crossed);
    try {
      validate_design(bad);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(problem({parse_grid_point("dropout=0.1")}, {parse_grid_axis("init=normal,pytorch")}) ==
        "--grid with --grid-point: a grid's points are either crossed (--grid) or listed (--grid-point)");
  CHECK(problem({parse_grid_point("dropout=0.1"), parse_grid_point("dropout=0.10")}) ==
        "--grid-point dropout=0.1: the same run configuration as dropout=0.1");
  CHECK(problem({parse_grid_point("dropout=0.1"), parse_grid_point("dropout=0.1 tie_weights=false")}) ==
        "--grid-point dropout=0.1 tie_weights=false: the same run configuration as dropout=0.1");
  CHECK(problem({parse_grid_point("init=normal")}) ==
        "--grid-point init=normal: the same run configuration as the study's own settings, which it runs anyway");
  CHECK(problem({parse_grid_point("seed=3")}).find("--grid-point seed: not a setting a grid can cross") == 0);
  CHECK(problem({parse_grid_point("lr_schedule=cosine")}).empty());
  // a crossed grid's points may not repeat a configuration either
  CHECK(problem({}, {parse_grid_axis("dropout=0,0.0")}) == "--grid dropout: '0' is given twice");
  CHECK(problem({}, {parse_grid_axis("dropout=0,0.1"), parse_grid_axis("tie_weights=false")}).empty());
  CHECK_THROWS_WITH(parse_grid_point("dropout=0.1 dropout=0.2"),
                    "--grid-point 'dropout=0.1 dropout=0.2': dropout is given twice");
  CHECK_THROWS_WITH(parse_grid_point("dropout=0,0.1"), Catch::Contains("dropout has one value in a point"));
  CHECK_THROWS_WITH(parse_grid_point("dropout"), Catch::Contains("'dropout' is not NAME=VALUE"));
  CHECK_THROWS_WITH(parse_grid_point(" "), "--grid-point: no setting given (NAME=VALUE …)");
}

TEST_CASE("a listed grid's summary compares each point with the study's own settings, records not shared") {
  StudyDesign d;
  d.variants = {"rope"};
  d.seeds = {1, 2, 3};
  d.extended_steps = 0;
  d.grid_list = {parse_grid_point("dropout=0.1"), parse_grid_point("dropout=0.1 init=pytorch")};
  const std::vector<GridPoint> points = study_points(d);
  const std::vector<std::vector<double>> val = {{1.50, 1.52, 1.55}, {1.45, 1.49, 1.50}, {1.60, 1.61, 1.66}};
  std::vector<RunRecord> records;
  for (std::size_t k = points.size(); k-- > 0;)  // the point with most settings first
    for (std::uint64_t s = 1; s <= 3; ++s) {
      RunRecord r = record("rope", s, 2000, val[k][s - 1], val[k][s - 1] - 0.1);
      r.config = run_config(d, RunSpec{"rope", s, 2000, points[k]}, "test-data");
      records.push_back(r);
    }
  const GridSummary g = summarize_grid(d, records);
  REQUIRE(g.settings.size() == 3);
  // each point has its own three records: were a record matched on the point's own settings only,
  // dropout=0.1 would take the combined point's too
  for (std::size_t k = 0; k < 3; ++k) {
    CHECK(g.settings[k].second.variants[0].val == val[k]);
    CHECK(g.settings[k].second.missing_runs.empty());
  }
  REQUIRE(g.across.size() == 2);
  CHECK(g.across[0].baseline == "the study's settings");
  CHECK(g.across[0].setting == "dropout=0.1");
  CHECK(g.across[1].setting == "dropout=0.1 init=pytorch");
  CHECK(g.across[1].mean_difference == Approx((1.60 + 1.61 + 1.66 - 1.50 - 1.52 - 1.55) / 3));
  const std::string md = grid_summary_markdown(g);
  CHECK(md.find("- `dropout=0.1 init=pytorch`") != std::string::npos);
  CHECK(md.find("## At the study's settings") != std::string::npos);
  CHECK(grid_summary_json(g)["settings"][0]["setting"] == "the study's settings");
}

TEST_CASE("a grid's summary opens with every setting's means and how many seeds rank as the means and as published") {
  StudyDesign d;  // the published design
  d.variants = {"learned", "sinusoidal", "rope", "alibi-single"};
  d.extended_steps = 0;
  d.grid_list = {parse_grid_point("dropout=0.1")};
  const std::vector<GridPoint> points = study_points(d);
  // the study's settings: seeds 1337 and 2024 rank as published (rope < alibi-single < sinusoidal <
  // learned), seed 42 puts learned second; at dropout 0.1 learned has no run at seed 42
  const std::map<std::string, std::vector<double>> study = {{"learned", {1.66, 1.67, 1.58}},
                                                            {"sinusoidal", {1.64, 1.63, 1.65}},
                                                            {"rope", {1.55, 1.56, 1.57}},
                                                            {"alibi-single", {1.60, 1.61, 1.62}}};
  std::vector<RunRecord> records;
  for (std::size_t k = 0; k < 2; ++k)
    for (const auto& [variant, val] : study)
      for (std::size_t i = 0; i < 3; ++i) {
        if (k == 1 && variant == "learned" && i == 2) continue;
        RunRecord r = record(variant, d.seeds[i], 2000, val[i] + 0.01 * static_cast<double>(k), 1.3);
        r.config = run_config(d, RunSpec{variant, d.seeds[i], 2000, points[k]}, std::string(tiny_shakespeare_digest));
        records.push_back(r);
      }
  const GridSummary g = summarize_grid(d, records);
  const RankingAgreement at_study = ranking_agreement(g.settings[0].second);
  // the means: learned 1.6367, sinusoidal 1.64, rope 1.56, alibi-single 1.61
  CHECK(at_study.ranking_of_means == std::vector<std::string>{"rope", "alibi-single", "learned", "sinusoidal"});
  CHECK(at_study.seeds_ranked == 3);
  CHECK(at_study.seeds_ranked_as_means == 0);
  CHECK(at_study.seeds_ranked_as_published == std::optional<std::size_t>(2));
  const RankingAgreement at_dropout = ranking_agreement(g.settings[1].second);
  CHECK(at_dropout.seeds_ranked == 2);  // seed 42 lacks learned
  CHECK(at_dropout.ranking_of_means == std::vector<std::string>{"rope", "alibi-single", "sinusoidal", "learned"});
  CHECK(at_dropout.seeds_ranked_as_means == 2);
  CHECK(at_dropout.seeds_ranked_as_published == std::optional<std::size_t>(2));

  const std::string md = grid_summary_markdown(g);
  const std::size_t overview = md.find("## Validation loss at each setting");
  REQUIRE(overview != std::string::npos);
  CHECK(overview < md.find("## Each variant across the settings"));
  CHECK(md.find("| setting | learned | sinusoidal | rope | alibi-single | ranking of the means | seeds ranked so | "
                "seeds ranked as published |\n|---|---|---|---|---|---|---|---|\n"
                "| published (for reference) | 1.6636 ± 0.0211 | 1.6386 ± 0.0009 | 1.5894 ± 0.0051 | 1.6008 ± 0.0047 | "
                "rope < alibi-single < sinusoidal < learned | — | — |\n"
                "| the study's settings | 1.6367 ± 0.0493 | 1.6400 ± 0.0100 | 1.5600 ± 0.0100 | 1.6100 ± 0.0100 | "
                "rope < alibi-single < learned < sinusoidal | 0 of 3 | 2 of 3 |\n"
                "| dropout=0.1 | 1.6750 ± 0.0071 (n = 2) | 1.6500 ± 0.0100 |") != std::string::npos);
  CHECK(md.find("rope < alibi-single < sinusoidal < learned | 2 of 2 | 2 of 2 |") != std::string::npos);
  CHECK(md.find("## At dropout=0.1") != std::string::npos);
  std::vector<RunRecord> without_seed_42;  // and no learned at dropout 0.1: no seed to rank there
  for (const RunRecord& r : records)
    if (!(r.config.train.seed == 42 || (r.config.dropout > 0 && r.config.posenc == "learned")))
      without_seed_42.push_back(r);
  CHECK(grid_summary_markdown(summarize_grid(d, without_seed_42))
            .find("| dropout=0.1 | — | 1.6450 ± 0.0071 (n = 2) | 1.5650 ± 0.0071 (n = 2) | 1.6150 ± 0.0071 (n = 2) | "
                  "— | — | — |\n") != std::string::npos);
  const nlohmann::json j = grid_summary_json(g);
  CHECK(j["settings"][0]["seeds_ranked_as_published"] == 2);
  CHECK(j["settings"][1]["ranking_of_means"][3] == "learned");

  // not the published variants: no published row or column; a setting without every variant has no ranking
  StudyDesign other = d;
  other.variants = {"rope", "nope"};
  std::vector<RunRecord> rope_only;
  for (const RunRecord& r : records)
    if (r.config.posenc == "rope") rope_only.push_back(r);
  const GridSummary h = summarize_grid(other, rope_only);
  CHECK_FALSE(ranking_agreement(h.settings[0].second).seeds_ranked_as_published.has_value());
  CHECK(ranking_agreement(h.settings[0].second).ranking_of_means.empty());
  const std::string other_md = grid_summary_markdown(h);
  CHECK(other_md.find("published (for reference)") == std::string::npos);
  CHECK(other_md.find("| the study's settings | 1.5600 ± 0.0100 | — | — | — |\n") != std::string::npos);
  CHECK(grid_summary_json(h)["settings"][0]["seeds_ranked_as_published"].is_null());
}

TEST_CASE("a grid value is read as its setting's kind: a clear error when it is not one, one name when it is") {
  const auto problem = [](const std::string& setting) {
    try {
      with_setting(RunConfig{}, parse_grid_point(setting));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  // counts are whole numbers ≥ 0: no wrapping of −1, no cutting of 1.5
  CHECK(problem("eval_iters=-1") == "--grid eval_iters=-1: eval_iters takes a whole number ≥ 0");
  CHECK(problem("grad_accum=1.5") == "--grid grad_accum=1.5: grad_accum takes a whole number ≥ 0");
  CHECK(problem("batch=1e3") == "--grid batch=1e3: batch takes a whole number ≥ 0");
  CHECK(problem("eval_every=2.5") == "--grid eval_every=2.5: eval_every takes a whole number");
  CHECK(problem("lr=abc") == "--grid lr=abc: lr takes a number");
  CHECK(problem("dropout=none") == "--grid dropout=none: dropout takes a number");
  CHECK(problem("lr=inf") == "--grid lr=inf: lr takes a number");
  CHECK(problem("tie_weights=yes") == "--grid tie_weights=yes: tie_weights takes true or false");
  CHECK(problem("tie_weights=1") == "--grid tie_weights=1: tie_weights takes true or false");
  CHECK(problem("grad_clip=off") == "--grid grad_clip=off: grad_clip takes a number or none");
  // a choice is text its parser checks, a number included
  CHECK(problem("init=1") ==
        "--grid init=1: the grid point is not a run configuration: unknown initialisation '1' "
        "(known: normal, pytorch)");
  CHECK(problem("grad_clip=none").empty());
  CHECK(problem("grad_accum=2").empty());
  CHECK(with_setting(RunConfig{}, parse_grid_point("grad_accum=2 lr=3e-4 grad_clip=1 tie_weights=true"))
            .train.grad_accum == 2);
  // one name for each value: the run's identity follows its configuration, not how it was typed
  CHECK(parse_grid_axis("lr=1e-3,0.001,3E-4,.5").values ==
        std::vector<std::string>{"0.001", "0.001", "0.0003", "0.5"});
  CHECK(parse_grid_axis("dropout=0,0.0,0.10,-0").values == std::vector<std::string>{"0", "0", "0.1", "0"});
  CHECK(parse_grid_axis("grad_clip=none,1.0,1").values == std::vector<std::string>{"none", "1", "1"});
  CHECK(parse_grid_axis("warmup_steps=0100,100").values == std::vector<std::string>{"100", "100"});
  CHECK(parse_grid_point("init=pytorch dropout=0.20").label() == "init=pytorch dropout=0.2");
  CHECK(parse_grid_point("dropout=0.1 lr_schedule=cosine warmup_steps=100").id_suffix() ==
        "-dropout-0.1-lr_schedule-cosine-warmup_steps-100");  // the published-settings study's names
  // a value its setting cannot take stays as written, for the error to quote
  CHECK(parse_grid_axis("grad_accum=1.5,x").values == std::vector<std::string>{"1.5", "x"});
}
