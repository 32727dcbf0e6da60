// summarize_task(): a task study's exact-match accuracy by length and band of lengths over seeds, encodings compared.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "posenc/data/tasks.hpp"
#include "posenc/study/design.hpp"
#include "posenc/study/record.hpp"
#include "posenc/study/statistics.hpp"
#include "posenc/study/summary_text.hpp"

namespace posenc {

// Tested lengths by how far past the trained ones they reach: up to the longest trained length L
// (the trained range), then (L, 2L], (2L, 4L], (4L, 8L], …; a band without a tested length is left out.
struct LengthBand {
  std::size_t first = 0, last = 0;   // its bounds, both included
  std::vector<std::size_t> lengths = {};  // the tested lengths in it
  bool trained = false;              // the first band: no longer than the trained lengths
  std::string label() const {
    if (trained) return "≤ " + std::to_string(last) + " (trained)";
    return std::to_string(first) + "–" + std::to_string(last);
  }
};

inline std::vector<LengthBand> length_bands(std::size_t trained_max, const std::vector<std::size_t>& tested) {
  std::vector<LengthBand> bands;
  std::size_t first = 1, last = trained_max;
  for (std::size_t i = 0; i < tested.size();) {
    LengthBand band{first, last, {}, first == 1};
    for (; i < tested.size() && tested[i] <= last; ++i) band.lengths.push_back(tested[i]);
    if (!band.lengths.empty()) bands.push_back(std::move(band));
    first = last + 1;
    last = last > std::numeric_limits<std::size_t>::max() / 2 ? std::numeric_limits<std::size_t>::max() : 2 * last;
  }
  return bands;
}

// One model (a variant under one RoPE scaling) at one tested length: exact-match accuracy over seeds.
struct TaskLengthCell {
  std::string variant, scaling = "none";
  std::size_t length = 0;
  std::vector<double> accuracy = {};  // by seed, of those whose record has the length evaluated
  std::optional<double> mean = {}, sd = {};
  std::string note = {};  // why a seed has no value (a length past a learned table)
};

// One model over one band: each seed's mean accuracy over the band's lengths. A seed counts when its
// record has every length of the band evaluated, so no band mean leaves out its hardest lengths.
struct TaskBandCell {
  std::string variant, scaling = "none";
  std::size_t band = 0;  // an index into TaskSummary::bands
  std::vector<std::uint64_t> seeds = {};
  std::vector<double> accuracy = {};  // by seed, in seeds' order
  std::optional<double> mean = {}, sd = {};
  std::optional<stats::Interval> ci95 = {};
  std::string note = {};
};

// Two variants (each with its trained angles) over one band, paired by seed.
struct TaskPairComparison {
  std::string a, b;
  std::size_t band = 0;
  std::size_t shared_seeds = 0;
  std::optional<double> mean_difference = {};  // over the shared seeds, a − b
  std::optional<stats::TTest> paired = {};
  std::optional<double> p_holm = {};  // over the band's pairs with a test
  std::string note = {};              // why there is no test
};

// A run of a curriculum with a stage that may end at a loss: the step (trained) of its first early
// end, none when every stage took all its steps (the stage's loss never fell below its mark).
struct TaskStageEnd {
  std::string variant;
  std::uint64_t seed = 0;
  std::optional<std::int64_t> step = {};
};

struct TaskSummary {
  TaskSpec trained;
  std::vector<std::size_t> tested;
  std::size_t examples = 0;
  std::uint64_t seed = 0;
  std::vector<LengthBand> bands = {};
  std::vector<TaskLengthCell> lengths = {};   // by model (variant, then scaling), then length
  std::vector<TaskBandCell> band_cells = {};  // by model, then band
  std::vector<TaskPairComparison> pairs = {};  // by band, then pair
  std::vector<TaskStageEnd> stage_ends = {};   // by variant, then seed; only for such a curriculum
};

namespace detail {
// A task entry's accuracy when it was made as the design asks (its seed and example count).
inline std::optional<double> design_accuracy(const nlohmann::json* entry, const StudyDesign& d) {
  if (entry == nullptr || !entry->contains("accuracy") || entry->value("seed", std::uint64_t{0}) != d.task_seed ||
      entry->at("examples").get<std::size_t>() != d.task_examples)
    return std::nullopt;
  return entry->at("accuracy").get<double>();
}

inline bool has_stage_ending_at_loss(const TaskSpec& spec) {
  return std::any_of(spec.curriculum.begin(), spec.curriculum.end(),
                     [](const TaskStage& stage) { return stage.until_loss.has_value(); });
}
}  // namespace detail

// The summary of a task study (design.run.task set) from the base run find(variant, seed) returns
// (nullptr: none), each variant under each scaling the design evaluates it with.
template <class FindRun>
TaskSummary summarize_task(const StudyDesign& d, FindRun find) {
  TaskSummary s{*d.run.task, tested_task_lengths(d), d.task_examples, d.task_seed};
  s.bands = length_bands(s.trained.lengths.max, s.tested);
  if (detail::has_stage_ending_at_loss(s.trained))
    for (const std::string& v : d.variants)
      for (std::uint64_t seed : d.seeds)
        if (const RunRecord* r = find(v, seed)) {
          TaskStageEnd end{.variant = v, .seed = seed};
          for (const EvalRecord& e : r->curve)
            if (e.skipped_steps != 0) {
              end.step = e.step;
              break;
            }
          s.stage_ends.push_back(std::move(end));
        }
  for (const std::string& v : d.variants)
    for (const EvaluatedModel& model : evaluated_models(d, v)) {
      const std::string label = model.scaling_label();
      for (std::size_t n : s.tested) {
        TaskLengthCell cell{.variant = v, .scaling = label, .length = n};
        for (std::uint64_t seed : d.seeds)
          if (const RunRecord* r = find(v, seed)) {
            const nlohmann::json* e = r->task_at(n, model.scaling);
            if (const auto accuracy = detail::design_accuracy(e, d)) cell.accuracy.push_back(*accuracy);
            else if (e != nullptr && e->contains("note")) cell.note = e->at("note").get<std::string>();
          }
        if (!cell.accuracy.empty()) {
          cell.mean = stats::mean(cell.accuracy);
          cell.sd = stats::sample_sd(cell.accuracy);
        }
        s.lengths.push_back(std::move(cell));
      }
      for (std::size_t b = 0; b < s.bands.size(); ++b) {
        TaskBandCell cell{.variant = v, .scaling = label, .band = b};
        for (std::uint64_t seed : d.seeds) {
          const RunRecord* r = find(v, seed);
          if (r == nullptr) continue;
          double sum = 0;
          bool whole = true;
          for (std::size_t n : s.bands[b].lengths) {
            const nlohmann::json* e = r->task_at(n, model.scaling);
            const auto accuracy = detail::design_accuracy(e, d);
            if (!accuracy) {
              if (e != nullptr && e->contains("note"))
                cell.note = "from length " + std::to_string(n) + " " + e->at("note").get<std::string>();
              whole = false;
              break;
            }
            sum += *accuracy;
          }
          if (!whole) continue;
          cell.seeds.push_back(seed);
          cell.accuracy.push_back(sum / static_cast<double>(s.bands[b].lengths.size()));
        }
        if (!cell.accuracy.empty()) {
          cell.mean = stats::mean(cell.accuracy);
          cell.sd = stats::sample_sd(cell.accuracy);
          cell.ci95 = stats::confidence_interval(cell.accuracy);
        }
        s.band_cells.push_back(std::move(cell));
      }
    }
  // every pair of variants with their trained angles, band by band; Holm within each band
  const auto base_cell = [&](const std::string& v, std::size_t b) -> const TaskBandCell& {
    return *std::find_if(s.band_cells.begin(), s.band_cells.end(),
                         [&](const TaskBandCell& c) { return c.variant == v && c.scaling == "none" && c.band == b; });
  };
  for (std::size_t b = 0; b < s.bands.size(); ++b) {
    const std::size_t first = s.pairs.size();
    for (std::size_t i = 0; i < d.variants.size(); ++i)
      for (std::size_t j = i + 1; j < d.variants.size(); ++j) {
        const TaskBandCell &a = base_cell(d.variants[i], b), &c = base_cell(d.variants[j], b);
        TaskPairComparison pair{.a = a.variant, .b = c.variant, .band = b};
        const auto [pa, pb] = stats::shared_pairs(a.seeds, a.accuracy, c.seeds, c.accuracy);
        pair.shared_seeds = pa.size();
        if (!pa.empty()) pair.mean_difference = stats::mean(pa) - stats::mean(pb);
        pair.paired = stats::paired_t_test(pa, pb);
        if (pa.size() < 2) pair.note = "fewer than two seeds with the band evaluated for both: no test";
        else if (!pair.paired) pair.note = "the same difference in every seed: no t-test";
        s.pairs.push_back(std::move(pair));
      }
    std::vector<std::optional<double>> p;
    for (std::size_t k = first; k < s.pairs.size(); ++k)
      p.push_back(s.pairs[k].paired ? std::optional<double>(s.pairs[k].paired->p) : std::nullopt);
    const auto adjusted = stats::holm(p);
    for (std::size_t k = first; k < s.pairs.size(); ++k) s.pairs[k].p_holm = adjusted[k - first];
  }
  return s;
}

inline nlohmann::json task_summary_json(const TaskSummary& s) {
  using detail::optional_json;
  nlohmann::json bands = nlohmann::json::array(), lengths = nlohmann::json::array(),
                 band_cells = nlohmann::json::array(), pairs = nlohmann::json::array();
  for (const LengthBand& b : s.bands)
    bands.push_back({{"label", b.label()}, {"first", b.first}, {"last", b.last}, {"lengths", b.lengths},
                     {"trained", b.trained}});
  for (const TaskLengthCell& c : s.lengths)
    lengths.push_back({{"variant", c.variant}, {"scaling", c.scaling}, {"length", c.length},
                       {"accuracy", c.accuracy}, {"mean", optional_json(c.mean)}, {"sd", optional_json(c.sd)},
                       {"note", c.note}});
  for (const TaskBandCell& c : s.band_cells)
    band_cells.push_back({{"variant", c.variant}, {"scaling", c.scaling}, {"band", s.bands[c.band].label()},
                          {"seeds", c.seeds}, {"accuracy", c.accuracy}, {"mean", optional_json(c.mean)},
                          {"sd", optional_json(c.sd)},
                          {"ci95", c.ci95 ? nlohmann::json{c.ci95->low, c.ci95->high} : nlohmann::json(nullptr)},
                          {"note", c.note}});
  for (const TaskPairComparison& c : s.pairs)
    pairs.push_back({{"a", c.a}, {"b", c.b}, {"band", s.bands[c.band].label()}, {"shared_seeds", c.shared_seeds},
                     {"mean_difference", optional_json(c.mean_difference)},
                     {"t", c.paired ? nlohmann::json(c.paired->t) : nlohmann::json(nullptr)},
                     {"df", c.paired ? nlohmann::json(c.paired->df) : nlohmann::json(nullptr)},
                     {"p", c.paired ? nlohmann::json(c.paired->p) : nlohmann::json(nullptr)},
                     {"p_holm", optional_json(c.p_holm)}, {"note", c.note}});
  nlohmann::json j = {{"task", task_name(s.trained.kind)}, {"trained_lengths", to_string(s.trained.lengths)},
                      {"tested_lengths", length_list_text(s.tested)}, {"examples", s.examples}, {"seed", s.seed},
                      {"bands", bands}, {"lengths", lengths}, {"band_cells", band_cells}, {"pairs", pairs}};
  if (!s.trained.curriculum.empty()) j["curriculum"] = to_string(s.trained.curriculum);  // absent: none
  if (detail::has_stage_ending_at_loss(s.trained)) {
    nlohmann::json ends = nlohmann::json::array();
    for (const TaskStageEnd& e : s.stage_ends)
      ends.push_back({{"variant", e.variant},
                      {"seed", e.seed},
                      {"step", e.step ? nlohmann::json(*e.step) : nlohmann::json(nullptr)}});
    j["stage_ends"] = ends;  // null step: no stage ended early
  }
  return j;
}

// One row per model and tested length: the accuracy's mean and sd over seeds.
inline std::string task_summary_csv(const TaskSummary& s) {
  std::ostringstream csv;
  csv << "variant,scaling,length,seeds,mean_accuracy,sd_accuracy\n";
  for (const TaskLengthCell& c : s.lengths)
    csv << c.variant << "," << c.scaling << "," << c.length << "," << c.accuracy.size() << ","
        << (c.mean ? detail::fixed(*c.mean) : "") << "," << (c.sd ? detail::fixed(*c.sd) : "") << "\n";
  return csv.str();
}

namespace detail {
// "0.990 ± 0.010 [0.96, 1.00]", "—" or a note's gist; " [2 seeds]" when fewer than the design has.
inline std::string band_cell_text(const TaskBandCell& c, std::size_t design_seeds) {
  if (!c.mean) return c.note.empty() ? "—" : "n/a";
  std::string text = fixed(*c.mean, 3) + (c.sd ? " ± " + fixed(*c.sd, 3) : "");
  if (c.ci95)
    text += " [" + fixed(std::max(0.0, c.ci95->low), 2) + ", " + fixed(std::min(1.0, c.ci95->high), 2) + "]";
  return text + fewer_seeds_text(c.accuracy.size(), design_seeds);
}

// The tested lengths nearest to ½, 1, 1½, 2, 3, 4, 6 and 8 times the longest trained one: the
// single-length columns of the summary (the rest are in its CSV and JSON).
inline std::vector<std::size_t> landmark_lengths(const TaskSummary& s) {
  std::vector<std::size_t> picked;
  for (const double times : {0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0}) {
    const double want = times * static_cast<double>(s.trained.lengths.max);
    const auto nearest = std::min_element(s.tested.begin(), s.tested.end(), [&](std::size_t x, std::size_t y) {
      return std::abs(static_cast<double>(x) - want) < std::abs(static_cast<double>(y) - want);
    });
    if (nearest != s.tested.end() && std::find(picked.begin(), picked.end(), *nearest) == picked.end())
      picked.push_back(*nearest);
  }
  return picked;
}
}  // namespace detail

inline std::string task_summary_markdown(const TaskSummary& s, const StudyDesign& d) {
  using detail::fixed;
  std::ostringstream md;
  const TaskInfo& info = task_info(s.trained.kind);
  md << "## Task " << info.name << ": trained on lengths " << to_string(s.trained.lengths) << "\n\n";
  if (!s.trained.curriculum.empty())
    md << "Each run first trained through the curriculum " << to_string(s.trained.curriculum)
       << " (lengths:steps, stage by stage), then on lengths " << to_string(s.trained.lengths) << ".\n\n";
  if (detail::has_stage_ending_at_loss(s.trained)) {
    std::string ended, never;
    for (const TaskStageEnd& e : s.stage_ends) {
      const std::string run = e.variant + " seed " + std::to_string(e.seed);
      if (e.step) ended += (ended.empty() ? "" : ", ") + run + " at step " + std::to_string(*e.step);
      else never += (never.empty() ? "" : ", ") + run;
    }
    md << "A stage written LENGTHS:STEPS@LOSS ends at the first evaluation whose validation loss on its examples is "
          "below LOSS, and the run skips the steps it leaves. Ended early: "
       << (ended.empty() ? "none" : ended) << ". Never (every stage took all its steps): "
       << (never.empty() ? "none" : never) << ".\n\n";
  }
  md << info.summary << "; a length counts " << info.length << ". Every model answers " << s.examples
     << " examples of each tested length (" << length_list_text(s.tested) << "), drawn from seed " << s.seed
     << ", each length its own stream. Accuracy is exact match: every answer character the model's most likely one, "
        "each predicted from the true characters before it. n/a: the model cannot take the length (a learned "
        "table ends at its trained context).\n\n";
  std::vector<std::string> models;  // "variant" or "variant · scaling", in the summary's order
  for (const TaskBandCell& c : s.band_cells)
    if (c.band == 0) models.push_back(c.scaling == "none" ? c.variant : c.variant + " · " + c.scaling);
  md << "### Exact-match accuracy by band of lengths (mean ± sd over seeds [95% CI])\n\n| variant |";
  for (const LengthBand& b : s.bands) md << " " << b.label() << " |";
  md << "\n|---|";
  for (std::size_t b = 0; b < s.bands.size(); ++b) md << "---|";
  for (std::size_t m = 0; m < models.size(); ++m) {
    md << "\n| " << models[m] << " |";
    for (std::size_t b = 0; b < s.bands.size(); ++b)
      md << " " << detail::band_cell_text(s.band_cells[m * s.bands.size() + b], d.seeds.size()) << " |";
  }
  const std::vector<std::size_t> landmarks = detail::landmark_lengths(s);
  md << "\n\n### Exact-match accuracy at single lengths (mean over seeds)\n\n| variant |";
  for (std::size_t n : landmarks) md << " " << n << " |";
  md << "\n|---|";
  for (std::size_t i = 0; i < landmarks.size(); ++i) md << "---|";
  for (std::size_t m = 0; m < models.size(); ++m) {
    md << "\n| " << models[m] << " |";
    for (std::size_t n : landmarks) {
      const std::size_t at =
          static_cast<std::size_t>(std::find(s.tested.begin(), s.tested.end(), n) - s.tested.begin());
      const TaskLengthCell& c = s.lengths[m * s.tested.size() + at];
      md << " " << (c.mean ? fixed(*c.mean, 2) : c.note.empty() ? "—" : "n/a") << " |";
    }
  }
  md << "\n\n### Encodings compared band by band\n\n"
        "Mean accuracy of a − b over the seeds both have, the paired t-test by seed (two-sided p), Holm-adjusted "
        "over each band's pairs with a test; a blank p: fewer than two shared seeds, or the same difference in "
        "every seed (both always right or always wrong).\n\n| a | b |";
  for (const LengthBand& b : s.bands) md << " " << b.label() << ": a − b | p (Holm) |";
  md << "\n|---|---|";
  for (std::size_t b = 0; b < s.bands.size(); ++b) md << "---|---|";
  const std::size_t pairs_per_band = s.bands.empty() ? 0 : s.pairs.size() / s.bands.size();
  for (std::size_t k = 0; k < pairs_per_band; ++k) {
    md << "\n| " << s.pairs[k].a << " | " << s.pairs[k].b << " |";
    for (std::size_t b = 0; b < s.bands.size(); ++b) {
      const TaskPairComparison& c = s.pairs[b * pairs_per_band + k];
      md << " ";  // the sign streamed apart: GCC 12 at -O3 warns (-Wstringop-overflow) on "+" + string
      if (c.mean_difference) md << (*c.mean_difference >= 0 ? "+" : "") << fixed(*c.mean_difference, 3);
      else md << "—";
      md << " | " << (c.p_holm ? detail::p_text(c.p_holm) : "") << " |";
    }
  }
  md << "\n";
  return md.str();
}

}  // namespace posenc
