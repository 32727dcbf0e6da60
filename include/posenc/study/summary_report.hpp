// summary_json, summary_csv, summary_markdown, write_summary: a StudySummary as the files a study writes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "posenc/io/atomic_file.hpp"
#include "posenc/study/statistics.hpp"
#include "posenc/study/summary.hpp"
#include "posenc/study/summary_text.hpp"
#include "posenc/study/task_summary.hpp"

namespace posenc {

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

namespace detail {

// summary_markdown's sections, in the order they appear, each writing into md; a section with
// nothing to show writes nothing.
class SummaryMarkdown {
 public:
  explicit SummaryMarkdown(const StudySummary& summary)
      : s(summary),
        d(summary.design),
        // nats per BPE token are another unit than the published nats per character
        shows_published(!d.run.task && d.run.tokenizer.kind != TokenizerKind::bpe) {}

  std::string text() {
    design();
    variants();
    rankings();
    pairs();
    extrapolation();
    scaling_comparisons();
    position_curves();
    copy_probe();
    extended();
    return md.str();
  }

 private:
  const StudySummary& s;
  const StudyDesign& d;
  const bool shows_published;
  std::ostringstream md;

  // The rows of the evaluations' tables: a variant, its fine-tune and its scaling.
  static std::string row_name(const std::string& variant, const std::string& fine_tune, const std::string& scaling) {
    return variant + (fine_tune == "none" ? "" : " · " + fine_tune) + (scaling == "none" ? "" : " · " + scaling);
  }
  // "| variant | … |" and its rule
  template <class Columns>
  void header(const Columns& columns, const std::string& prefix = "") {
    md << "| variant |";
    for (const auto& c : columns) md << " " << prefix << c << " |";
    md << "\n|---|";
    for (std::size_t i = 0; i < columns.size(); ++i) md << "---|";
    md << "\n";
  }
  // each(variant, fine-tune label, scaling label) for every evaluated model, in the design's order
  template <class Each>
  void rows(Each&& each) {
    for (const std::string& v : d.variants)
      for (const EvaluatedModel& model : evaluated_models(d, v))
        each(v, model.fine_tune_label(), model.scaling_label());
  }

  // The design, the losses' unit, missing runs, a task's tables, how the published numbers relate.
  void design() {
    md << "# Study summary\n\n"
       << d.run.layers << " layers, dim " << d.run.dim << ", " << d.run.heads << " heads, context "
       << d.run.train.context << ", batch " << d.run.train.batch << ", AdamW lr " << d.run.train.lr << ", weight decay "
       << d.run.train.weight_decay << ", embeddings initialised N(0, " << d.run.embedding_std << ")"
       << describe_training_settings(d.run) << (d.run.precision == Precision::bf16 ? ", bf16 GEMMs" : "") << "; "
       << d.steps << " steps; seeds ";
    for (std::size_t i = 0; i < d.seeds.size(); ++i) md << (i ? ", " : "") << d.seeds[i];
    if (d.run.task)
      md << ". A study of task " << task_name(d.run.task->kind) << ": final losses are the loss on the answers over "
         << task_loss_batches
         << " batches of the task's training and validation examples (the same for every run).\n\n";
    else
      md << ". Final losses are deterministic full passes (every target once, non-overlapping windows) in nats per "
         << (d.run.tokenizer.kind == TokenizerKind::bpe ? "token" : "byte") << " of tokenizer "
         << to_string(d.run.tokenizer)
         << (d.run.tokenizer.kind == TokenizerKind::bpe ? " (trained on the training text)" : "")
         << "; bits per byte divide them by ln 2 and the bytes a target stands for.\n\n";
    if (!s.missing_runs.empty())
      md << "**Missing runs** (not in the numbers below): " << detail::join(s.missing_runs, ", ") << "\n\n";
    if (s.task) md << task_summary_markdown(*s.task, d) << "\n";

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
  }

  // The validation loss by variant, beside the published numbers where they compare.
  void variants() {
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
           << (v.val.empty() ? "—"
                             : (v.mean_val - it->second.mean >= 0 ? "+" : "") + fixed(v.mean_val - it->second.mean))
           << " |\n";
      else
        md << "— | — |\n";
    }
  }

  // Each seed's ranking, and whether the seeds agree.
  void rankings() {
    md << "\n## Ranking by seed (best first)\n\n| seed | ranking |\n|---|---|\n";
    for (std::uint64_t seed : d.seeds)  // in the design's order
      if (const auto it = s.ranking_by_seed.find(seed); it != s.ranking_by_seed.end())
        md << "| " << seed << " | " << detail::join(it->second, " < ") << " |\n";
    md << "\n"
       << (!s.ranking_complete
               ? "The rankings cannot be compared yet: not every seed has a finished run of every variant"
           : s.ranking_consistent ? "The ranking is the same in every seed"
                                  : "The ranking is **not** the same in every seed")
       << (d.run.task ? "" : ". The published ranking: " + detail::join(published_ranking(), " < ")) << ".\n";
  }

  // Welch's and the paired t-test of every pair, Holm-adjusted.
  void pairs() {
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
      md << " | " << test(c.welch) << " | "
         << detail::p_text(c.welch ? std::optional<double>(c.welch->p) : std::nullopt) << " | "
         << detail::p_text(c.welch_p_holm) << " | " << test(c.paired) << " | "
         << detail::p_text(c.paired ? std::optional<double>(c.paired->p) : std::nullopt) << " | "
         << detail::p_text(c.paired_p_holm) << " | " << c.note << " |\n";
    }
  }

  // The loss at each evaluated length, in both protocols.
  void extrapolation() {
    if (s.extrapolation.empty()) return;
    std::string fine_tune_sentence;
    if (d.fine_tune_context != 0) {
      fine_tune_sentence =
          " A row 'variant · ft C×N' is the base run's final model fine-tuned at context C for N steps "
          "(batch " +
          std::to_string(fine_tune_training(d).batch) +
          ", the other training settings the base run's)"
          ", '· method ×s' (or '· base=B') under that RoPE scaling during and after the fine-tune.";
    }
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

  // Each RoPE scaling or fine-tune against the base model with its trained angles.
  void scaling_comparisons() {
    if (s.scaling_comparisons.empty()) return;
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

  // The loss by position in the longest evaluated window.
  void position_curves() {
    if (s.position_curves.empty()) return;
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

  // The copy probe's drop at each distance.
  void copy_probe() {
    if (s.copy_probe.empty()) return;
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

  // The extended runs against the base ones, seed by seed.
  void extended() {
    if (s.extended.empty()) return;
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
};

}  // namespace detail

inline std::string summary_markdown(const StudySummary& s) { return detail::SummaryMarkdown(s).text(); }

// Writes OUT/summary.json, summary.csv and summary.md.
inline void write_summary(const StudySummary& s, const std::filesystem::path& out) {
  write_file_atomically((out / "summary.json").string(), summary_json(s).dump(2) + "\n");
  write_file_atomically((out / "summary.csv").string(), summary_csv(s));
  write_file_atomically((out / "summary.md").string(), summary_markdown(s));
  if (s.task) write_file_atomically((out / "summary_task.csv").string(), task_summary_csv(*s.task));
}

}  // namespace posenc
