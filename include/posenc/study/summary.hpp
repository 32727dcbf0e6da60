// summarize_study(): the statistics over a study's finished runs (summary_report.hpp writes them).
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

}  // namespace posenc
