// summarize_study(): the statistics over a study's finished runs, and the summary's JSON, CSV and Markdown.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "posenc/config.hpp"
#include "posenc/encodings/rope_scaling.hpp"
#include "posenc/io/atomic_file.hpp"
#include "posenc/model/aliases.hpp"
#include "posenc/study/design.hpp"
#include "posenc/study/record.hpp"
#include "posenc/study/statistics.hpp"
#include "posenc/study/summary_text.hpp"
#include "posenc/study/task_summary.hpp"

namespace posenc {

// The published validation cross-entropy (mean ± sample std over seeds 1337, 2024, 42).
struct PublishedResult {
  double mean, sd;
};
inline const std::map<std::string, PublishedResult>& published_results() {
  static const std::map<std::string, PublishedResult> results = {{"rope", {1.5894, 0.0051}},
                                                                 {"alibi-single", {1.6008, 0.0047}},
                                                                 {"sinusoidal", {1.6386, 0.0009}},
                                                                 {"learned", {1.6636, 0.0211}}};
  return results;
}

struct VariantSummary {
  std::string variant;
  std::vector<std::uint64_t> seeds;  // the seeds with a finished base run, in design order
  std::vector<double> val, train, gap, tokens_per_second;  // by seed, in the same order
  std::vector<double> val_bits_per_byte;                   // val over ln 2 and the bytes a target stands for
  double mean_val = 0, mean_train = 0, mean_gap = 0, mean_tokens_per_second = 0, mean_val_bits_per_byte = 0;
  std::optional<double> sd_val;
  std::optional<stats::Interval> ci95_val;
};

struct PairComparison {
  std::string a, b;
  std::optional<double> mean_difference;         // mean val loss of a − mean of b, each over its seeds
  std::size_t n_a = 0, n_b = 0;                  // their finished seeds
  std::size_t shared_seeds = 0;                  // the seeds both finished: the paired test's pairs
  std::optional<double> paired_mean_difference;  // the mean of a − b over those seeds
  std::optional<stats::TTest> welch, paired;
  std::optional<double> welch_p_holm, paired_p_holm;  // Holm-adjusted over all pairs
  std::string note;
};

struct ExtendedComparison {
  std::uint64_t seed = 0;
  std::map<std::string, double> val_at_steps, val_at_extended;  // by variant, full-pass val loss
  std::vector<std::string> ranking_at_steps, ranking_at_extended;
  bool complete = false;
  bool ranking_changed = false;
};

// One variant's model (EvaluatedModel: the base run's under one RoPE scaling, or a fine-tuned one)
// at one evaluation length: the validation loss over seeds in one protocol.
struct ExtrapolationCell {
  std::string variant;
  std::string scaling = "none";  // the RoPE scaling's label ("yarn ×8"); "none": the trained angles
  std::string fine_tune = "none";  // the fine-tune's label ("ft 512×200"); "none": the base run's model
  std::size_t length = 0;
  std::string protocol;  // "non_overlapping" or "sliding"
  std::vector<double> values = {};  // by seed
  std::optional<double> mean = {}, sd = {};
  std::string note = {};  // why there are no values (e.g. past a learned table)
};

// A variant at one length: a rotary base model under a scaling, or a fine-tuned model, against the
// base model with its trained angles, paired by seed (non-overlapping protocol).
struct ScalingComparison {
  std::string variant, scaling, fine_tune = "none";
  std::size_t length = 0;
  std::size_t n = 0;           // seeds with both
  double mean_difference = 0;  // this model − the base model with its trained angles
  std::optional<stats::TTest> paired = {};
  std::optional<double> p_holm = {};  // over every scaling comparison of the study
};

// The loss by position at one length (under one scaling): each range's mean and sd over seeds.
struct PositionCurve {
  std::string variant, scaling = "none", fine_tune = "none";
  std::size_t length = 0;
  std::size_t n = 0;  // seeds
  std::vector<std::size_t> first = {}, last = {};  // each range's positions, both included
  std::vector<double> mean = {};
  std::vector<std::optional<double>> sd = {};
};

// The copy probe of one variant (under one scaling) at one distance over seeds: each seed's mean
// loss on the segment after an unrelated one (the control) and after itself (the second copy), and
// the paired t-test of the two (a drop the seeds agree on says the model reads from that far back).
struct CopyProbeCell {
  std::string variant, scaling = "none", fine_tune = "none";
  std::size_t distance = 0;
  std::vector<double> control = {}, second = {};  // by seed: CopyProbe's control and second-copy losses
  std::optional<double> mean_control = {}, mean_second = {}, mean_drop = {}, sd_drop = {};
  std::optional<stats::TTest> paired = {};
  std::optional<double> p_holm = {};  // over every copy-probe cell of the study
  std::string note = {};              // why there are no values (e.g. past a learned table)
};

struct StudySummary {
  StudyDesign design;
  std::vector<ExtrapolationCell> extrapolation;
  std::vector<ScalingComparison> scaling_comparisons;
  std::vector<PositionCurve> position_curves;
  std::vector<CopyProbeCell> copy_probe;
  std::vector<VariantSummary> variants;
  std::map<std::uint64_t, std::vector<std::string>> ranking_by_seed;  // best first
  bool ranking_complete = false;    // every seed has a finished run of every variant
  bool ranking_consistent = false;  // complete, and the same ranking in every seed
  std::vector<PairComparison> pairs;
  std::vector<ExtendedComparison> extended;
  std::vector<std::string> missing_runs;
  bool published_design = false;  // is_published_design(design), and every run on Tiny Shakespeare
  std::optional<TaskSummary> task;  // a task study's accuracy by length
};

// corpus_digest() of Tiny Shakespeare (1,115,394 bytes, sha256 86c4e6aa…c565ed), the published study's corpus.
inline constexpr std::string_view tiny_shakespeare_digest = "fnv1a64:8c00862c831d9e7a:1115394";

// The training settings of `run` that differ from the published study's, as a clause of the
// summary's first sentence ("" when none does).
inline std::string describe_training_settings(const RunConfig& run) {
  const TrainConfig& t = run.train;
  const TrainConfig published;
  std::ostringstream out;
  if (t.schedule != published.schedule) {
    out << ", " << schedule_kind_name(t.schedule.kind) << " learning rate";
    if (t.schedule.warmup_steps > 0) out << " after " << t.schedule.warmup_steps << " warm-up steps";
    if (t.schedule.kind != ScheduleKind::constant) out << " down to " << t.schedule.min_lr_fraction << " × lr";
    if (t.schedule.kind == ScheduleKind::wsd) out << " over the last " << t.schedule.decay_fraction << " of the steps";
  }
  if (t.max_grad_norm) out << ", gradients clipped to norm " << *t.max_grad_norm;
  if (t.grad_accum != 1) out << ", " << t.grad_accum << " micro-batches per step";
  if (t.beta1 != published.beta1 || t.beta2 != published.beta2 || t.eps != published.eps)
    out << ", AdamW betas (" << t.beta1 << ", " << t.beta2 << ") eps " << t.eps;
  if (t.weight_decay_scope != published.weight_decay_scope) out << ", weight decay on matrices only";
  if (run.init != InitScheme::normal) out << ", PyTorch's default initialisation";
  if (run.tie_weights) out << ", lm_head tied to the token embedding";
  if (run.dropout > 0) out << ", dropout " << run.dropout;
  return out.str();
}

// Whether the published numbers are like-for-like beside a study of this design: the published
// size, steps, batch, context, learning rate, weight decay and initialisation, fp32, and no training
// setting away from the study's defaults (describe_training_settings() empty).
inline bool is_published_design(const StudyDesign& d) {
  const RunConfig& r = d.run;
  const TrainConfig published;  // its defaults are the published study's batch, lr and weight decay
  return !r.task && r.layers == study_layers && r.dim == study_dim && r.heads == study_heads && d.steps == 2000 &&
         r.train.context == study_context && r.train.batch == published.batch && r.train.lr == published.lr &&
         r.train.weight_decay == published.weight_decay && r.embedding_std == init_std &&
         r.precision == Precision::fp32 && describe_training_settings(r).empty() && r.tokenizer == TokenizerSpec{};
}

// Whether a record is of the run `spec` of `design`: its variant, seed and steps and, for a
// fine-tune, its context, where it started (the step and context) and its RoPE settings. (That the
// rest of its configuration is the design's is checked when the study runs: StudyRunner::pending.)
inline bool is_record_of(const RunRecord& record, const StudyDesign& design, const RunSpec& spec) {
  const RunConfig want = run_config(design, spec, ""), &made = record.config;
  if (made.posenc != want.posenc || made.train.seed != want.train.seed || made.train.steps != want.train.steps)
    return false;
  if (!spec.fine_tune) return made.init_from.checkpoint.empty();
  return !made.init_from.checkpoint.empty() && made.init_from.step == want.init_from.step &&
         made.init_from.context == want.init_from.context && made.train.context == want.train.context &&
         made.rope == want.rope;
}

namespace detail {
inline std::vector<std::string> rank_variants(const std::map<std::string, double>& val) {
  std::vector<std::string> order;
  for (const auto& [v, _] : val) order.push_back(v);
  std::stable_sort(order.begin(), order.end(), [&](const auto& x, const auto& y) { return val.at(x) < val.at(y); });
  return order;
}
}  // namespace detail

// The published ranking of `variants` (best first), by the published means; none when one of them
// was not in the published study.
inline std::optional<std::vector<std::string>> published_ranking(const std::vector<std::string>& variants) {
  std::map<std::string, double> means;
  for (const std::string& v : variants) {
    const auto it = published_results().find(v);
    if (it == published_results().end()) return std::nullopt;
    means[v] = it->second.mean;
  }
  return detail::rank_variants(means);
}

// The published ranking of all four published variants.
inline std::vector<std::string> published_ranking() {
  std::vector<std::string> all;
  for (const auto& [variant, _] : published_results()) all.push_back(variant);
  return *published_ranking(all);
}

namespace detail {

// Why a pair has no test, and how many seeds its tests rest on when they are few.
inline std::string pair_note(const PairComparison& c) {
  const std::size_t n_a = c.n_a, n_b = c.n_b;
  if (std::min(n_a, n_b) < 2) return "fewer than two seeds per variant: no test is possible";
  std::vector<std::string> notes;
  if (c.shared_seeds < 2)
    notes.push_back("fewer than two seeds both finished: no paired test");
  else if (!c.paired)
    notes.push_back("the differences by seed are all equal: no paired t-test");
  if (std::min(n_a, n_b) < 5) {
    const std::string n = n_a == n_b && c.shared_seeds == n_a
                              ? "n = " + std::to_string(n_a) + " seeds per variant"
                              : "n = " + std::to_string(n_a) + " and " + std::to_string(n_b) + " seeds (" +
                                    std::to_string(c.shared_seeds) + " shared)";
    notes.push_back(n + ": the tests have little power, so p ≥ 0.05 does not show the variants are equal");
  }
  std::string out;
  for (const std::string& note : notes) out += (out.empty() ? "" : "; ") + note;
  return out;
}


// The evaluations after training (extrapolation, loss by position, copy probe) over seeds, of
// every EvaluatedModel of each variant, from the record find(variant, seed, fine-tune) returns
// (the base run's without a fine-tune; nullptr: none).
template <class FindRun>
void summarize_evaluations(StudySummary& s, FindRun find_run) {
  const StudyDesign& d = s.design;
  for (const std::string& v : d.variants)
    for (const EvaluatedModel& model : evaluated_models(d, v)) {
      const std::string label = model.scaling_label(), tuned = model.fine_tune_label();
      const RopeScaling& scaling = model.scaling;
      const auto find = [&](const std::string& variant, std::uint64_t seed) {
        return find_run(variant, seed, model.fine_tune);
      };
      for (const std::size_t L : d.extrapolate) {
        for (const char* protocol : {"non_overlapping", "sliding"}) {
          ExtrapolationCell cell{
              .variant = v, .scaling = label, .fine_tune = tuned, .length = L, .protocol = protocol};
          for (std::uint64_t seed : d.seeds)
            if (const RunRecord* r = find(v, seed))
              if (const nlohmann::json* e = r->extrapolation_at(L, scaling)) {
                if (e->at(protocol).is_number()) cell.values.push_back(e->at(protocol).get<double>());
                else if (e->contains("note")) cell.note = e->at("note").get<std::string>();
              }
          if (!cell.values.empty()) {
            cell.mean = stats::mean(cell.values);
            cell.sd = stats::sample_sd(cell.values);
          }
          s.extrapolation.push_back(cell);
        }
        if (d.per_position_bins > 0) {
          PositionCurve curve{.variant = v, .scaling = label, .fine_tune = tuned, .length = L};
          std::vector<std::vector<double>> by_bin;
          for (std::uint64_t seed : d.seeds) {
            const RunRecord* r = find(v, seed);
            const nlohmann::json* e = r != nullptr ? r->extrapolation_at(L, scaling) : nullptr;
            if (e == nullptr || !e->contains("per_position")) continue;
            const nlohmann::json& bins = e->at("per_position").at("bins");
            if (curve.n == 0)
              for (const nlohmann::json& b : bins) {
                curve.first.push_back(b.at("first").get<std::size_t>());
                curve.last.push_back(b.at("last").get<std::size_t>());
              }
            if (bins.size() != curve.first.size()) continue;  // another binning: not averaged with these
            by_bin.resize(bins.size());
            for (std::size_t b = 0; b < bins.size(); ++b) by_bin[b].push_back(bins[b].at("loss").get<double>());
            ++curve.n;
          }
          for (const std::vector<double>& losses : by_bin) {
            curve.mean.push_back(stats::mean(losses));
            curve.sd.push_back(stats::sample_sd(losses));
          }
          if (curve.n > 0) s.position_curves.push_back(curve);
        }
        if (!model.is_base()) {
          ScalingComparison c{.variant = v, .scaling = label, .fine_tune = tuned, .length = L};
          std::vector<double> scaled, trained;
          for (std::uint64_t seed : d.seeds)
            if (const RunRecord *r = find(v, seed), *base = find_run(v, seed, std::nullopt); r && base) {
              const nlohmann::json *a = r->extrapolation_at(L, scaling), *b = base->extrapolation_at(L);
              if (a && b && a->at("non_overlapping").is_number() && b->at("non_overlapping").is_number()) {
                scaled.push_back(a->at("non_overlapping").get<double>());
                trained.push_back(b->at("non_overlapping").get<double>());
              }
            }
          c.n = scaled.size();
          if (c.n > 0) c.mean_difference = stats::mean(scaled) - stats::mean(trained);
          c.paired = stats::paired_t_test(scaled, trained);
          s.scaling_comparisons.push_back(c);
        }
      }
      for (const std::size_t n : d.copy_probe) {
        CopyProbeCell cell{.variant = v, .scaling = label, .fine_tune = tuned, .distance = n};
        for (std::uint64_t seed : d.seeds)
          if (const RunRecord* r = find(v, seed))
            if (const nlohmann::json* e = r->copy_probe_at(n, scaling)) {
              if (e->contains("note")) {
                cell.note = e->at("note").get<std::string>();
              } else if (e->contains("control_loss")) {  // not a probe against the first copy (before 2026-12-03)
                cell.control.push_back(e->at("control_loss").get<double>());
                cell.second.push_back(e->at("second_copy_loss").get<double>());
              }
            }
        if (!cell.control.empty()) {
          std::vector<double> drop;
          for (std::size_t i = 0; i < cell.control.size(); ++i) drop.push_back(cell.control[i] - cell.second[i]);
          cell.mean_control = stats::mean(cell.control);
          cell.mean_second = stats::mean(cell.second);
          cell.mean_drop = stats::mean(drop);
          cell.sd_drop = stats::sample_sd(drop);
          cell.paired = stats::paired_t_test(cell.control, cell.second);
        }
        s.copy_probe.push_back(cell);
      }
    }
  const auto holm_of = [](auto& family) {
    std::vector<std::optional<double>> p;
    for (const auto& c : family) p.push_back(c.paired ? std::optional<double>(c.paired->p) : std::nullopt);
    const auto adjusted = stats::holm(p);
    for (std::size_t k = 0; k < family.size(); ++k) family[k].p_holm = adjusted[k];
  };
  holm_of(s.scaling_comparisons);
  holm_of(s.copy_probe);
}

}  // namespace detail

// The statistics over a study's finished runs; runs of the design without a record are listed as
// missing and left out of the numbers. A grid point's design (design_at) names its runs with
// `point`'s settings, as the grid's plan does.
inline StudySummary summarize_study(const StudyDesign& design, const std::vector<RunRecord>& records,
                                    const GridPoint& point = {}) {
  StudySummary s;
  s.design = design;
  auto find = [&](const RunSpec& spec) -> const RunRecord* {
    for (const RunRecord& r : records)
      if (is_record_of(r, design, spec)) return &r;
    return nullptr;
  };
  for (RunSpec spec : plan_runs(design))
    if (find(spec) == nullptr) {
      spec.setting = point;
      s.missing_runs.push_back(spec.id());
    }
  // A record's digest is empty when it was written before digests were recorded (2026-11).
  s.published_design = is_published_design(design);
  for (const RunSpec& spec : plan_runs(design))
    if (const RunRecord* r = find(spec); r && !r->config.data_digest.empty())
      s.published_design = s.published_design && r->config.data_digest == tiny_shakespeare_digest;

  for (const std::string& v : design.variants) {
    VariantSummary vs;
    vs.variant = v;
    for (std::uint64_t seed : design.seeds)
      if (const RunRecord* r = find({v, seed, design.steps})) {
        vs.seeds.push_back(seed);
        vs.val.push_back(r->final_val_loss);
        vs.train.push_back(r->final_train_loss);
        vs.gap.push_back(r->generalization_gap());
        vs.tokens_per_second.push_back(r->tokens_per_second);
        vs.val_bits_per_byte.push_back(r->final_val_bits_per_byte());
      }
    if (!vs.val.empty()) {
      vs.mean_val = stats::mean(vs.val);
      vs.mean_train = stats::mean(vs.train);
      vs.mean_gap = stats::mean(vs.gap);
      vs.mean_tokens_per_second = stats::mean(vs.tokens_per_second);
      vs.mean_val_bits_per_byte = stats::mean(vs.val_bits_per_byte);
      vs.sd_val = stats::sample_sd(vs.val);
      vs.ci95_val = stats::confidence_interval(vs.val);
    }
    s.variants.push_back(vs);
  }

  // Rankings per seed, over the variants that finished that seed.
  for (std::uint64_t seed : design.seeds) {
    std::map<std::string, double> val;
    for (const std::string& v : design.variants)
      if (const RunRecord* r = find({v, seed, design.steps})) val[v] = r->final_val_loss;
    if (!val.empty()) s.ranking_by_seed[seed] = detail::rank_variants(val);
  }
  s.ranking_complete = s.ranking_by_seed.size() == design.seeds.size();
  for (const auto& [seed, ranking] : s.ranking_by_seed)
    if (ranking.size() != design.variants.size()) s.ranking_complete = false;
  s.ranking_consistent = s.ranking_complete;
  for (const auto& [seed, ranking] : s.ranking_by_seed)
    if (ranking != s.ranking_by_seed.begin()->second) s.ranking_consistent = false;

  // Every pair of variants: Welch's test over all seeds, the paired test over the shared seeds.
  for (std::size_t i = 0; i < s.variants.size(); ++i)
    for (std::size_t j = i + 1; j < s.variants.size(); ++j) {
      const VariantSummary &a = s.variants[i], &b = s.variants[j];
      PairComparison c;
      c.a = a.variant;
      c.b = b.variant;
      c.n_a = a.val.size();
      c.n_b = b.val.size();
      if (a.val.empty() || b.val.empty()) {
        c.note = "no finished runs for one of the two";
        s.pairs.push_back(c);
        continue;
      }
      c.mean_difference = a.mean_val - b.mean_val;
      c.welch = stats::welch_t_test(a.val, b.val);
      const auto [pa, pb] = stats::shared_pairs(a.seeds, a.val, b.seeds, b.val);
      c.shared_seeds = pa.size();
      if (!pa.empty()) c.paired_mean_difference = stats::mean(pa) - stats::mean(pb);
      c.paired = stats::paired_t_test(pa, pb);
      c.note = detail::pair_note(c);
      s.pairs.push_back(c);
    }
  std::vector<std::optional<double>> welch_p, paired_p;
  for (const PairComparison& c : s.pairs) {
    welch_p.push_back(c.welch ? std::optional<double>(c.welch->p) : std::nullopt);
    paired_p.push_back(c.paired ? std::optional<double>(c.paired->p) : std::nullopt);
  }
  const auto welch_holm = stats::holm(welch_p), paired_holm = stats::holm(paired_p);
  for (std::size_t k = 0; k < s.pairs.size(); ++k) {
    s.pairs[k].welch_p_holm = welch_holm[k];
    s.pairs[k].paired_p_holm = paired_holm[k];
  }

  detail::summarize_evaluations(s, [&](const std::string& v, std::uint64_t seed, const std::optional<FineTune>& tune) {
    return find({v, seed, design.steps, {}, tune});
  });
  if (design.run.task)
    s.task = summarize_task(design, [&](const std::string& v, std::uint64_t seed) {
      return find({v, seed, design.steps});
    });
  // The extended runs against the same seeds' base runs: the first `steps` of an extended run
  // are the base run (same seed, constant learning rate), so the base run's final model is the
  // extended run at `steps`.
  if (design.extended_steps > 0)
    for (std::uint64_t seed : design.extended_seeds) {
      ExtendedComparison e;
      e.seed = seed;
      e.complete = true;
      for (const std::string& v : design.variants) {
        const RunRecord* base = find({v, seed, design.steps});
        const RunRecord* ext = find({v, seed, design.extended_steps});
        if (base && ext) {
          e.val_at_steps[v] = base->final_val_loss;
          e.val_at_extended[v] = ext->final_val_loss;
        } else {
          e.complete = false;
        }
      }
      e.ranking_at_steps = detail::rank_variants(e.val_at_steps);
      e.ranking_at_extended = detail::rank_variants(e.val_at_extended);
      e.ranking_changed = e.ranking_at_steps != e.ranking_at_extended;
      s.extended.push_back(e);
    }
  return s;
}

namespace detail {
// The family Holm's adjustment of the pairwise table ran over: every pair, or the tests there are.
inline std::string holm_family_text(const std::vector<PairComparison>& pairs) {
  std::size_t welch = 0, paired = 0;
  for (const PairComparison& c : pairs) {
    welch += c.welch.has_value();
    paired += c.paired.has_value();
  }
  if (welch == pairs.size() && paired == pairs.size()) return std::to_string(pairs.size()) + " pairs";
  return "tests there are (" + std::to_string(welch) + " Welch, " + std::to_string(paired) + " paired, of " +
         std::to_string(pairs.size()) + " pairs)";
}

}  // namespace detail

inline nlohmann::json summary_json(const StudySummary& s) {
  nlohmann::json variants = nlohmann::json::array();
  for (const VariantSummary& v : s.variants) {
    const auto mean = [&](double m) { return v.val.empty() ? nlohmann::json(nullptr) : nlohmann::json(m); };
    nlohmann::json j = {{"variant", v.variant}, {"n", v.val.size()}, {"seeds", v.seeds},
                        {"val_loss", v.val},    {"train_loss", v.train}, {"gap", v.gap},
                        {"mean_val_loss", mean(v.mean_val)}, {"sd_val_loss", detail::optional_json(v.sd_val)},
                        {"mean_train_loss", mean(v.mean_train)}, {"mean_gap", mean(v.mean_gap)},
                        {"mean_tokens_per_second", mean(v.mean_tokens_per_second)},
                        {"val_bits_per_byte", v.val_bits_per_byte},
                        {"mean_val_bits_per_byte", mean(v.mean_val_bits_per_byte)}};
    j["ci95_val_loss"] = v.ci95_val ? nlohmann::json{v.ci95_val->low, v.ci95_val->high} : nlohmann::json(nullptr);
    if (const auto it = published_results().find(v.variant); it != published_results().end())
      j["published"] = {
          {"mean_val_loss", it->second.mean},
          {"sd_val_loss", it->second.sd},
          {"difference", v.val.empty() ? nlohmann::json(nullptr) : nlohmann::json(v.mean_val - it->second.mean)}};
    variants.push_back(j);
  }
  nlohmann::json rankings = nlohmann::json::object();
  for (const auto& [seed, ranking] : s.ranking_by_seed) rankings[std::to_string(seed)] = ranking;
  nlohmann::json pairs = nlohmann::json::array();
  auto test_json = [](const std::optional<stats::TTest>& t, const std::optional<double>& holm) {
    if (!t) return nlohmann::json(nullptr);
    return nlohmann::json{{"t", t->t}, {"df", t->df}, {"p", t->p}, {"p_holm", detail::optional_json(holm)}};
  };
  for (const PairComparison& c : s.pairs)
    pairs.push_back({{"a", c.a}, {"b", c.b}, {"mean_difference", detail::optional_json(c.mean_difference)},
                     {"n_a", c.n_a}, {"n_b", c.n_b}, {"shared_seeds", c.shared_seeds},
                     {"paired_mean_difference", detail::optional_json(c.paired_mean_difference)},
                     {"welch", test_json(c.welch, c.welch_p_holm)},
                     {"paired", test_json(c.paired, c.paired_p_holm)}, {"note", c.note}});
  nlohmann::json extended = nlohmann::json::array();
  for (const ExtendedComparison& e : s.extended)
    extended.push_back({{"seed", e.seed}, {"steps", s.design.steps}, {"extended_steps", s.design.extended_steps},
                        {"val_at_steps", e.val_at_steps}, {"val_at_extended_steps", e.val_at_extended},
                        {"ranking_at_steps", e.ranking_at_steps}, {"ranking_at_extended_steps", e.ranking_at_extended},
                        {"complete", e.complete}, {"ranking_changed", e.ranking_changed}});
  nlohmann::json extrapolation = nlohmann::json::array();
  for (const ExtrapolationCell& c : s.extrapolation)
    extrapolation.push_back({{"variant", c.variant}, {"scaling", c.scaling}, {"fine_tune", c.fine_tune},
                             {"length", c.length}, {"protocol", c.protocol}, {"values", c.values},
                             {"mean", detail::optional_json(c.mean)}, {"sd", detail::optional_json(c.sd)},
                             {"note", c.note}});
  nlohmann::json scaling_comparisons = nlohmann::json::array();
  for (const ScalingComparison& c : s.scaling_comparisons)
    scaling_comparisons.push_back({{"variant", c.variant}, {"scaling", c.scaling}, {"fine_tune", c.fine_tune},
                                   {"length", c.length},
                                   {"protocol", "non_overlapping"}, {"n", c.n},
                                   {"mean_difference", c.mean_difference},
                                   {"paired", test_json(c.paired, c.p_holm)}});
  nlohmann::json position_curves = nlohmann::json::array();
  for (const PositionCurve& c : s.position_curves) {
    nlohmann::json sd = nlohmann::json::array();
    for (const auto& x : c.sd) sd.push_back(detail::optional_json(x));
    position_curves.push_back({{"variant", c.variant}, {"scaling", c.scaling}, {"fine_tune", c.fine_tune},
                               {"length", c.length}, {"n", c.n},
                               {"first", c.first}, {"last", c.last}, {"mean", c.mean}, {"sd", sd}});
  }
  nlohmann::json copy_probe = nlohmann::json::array();
  for (const CopyProbeCell& c : s.copy_probe)
    copy_probe.push_back({{"variant", c.variant}, {"scaling", c.scaling}, {"fine_tune", c.fine_tune},
                          {"distance", c.distance},
                          {"control_loss", c.control}, {"second_copy_loss", c.second},
                          {"mean_control_loss", detail::optional_json(c.mean_control)},
                          {"mean_second_copy_loss", detail::optional_json(c.mean_second)},
                          {"mean_drop", detail::optional_json(c.mean_drop)},
                          {"sd_drop", detail::optional_json(c.sd_drop)},
                          {"paired", test_json(c.paired, c.p_holm)}, {"note", c.note}});
  nlohmann::json extrapolate_rope = nlohmann::json::array();
  for (const RopeScaling& r : s.design.extrapolate_rope) extrapolate_rope.push_back(r.label());
  nlohmann::json fine_tune = nullptr;  // the fine-tunes' labels, in a row's order
  if (s.design.fine_tune_context != 0) {
    nlohmann::json rope = nlohmann::json::array();
    for (const RopeScaling& r : s.design.fine_tune_rope) rope.push_back(r.label());
    const FineTune plain{s.design.fine_tune_context, s.design.fine_tune_steps};
    fine_tune = {{"context", plain.context}, {"steps", plain.steps}, {"batch", fine_tune_training(s.design).batch},
                 {"label", plain.label()}, {"rope", rope}};
  }
  return {{"extrapolation", extrapolation},
          {"scaling_comparisons", scaling_comparisons},
          {"position_curves", position_curves},
          {"copy_probe", copy_probe},
          {"design", {{"variants", s.design.variants}, {"seeds", s.design.seeds}, {"steps", s.design.steps},
                      {"extrapolate", s.design.extrapolate}, {"per_position_bins", s.design.per_position_bins},
                      {"copy_probe", s.design.copy_probe}, {"copy_segments", s.design.copy_segments},
                      {"extrapolate_rope", extrapolate_rope}, {"fine_tune", fine_tune},
                      {"extended_steps", s.design.extended_steps}, {"extended_seeds", s.design.extended_seeds},
                      {"layers", s.design.run.layers}, {"dim", s.design.run.dim}, {"heads", s.design.run.heads},
                      {"batch", s.design.run.train.batch}, {"context", s.design.run.train.context},
                      {"lr", s.design.run.train.lr}, {"weight_decay", s.design.run.train.weight_decay},
                      {"embedding_std", s.design.run.embedding_std},
                      {"precision", precision_name(s.design.run.precision)},
                      {"run", to_json(s.design.run)}}},
          {"published_design", s.published_design},
          {"variants", variants}, {"ranking_by_seed", rankings},
          {"ranking_complete", s.ranking_complete}, {"ranking_consistent", s.ranking_consistent}, {"pairs", pairs},
          {"extended", extended}, {"missing_runs", s.missing_runs},
          {"task", s.task ? task_summary_json(*s.task) : nlohmann::json(nullptr)}};
}

// One row per variant: the numbers of the per-variant table.
inline std::string summary_csv(const StudySummary& s) {
  std::ostringstream out;
  out.precision(17);
  out << "variant,n,mean_val_loss,sd_val_loss,ci95_low,ci95_high,mean_train_loss,mean_gap,mean_tokens_per_second,"
         "published_mean_val_loss,published_sd_val_loss,mean_val_bits_per_byte\n";
  for (const VariantSummary& v : s.variants) {
    out << v.variant << ',' << v.val.size() << ',';
    if (v.val.empty()) {
      out << ",,,,,,,";
    } else {
      out << v.mean_val << ',';
      if (v.sd_val) out << *v.sd_val;
      out << ',';
      if (v.ci95_val) out << v.ci95_val->low << ',' << v.ci95_val->high;
      else out << ',';
      out << ',' << v.mean_train << ',' << v.mean_gap << ',' << v.mean_tokens_per_second << ',';
    }
    if (const auto it = published_results().find(v.variant); it != published_results().end())
      out << it->second.mean << ',' << it->second.sd;
    else
      out << ',';
    out << ',';
    if (!v.val.empty()) out << v.mean_val_bits_per_byte;
    out << '\n';
  }
  return out.str();
}

inline std::string summary_markdown(const StudySummary& s) {
  using detail::fixed;
  std::ostringstream md;
  const StudyDesign& d = s.design;
  md << "# Study summary\n\n"
     << d.run.layers << " layers, dim " << d.run.dim << ", " << d.run.heads << " heads, context " << d.run.train.context
     << ", batch " << d.run.train.batch << ", AdamW lr " << d.run.train.lr << ", weight decay "
     << d.run.train.weight_decay << ", embeddings initialised N(0, " << d.run.embedding_std << ")"
     << describe_training_settings(d.run)
     << (d.run.precision == Precision::bf16 ? ", bf16 GEMMs" : "") << "; " << d.steps << " steps; seeds ";
  for (std::size_t i = 0; i < d.seeds.size(); ++i) md << (i ? ", " : "") << d.seeds[i];
  if (d.run.task)
    md << ". A study of task " << task_name(d.run.task->kind) << ": final losses are the loss on the answers over "
       << task_loss_batches << " batches of the task's training and validation examples (the same for every run).\n\n";
  else
    md << ". Final losses are deterministic full passes (every target once, non-overlapping windows) in nats per "
       << (d.run.tokenizer.kind == TokenizerKind::bpe ? "token" : "byte") << " of tokenizer "
       << to_string(d.run.tokenizer)
       << (d.run.tokenizer.kind == TokenizerKind::bpe ? " (trained on the training text)" : "")
       << "; bits per byte divide them by ln 2 and the bytes a target stands for.\n\n";
  if (!s.missing_runs.empty())
    md << "**Missing runs** (not in the numbers below): " << detail::join(s.missing_runs, ", ") << "\n\n";
  if (s.task) md << task_summary_markdown(*s.task, d) << "\n";

  // nats per BPE token are another unit than the published nats per character
  const bool shows_published = !d.run.task && d.run.tokenizer.kind != TokenizerKind::bpe;
  if (d.run.task)
    md << "The published numbers are of Tiny Shakespeare and are not shown beside a task's.\n\n";
  else if (!shows_published)
    md << "The published losses are nats per character and are not shown beside nats per BPE token; bits per byte "
          "compare the two (the published divided by ln 2).\n\n";
  else if (!s.published_design)
    md << "This design differs from the published one (Tiny Shakespeare; 3 layers, dim 192, 4 heads, context 128, "
          "batch 32, 2000 steps, AdamW lr 0.001 constant, weight decay 0.01, no clipping, no dropout, weights "
          "N(0, 0.02), fp32): the published numbers are shown for reference only, not as a like-for-like "
          "comparison.\n\n";
  md << (d.run.task ? "## Loss on the answers by variant (validation examples)\n\n"
                     : "## Validation loss by variant\n\n")
     << "| variant | n | val loss mean ± sd | 95% CI | " << (d.run.task ? "" : "val bits/byte | ")
     << "train loss | gap (val − train) | tokens/s | published | reproduced − published |\n"
     << (d.run.task ? "" : "|---") << "|---|---|---|---|---|---|---|---|---|\n";
  for (const VariantSummary& v : s.variants) {
    md << "| " << v.variant << " | " << v.val.size() << " | ";
    if (v.val.empty()) {
      md << (d.run.task ? "" : "— | ") << "— | — | — | — | — | ";
    } else {
      md << fixed(v.mean_val) << (v.sd_val ? " ± " + fixed(*v.sd_val) : "") << " | "
         << (v.ci95_val ? "[" + fixed(v.ci95_val->low) + ", " + fixed(v.ci95_val->high) + "]" : "—") << " | "
         << (d.run.task ? "" : fixed(v.mean_val_bits_per_byte) + " | ") << fixed(v.mean_train) << " | "
         << fixed(v.mean_gap) << " | " << fixed(v.mean_tokens_per_second, 0) << " | ";
    }
    if (const auto it = published_results().find(v.variant); shows_published && it != published_results().end())
      md << fixed(it->second.mean) << " ± " << fixed(it->second.sd) << " | "
         << (v.val.empty() ? "—" : (v.mean_val - it->second.mean >= 0 ? "+" : "") + fixed(v.mean_val - it->second.mean))
         << " |\n";
    else
      md << "— | — |\n";
  }

  md << "\n## Ranking by seed (best first)\n\n| seed | ranking |\n|---|---|\n";
  for (std::uint64_t seed : d.seeds)  // in the design's order
    if (const auto it = s.ranking_by_seed.find(seed); it != s.ranking_by_seed.end())
      md << "| " << seed << " | " << detail::join(it->second, " < ") << " |\n";
  md << "\n"
     << (!s.ranking_complete ? "The rankings cannot be compared yet: not every seed has a finished run of every variant"
         : s.ranking_consistent ? "The ranking is the same in every seed"
                                : "The ranking is **not** the same in every seed")
     << (d.run.task ? "" : ". The published ranking: " + detail::join(published_ranking(), " < ")) << ".\n";

  md << "\n## Pairwise comparisons of the validation loss\n\n"
     << "Welch's t-test over all seeds and the paired t-test over the seeds both variants share; two-sided "
        "p-values from the exact t distribution, and Holm-adjusted over the "
     << detail::holm_family_text(s.pairs) << ".\n\n"
     << "| a | b | mean(a) − mean(b) | Welch t (df) | p | p (Holm) | paired t (df) | p | p (Holm) | note |\n"
     << "|---|---|---|---|---|---|---|---|---|---|\n";
  for (const PairComparison& c : s.pairs) {
    auto test = [](const std::optional<stats::TTest>& t) {
      return t ? fixed(t->t, 2) + " (" + fixed(t->df, 1) + ")" : std::string("—");
    };
    md << "| " << c.a << " | " << c.b << " | " << detail::signed_text(c.mean_difference);
    if (c.paired_mean_difference && (c.shared_seeds != c.n_a || c.shared_seeds != c.n_b))
      md << " (shared seeds: " << detail::signed_text(c.paired_mean_difference) << ")";
    md << " | " << test(c.welch) << " | " << detail::p_text(c.welch ? std::optional<double>(c.welch->p) : std::nullopt)
       << " | " << detail::p_text(c.welch_p_holm) << " | " << test(c.paired) << " | "
       << detail::p_text(c.paired ? std::optional<double>(c.paired->p) : std::nullopt) << " | "
       << detail::p_text(c.paired_p_holm) << " | " << c.note << " |\n";
  }

  const auto row_name = [](const std::string& variant, const std::string& fine_tune, const std::string& scaling) {
    return variant + (fine_tune == "none" ? "" : " · " + fine_tune) + (scaling == "none" ? "" : " · " + scaling);
  };
  const auto header = [&](const auto& columns, const std::string& prefix = "") {  // "| variant | … |" and its rule
    md << "| variant |";
    for (const auto& c : columns) md << " " << prefix << c << " |";
    md << "\n|---|";
    for (std::size_t i = 0; i < columns.size(); ++i) md << "---|";
    md << "\n";
  };
  const auto rows = [&](auto&& each) {  // each(variant, fine-tune label, scaling label) in the design's order
    for (const std::string& v : d.variants)
      for (const EvaluatedModel& model : evaluated_models(d, v))
        each(v, model.fine_tune_label(), model.scaling_label());
  };
  std::string fine_tune_sentence;
  if (d.fine_tune_context != 0) {
    fine_tune_sentence = " A row 'variant · ft C×N' is the base run's final model fine-tuned at context C for N steps "
                         "(batch " + std::to_string(fine_tune_training(d).batch) +
                         ", the other training settings the base run's)"
                         ", '· method ×s' (or '· base=B') under that RoPE scaling during and after the fine-tune.";
  }
  if (!s.extrapolation.empty()) {
    md << "\n## Length extrapolation (validation loss, trained at context " << d.run.train.context << ")\n\n"
       << "Mean ± sd over seeds of the final models of the " << d.steps
       << "-step runs. Non-overlapping: the split "
          "cut into windows of the length, every target scored once. Sliding: windows of the length moved by half "
          "of it, each target scored once, with at least half a window of context after the first window."
       << (d.extrapolate_rope.empty() ? ""
                                      : " A row 'variant · method ×s' (or '· base=B') is the rotary variant "
                                        "under that RoPE scaling (no training): the settings its label names, "
                                        "every other the model's own.")
       << fine_tune_sentence << "\n";
    for (const char* protocol : {"non_overlapping", "sliding"}) {
      md << "\n" << (std::string(protocol) == "sliding" ? "Sliding window" : "Non-overlapping windows") << ":\n\n";
      header(d.extrapolate);
      rows([&](const std::string& v, const std::string& tuned, const std::string& scaling) {
        md << "| " << row_name(v, tuned, scaling) << " |";
        for (const ExtrapolationCell& c : s.extrapolation)
          if (c.variant == v && c.fine_tune == tuned && c.scaling == scaling && c.protocol == protocol) {
            if (c.mean)
              md << " " << fixed(*c.mean) << (c.sd ? " ± " + fixed(*c.sd) : "")
                 << detail::fewer_seeds_text(c.values.size(), d.seeds.size()) << " |";
            else
              md << " " << (c.note.empty() ? "—" : "n/a") << " |";
          }
        md << "\n";
      });
    }
    md << "\nn/a: the model cannot take the length (a learned table has one row per trained position).\n";
  }

  if (!s.scaling_comparisons.empty()) {
    md << "\n## " << (d.fine_tune_context == 0 ? "RoPE scaling" : "RoPE scaling and fine-tuning")
       << " against the trained model\n\n"
       << "Validation loss of each row minus that of the base run's final model with its trained angles "
          "(non-overlapping windows), mean over seeds; the paired t-test by seed, Holm-adjusted over "
       << detail::tested_family_text(s.scaling_comparisons, "comparison")
       << " (a test needs two seeds whose differences are not all equal). Negative: the row does better.\n\n";
    header(d.extrapolate);
    rows([&](const std::string& v, const std::string& tuned, const std::string& scaling) {
      if (tuned == "none" && scaling == "none") return;
      md << "| " << row_name(v, tuned, scaling) << " |";
      for (const ScalingComparison& c : s.scaling_comparisons)
        if (c.variant == v && c.fine_tune == tuned && c.scaling == scaling)
          md << " " << (c.n == 0 ? "—" : (c.mean_difference >= 0 ? "+" : "") + fixed(c.mean_difference))
             << detail::fewer_seeds_text(c.n, d.seeds.size())
             << (c.paired ? " (p " + detail::p_text(c.p_holm) + ")" : "") << " |";
      md << "\n";
    });
  }

  if (!s.position_curves.empty()) {
    const std::size_t L = *std::max_element(d.extrapolate.begin(), d.extrapolate.end());
    md << "\n## Loss by position in a window of " << L << "\n\n"
       << "Mean over seeds of the validation loss at the positions of each range (non-overlapping windows); the "
          "model was trained at context "
       << d.run.train.context << ". Every length's curve is in summary.json; tools/plot_study.py draws them.\n\n";
    const PositionCurve* first_curve = nullptr;
    for (const PositionCurve& c : s.position_curves)
      if (c.length == L && first_curve == nullptr) first_curve = &c;
    if (first_curve != nullptr) {
      std::vector<std::string> ranges;
      for (std::size_t b = 0; b < first_curve->first.size(); ++b)
        ranges.push_back(std::to_string(first_curve->first[b]) + "–" + std::to_string(first_curve->last[b]));
      header(ranges);
      rows([&](const std::string& v, const std::string& tuned, const std::string& scaling) {
        for (const PositionCurve& c : s.position_curves)
          if (c.variant == v && c.fine_tune == tuned && c.scaling == scaling && c.length == L &&
              c.first == first_curve->first) {
            md << "| " << row_name(v, tuned, scaling) << detail::fewer_seeds_text(c.n, d.seeds.size()) << " |";
            for (double m : c.mean) md << " " << fixed(m, 3) << " |";
            md << "\n";
          }
      });
    }
  }

  if (!s.copy_probe.empty()) {
    md << "\n## Copy probe\n\n"
       << d.copy_segments
       << " segments A of n characters of the validation split, each after itself (A·A) "
          "and after an unrelated segment B from half the split away (B·A); the drop is the mean loss on A's "
          "targets after B minus after A (the same targets at the same positions, only in A·A readable n "
          "positions back). Mean ± sd over seeds, and the paired t-test of the two losses by seed, "
          "Holm-adjusted over "
       << detail::tested_family_text(s.copy_probe, "cell")
       << ". A drop near 0 says the model does not read from n back.\n\n";
    header(d.copy_probe, "n = ");
    rows([&](const std::string& v, const std::string& tuned, const std::string& scaling) {
      md << "| " << row_name(v, tuned, scaling) << " |";
      for (const CopyProbeCell& c : s.copy_probe)
        if (c.variant == v && c.fine_tune == tuned && c.scaling == scaling) {
          if (c.mean_drop)
            md << " " << fixed(*c.mean_drop, 3) << (c.sd_drop ? " ± " + fixed(*c.sd_drop, 3) : "")
               << detail::fewer_seeds_text(c.control.size(), d.seeds.size())
               << (c.paired ? " (p " + detail::p_text(c.p_holm) + ")" : "") << " |";
          else
            md << " " << (c.note.empty() ? "—" : "n/a") << " |";
        }
      md << "\n";
    });
    md << "\nn/a: the model cannot take 2 × n positions. —: no result, the run or its evaluation missing (records "
          "made before 2026-12-03 hold a probe against the first copy, which the study makes again).\n";
  }

  if (!s.extended.empty()) {
    md << "\n## Extended runs: " << d.steps << " and " << d.extended_steps << " steps\n\n";
    for (const ExtendedComparison& e : s.extended) {
      md << "Seed " << e.seed << (e.complete ? "" : " (incomplete)") << ":\n\n| variant | val at " << d.steps
         << " | val at " << d.extended_steps << " | change |\n|---|---|---|---|\n";
      for (const std::string& v : d.variants) {  // in the design's order
        if (!e.val_at_steps.contains(v)) continue;
        const double at_steps = e.val_at_steps.at(v), at_ext = e.val_at_extended.at(v);
        md << "| " << v << " | " << fixed(at_steps) << " | " << fixed(at_ext) << " | "
           << (at_ext - at_steps >= 0 ? "+" : "") << fixed(at_ext - at_steps) << " |\n";
      }
      if (e.complete)
        md << "\nRanking at " << d.steps << ": " << detail::join(e.ranking_at_steps, " < ") << "; at "
           << d.extended_steps << ": " << detail::join(e.ranking_at_extended, " < ") << " — "
           << (e.ranking_changed ? "**the ranking changed**" : "the ranking did not change") << ".\n\n";
      else
        md << "\nNot every variant has both runs for this seed yet, so the rankings are not compared.\n\n";
    }
  }
  return md.str();
}

// Writes OUT/summary.json, summary.csv and summary.md.
inline void write_summary(const StudySummary& s, const std::filesystem::path& out) {
  write_file_atomically((out / "summary.json").string(), summary_json(s).dump(2) + "\n");
  write_file_atomically((out / "summary.csv").string(), summary_csv(s));
  write_file_atomically((out / "summary.md").string(), summary_markdown(s));
  if (s.task) write_file_atomically((out / "summary_task.csv").string(), task_summary_csv(*s.task));
}

}  // namespace posenc
