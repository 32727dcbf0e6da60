// summarize_grid(): a grid study's statistics — the variants within each setting, and each variant across settings.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "posenc/io/atomic_file.hpp"
#include "posenc/study/design.hpp"
#include "posenc/study/grid.hpp"
#include "posenc/study/record.hpp"
#include "posenc/study/statistics.hpp"
#include "posenc/study/summary_report.hpp"

namespace posenc {

// One variant at one grid point against the same variant at another (the baseline), paired by
// seed over the seeds both have.
struct SettingComparison {
  std::string variant;
  std::string setting, baseline;  // setting_label()
  std::vector<std::uint64_t> seeds;
  std::vector<double> val, baseline_val;  // final validation losses (or bits per byte: GridSummary), by seed
  double mean_difference = 0;             // mean of val − baseline_val
  std::optional<stats::TTest> test;       // paired
  std::optional<double> p_holm;           // Holm-adjusted over every comparison of the summary
};

// A task study's: one variant's exact-match accuracy over one band of lengths at one grid point
// against the same variant at another, paired by seed over the seeds with the band evaluated at both.
struct TaskSettingComparison {
  std::string variant = {};
  std::string setting = {}, baseline = {};  // setting_label()
  std::size_t band = 0;                     // an index into the task summary's bands
  std::vector<std::uint64_t> seeds = {};
  std::vector<double> accuracy = {}, baseline_accuracy = {};  // the band's mean accuracy, by seed
  std::optional<double> mean_difference = {};                 // of accuracy − baseline_accuracy
  std::optional<stats::TTest> test = {};                      // paired
  std::optional<double> p_holm = {};  // Holm-adjusted over the band's comparisons with a test
};

struct GridSummary {
  StudyDesign design;
  std::vector<std::pair<GridPoint, StudySummary>> settings;  // the variants compared within each point
  std::vector<SettingComparison> across;                      // each variant, comparison_pairs' order
  std::vector<TaskSettingComparison> task_across;             // a task's: by band, then as `across`
  // Whether `across` compares bits per byte, not nats: a grid that crosses the tokens, whose nats
  // per token are not one scale.
  bool in_bits_per_byte = false;
};

inline bool grid_crosses_tokens(const StudyDesign& d) {
  for (const GridPoint& point : study_points(d))
    if (point.sets("tokenizer") || point.sets("vocab_size")) return true;
  return false;
}

// A point's name in a summary: its settings, or for the empty point of a listed grid the study's own.
inline std::string setting_label(const GridPoint& point) {
  return point.values.empty() ? "the study's settings" : point.label();
}

// The design of one grid point: no grid, the point's settings applied.
inline StudyDesign design_at(const StudyDesign& design, const GridPoint& point) {
  StudyDesign at = design;
  at.grid.clear();
  at.grid_list.clear();
  at.run = with_setting(design.run, point);
  return at;
}

// Whether a record was made at the design `at` of a point: its configuration has at's value of
// every setting the grid varies (`names`, grid_setting_names) — also of those the point leaves as
// they are, so that a listed point's records are not also those of a point with fewer settings.
inline bool made_at(const RunRecord& record, const StudyDesign& at, const std::vector<std::string>& names) {
  const nlohmann::json made = complete_json(record.config), wanted = complete_json(at.run);
  for (const std::string& name : names)
    if (made.at(name) != wanted.at(name)) return false;
  return true;
}

// Which point is compared with which, as (point, baseline) indices into study_points(design):
// every point but the first against the first (a listed grid's points against the study's own
// settings; a crossed grid's combined effect); and in a grid of several axes, each point against
// the point that differs from it only in one axis, set back to its first value, so each axis's
// effect is also seen with the others held (a 2 × 2 grid: the two single changes against the
// first, and the corner against each of them and against the first).
inline std::vector<std::pair<std::size_t, std::size_t>> comparison_pairs(const StudyDesign& design) {
  const std::vector<GridPoint> points = study_points(design);
  std::vector<std::pair<std::size_t, std::size_t>> pairs;
  for (std::size_t k = 1; k < points.size(); ++k) {
    pairs.emplace_back(k, 0);
    if (design.grid.size() < 2) continue;
    for (std::size_t a = 0; a < design.grid.size(); ++a) {
      GridPoint held = points[k];
      held.values[a].second = design.grid[a].values.front();
      const auto baseline = static_cast<std::size_t>(std::find(points.begin(), points.end(), held) - points.begin());
      if (baseline != k && baseline != 0) pairs.emplace_back(k, baseline);  // against the first is above
    }
  }
  return pairs;
}

// How one setting ranks the variants: the ranking of their mean validation losses, and how many
// seeds rank them that way and the published way.
struct RankingAgreement {
  std::vector<std::string> ranking_of_means;      // best first; empty unless every variant has a run
  std::size_t seeds_ranked = 0;                   // the seeds with a finished run of every variant
  std::size_t seeds_ranked_as_means = 0;          // of those, the seeds that rank as the means do
  std::optional<std::size_t> seeds_ranked_as_published;  // as the published means do (if all were published)
};

inline RankingAgreement ranking_agreement(const StudySummary& s) {
  RankingAgreement a;
  std::map<std::string, double> means;
  for (const VariantSummary& v : s.variants)
    if (!v.val.empty()) means[v.variant] = v.mean_val;
  if (means.size() == s.design.variants.size()) a.ranking_of_means = detail::rank_variants(means);
  const std::optional<std::vector<std::string>> published = published_ranking(s.design.variants);
  if (published) a.seeds_ranked_as_published = 0;
  for (const auto& [seed, ranking] : s.ranking_by_seed) {
    if (ranking.size() != s.design.variants.size()) continue;
    ++a.seeds_ranked;
    if (ranking == a.ranking_of_means) ++a.seeds_ranked_as_means;
    if (published && ranking == *published) ++*a.seeds_ranked_as_published;
  }
  return a;
}

namespace detail {
// A task study's accuracy by band: each variant at the points comparison_pairs() names against
// their baselines, paired by seed; Holm within each band, as the task summary tests its pairs.
inline void compare_task_across(GridSummary& g, const StudyDesign& design) {
  const auto band_cell = [](const StudySummary& s, const std::string& variant,
                            std::size_t band) -> const TaskBandCell* {
    for (const TaskBandCell& c : s.task->band_cells)
      if (c.variant == variant && c.scaling == "none" && c.band == band) return &c;
    return nullptr;
  };
  const std::size_t bands = g.settings.front().second.task->bands.size();
  for (std::size_t b = 0; b < bands; ++b) {
    const std::size_t first = g.task_across.size();
    for (const std::string& variant : design.variants)
      for (const auto& [k, base] : comparison_pairs(design)) {
        TaskSettingComparison c{.variant = variant, .setting = setting_label(g.settings[k].first),
                                .baseline = setting_label(g.settings[base].first), .band = b};
        const TaskBandCell* at = band_cell(g.settings[k].second, variant, b);
        const TaskBandCell* against = band_cell(g.settings[base].second, variant, b);
        if (at != nullptr && against != nullptr) {
          auto [mine, theirs] = stats::shared_pairs(at->seeds, at->accuracy, against->seeds, against->accuracy);
          for (const std::uint64_t seed : at->seeds)
            if (std::find(against->seeds.begin(), against->seeds.end(), seed) != against->seeds.end())
              c.seeds.push_back(seed);
          c.accuracy = std::move(mine);
          c.baseline_accuracy = std::move(theirs);
          if (!c.accuracy.empty()) c.mean_difference = stats::mean(c.accuracy) - stats::mean(c.baseline_accuracy);
          c.test = stats::paired_t_test(c.accuracy, c.baseline_accuracy);
        }
        g.task_across.push_back(std::move(c));
      }
    std::vector<std::optional<double>> p;
    for (std::size_t i = first; i < g.task_across.size(); ++i)
      p.push_back(g.task_across[i].test ? std::optional<double>(g.task_across[i].test->p) : std::nullopt);
    const auto adjusted = stats::holm(p);
    for (std::size_t i = first; i < g.task_across.size(); ++i) g.task_across[i].p_holm = adjusted[i - first];
  }
}
}  // namespace detail

// Every point's summary (summarize_study over its records), and each variant's final validation
// loss at the points comparison_pairs() names against their baselines, paired by seed,
// Holm-adjusted together; in a task study also each variant's accuracy by band the same way.
inline GridSummary summarize_grid(const StudyDesign& design, const std::vector<RunRecord>& records) {
  GridSummary g;
  g.design = design;
  g.in_bits_per_byte = grid_crosses_tokens(design);
  const std::vector<std::string> names = grid_setting_names(design);
  for (const GridPoint& point : study_points(design)) {
    const StudyDesign at = design_at(design, point);
    std::vector<RunRecord> mine;
    for (const RunRecord& r : records)
      if (made_at(r, at, names)) mine.push_back(r);
    g.settings.emplace_back(point, summarize_study(at, mine, point));
  }
  std::vector<std::optional<double>> p;
  for (const std::string& variant : design.variants) {
    const auto by_seed = [&](const StudySummary& s) {
      std::map<std::uint64_t, double> val;
      for (const VariantSummary& v : s.variants)
        if (v.variant == variant)
          for (std::size_t i = 0; i < v.seeds.size(); ++i)
            val[v.seeds[i]] = g.in_bits_per_byte ? v.val_bits_per_byte[i] : v.val[i];
      return val;
    };
    for (const auto& [k, base] : comparison_pairs(design)) {
      const std::map<std::uint64_t, double> baseline = by_seed(g.settings[base].second);
      SettingComparison c;
      c.variant = variant;
      c.setting = setting_label(g.settings[k].first);
      c.baseline = setting_label(g.settings[base].first);
      for (const auto& [seed, val] : by_seed(g.settings[k].second))
        if (const auto it = baseline.find(seed); it != baseline.end()) {
          c.seeds.push_back(seed);
          c.val.push_back(val);
          c.baseline_val.push_back(it->second);
        }
      if (!c.val.empty()) c.mean_difference = stats::mean(c.val) - stats::mean(c.baseline_val);
      c.test = stats::paired_t_test(c.val, c.baseline_val);
      p.push_back(c.test ? std::optional<double>(c.test->p) : std::nullopt);
      g.across.push_back(std::move(c));
    }
  }
  const auto adjusted = stats::holm(p);
  for (std::size_t i = 0; i < g.across.size(); ++i) g.across[i].p_holm = adjusted[i];
  if (!g.settings.empty() && g.settings.front().second.task) detail::compare_task_across(g, design);
  return g;
}

inline nlohmann::json grid_summary_json(const GridSummary& g) {
  nlohmann::json grid = nlohmann::json::array();
  for (const GridAxis& axis : g.design.grid) grid.push_back({{"name", axis.name}, {"values", axis.values}});
  nlohmann::json settings = nlohmann::json::array();
  for (const auto& [point, summary] : g.settings) {
    nlohmann::json values = nlohmann::json::object();
    for (const auto& [name, value] : point.values) values[name] = value;
    const RankingAgreement a = ranking_agreement(summary);
    const nlohmann::json as_published =
        a.seeds_ranked_as_published ? nlohmann::json(*a.seeds_ranked_as_published) : nlohmann::json(nullptr);
    settings.push_back({{"setting", setting_label(point)},
                        {"values", values},
                        {"ranking_of_means", a.ranking_of_means},
                        {"seeds_ranked", a.seeds_ranked},
                        {"seeds_ranked_as_means", a.seeds_ranked_as_means},
                        {"seeds_ranked_as_published", as_published},
                        {"summary", summary_json(summary)}});
  }
  nlohmann::json across = nlohmann::json::array();
  const std::string metric = g.in_bits_per_byte ? "val_bits_per_byte" : "val_loss";
  for (const SettingComparison& c : g.across)
    across.push_back({{"variant", c.variant},
                      {"setting", c.setting},
                      {"baseline", c.baseline},
                      {"seeds", c.seeds},
                      {metric, c.val},
                      {"baseline_" + metric, c.baseline_val},
                      {"mean_difference", c.val.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.mean_difference)},
                      {"paired_t_test", c.test ? nlohmann::json{{"t", c.test->t}, {"df", c.test->df}, {"p", c.test->p},
                                                                {"p_holm", detail::optional_json(c.p_holm)}}
                                               : nlohmann::json(nullptr)}});
  nlohmann::json task_across = nlohmann::json::array();
  const auto& task = g.settings.empty() ? std::optional<TaskSummary>() : g.settings.front().second.task;
  for (const TaskSettingComparison& c : g.task_across)
    task_across.push_back(
        {{"variant", c.variant},
         {"setting", c.setting},
         {"baseline", c.baseline},
         {"band", task->bands[c.band].label()},
         {"seeds", c.seeds},
         {"accuracy", c.accuracy},
         {"baseline_accuracy", c.baseline_accuracy},
         {"mean_difference", detail::optional_json(c.mean_difference)},
         {"paired_t_test", c.test ? nlohmann::json{{"t", c.test->t}, {"df", c.test->df}, {"p", c.test->p},
                                                   {"p_holm", detail::optional_json(c.p_holm)}}
                                  : nlohmann::json(nullptr)}});
  nlohmann::json j = {{"grid", grid}, {"settings", settings}, {"across", across}};
  if (task) j["task_across"] = task_across;
  return j;
}

// The per-variant rows of every point, each row led by its point's label.
inline std::string grid_summary_csv(const GridSummary& g) {
  std::ostringstream out;
  bool header = true;
  for (const auto& [point, summary] : g.settings) {
    std::istringstream rows(summary_csv(summary));
    std::string line;
    for (bool first = true; std::getline(rows, line); first = false) {
      if (first && !header) continue;
      out << (first ? "setting" : '"' + setting_label(point) + '"') << ',' << line << '\n';
    }
    header = false;
  }
  return out.str();
}

namespace detail {
// The table of every setting's mean validation loss by variant, with how the seeds rank them (and,
// when a setting is the published design, the published row and ranking beside them).
inline std::string overview_markdown(const GridSummary& g) {
  const std::vector<std::string>& variants = g.design.variants;
  const std::optional<std::vector<std::string>> published_order = published_ranking(variants);
  const bool published = published_order.has_value() &&
                         std::any_of(g.settings.begin(), g.settings.end(),
                                     [](const auto& s) { return s.second.published_design; });
  std::ostringstream md;
  md << "## Validation loss at each setting\n\nThe mean ± sd over the seeds (n when fewer than the design's "
     << g.design.seeds.size() << "), the ranking of the means (best first), and how many of the seeds with a run "
     << "of every variant rank the variants that way" << (published ? " and the published way" : "") << ".\n\n"
     << "| setting | " << join(variants, " | ") << " | ranking of the means | seeds ranked so |"
     << (published ? " seeds ranked as published |" : "") << "\n|---|";
  for (std::size_t i = 0; i < variants.size() + 2; ++i) md << "---|";
  md << (published ? "---|" : "") << "\n";
  if (published) {
    md << "| published (for reference) | ";
    for (const std::string& v : variants) {
      const PublishedResult& r = published_results().at(v);
      md << fixed(r.mean) << " ± " << fixed(r.sd) << " | ";
    }
    md << join(*published_order, " < ") << " | — | — |\n";
  }
  for (const auto& [point, summary] : g.settings) {
    md << "| " << setting_label(point) << " | ";
    for (const VariantSummary& v : summary.variants) {
      if (v.val.empty()) md << "—";
      else md << fixed(v.mean_val) << (v.sd_val ? " ± " + fixed(*v.sd_val) : "");
      if (!v.val.empty() && v.val.size() < g.design.seeds.size()) md << " (n = " << v.val.size() << ")";
      md << " | ";
    }
    const RankingAgreement a = ranking_agreement(summary);
    const auto of = [&](std::size_t k) { return std::to_string(k) + " of " + std::to_string(a.seeds_ranked); };
    md << (a.ranking_of_means.empty() ? "—" : join(a.ranking_of_means, " < ")) << " | "
       << (a.seeds_ranked == 0 ? "—" : of(a.seeds_ranked_as_means)) << " |";
    if (published) md << " " << (a.seeds_ranked == 0 ? "—" : of(*a.seeds_ranked_as_published)) << " |";
    md << "\n";
  }
  md << "\n";
  return md.str();
}
}  // namespace detail

namespace detail {
// A task study's accuracy by band, each variant across the settings.
inline std::string task_across_markdown(const GridSummary& g) {
  const TaskSummary& task = *g.settings.front().second.task;
  std::ostringstream md;
  md << "\n## Each variant across the settings: exact-match accuracy by band of lengths\n\n"
     << "The mean over the seeds both settings have of each seed's accuracy over the band's lengths; "
        "paired t-test by seed, Holm-adjusted over each band's tests. A blank p: fewer than two shared "
        "seeds, or the same difference in every seed.\n\n"
     << "| variant | setting | against | band | n | accuracy | baseline (same seeds) | difference | p | p (Holm) |\n"
     << "|---|---|---|---|---|---|---|---|---|---|\n";
  for (const TaskSettingComparison& c : g.task_across) {
    md << "| " << c.variant << " | " << c.setting << " | " << c.baseline << " | " << task.bands[c.band].label()
       << " | " << c.accuracy.size() << " | ";
    if (c.accuracy.empty()) {
      md << "— | — | — |  |  |\n";
      continue;
    }
    md << fixed(stats::mean(c.accuracy)) << " | " << fixed(stats::mean(c.baseline_accuracy)) << " | "
       << (*c.mean_difference >= 0 ? "+" : "") << fixed(*c.mean_difference) << " | "
       << (c.test ? p_text(c.test->p) : std::string()) << " | " << (c.test ? p_text(c.p_holm) : std::string())
       << " |\n";
  }
  return md.str();
}
}  // namespace detail

inline std::string grid_summary_markdown(const GridSummary& g) {
  using detail::fixed;
  const auto tests = std::count_if(g.across.begin(), g.across.end(), [](const auto& c) { return c.test.has_value(); });
  std::ostringstream md;
  md << "# Grid study summary\n\n";
  for (const GridAxis& axis : g.design.grid)
    md << "- `" << axis.name << "`: " << detail::join(axis.values, ", ") << "\n";
  for (const GridPoint& point : g.design.grid_list) md << "- `" << point.label() << "`\n";
  md << "\nEvery variant × seed at each of the " << g.settings.size() << " settings"
     << (g.design.grid_list.empty() ? "" : " (the study's own and each listed point)")
     << ". First each variant across the settings, against "
     << (g.design.grid_list.empty() ? "`" + g.settings.front().first.label() + "`" : "the study's own settings")
     << (g.design.grid.size() > 1 ? " and against each setting one axis away (that axis at its first value)" : "")
     << " (paired by seed; p-values Holm-adjusted over the table's " << tests
     << " tests), then each setting's "
        "own summary.\n\n"
     << detail::overview_markdown(g) << "## Each variant across the settings\n\n"
     << (g.in_bits_per_byte ? "The settings differ in their tokens, so they compare in validation bits per byte.\n\n"
                            : "")
     << "| variant | setting | against | n | " << (g.in_bits_per_byte ? "val bits/byte" : "val loss") << " | baseline "
     << (g.in_bits_per_byte ? "val bits/byte" : "val loss")
     << " (same seeds) | difference | paired t | p | p (Holm) |\n"
     << "|---|---|---|---|---|---|---|---|---|---|\n";
  for (const SettingComparison& c : g.across) {
    md << "| " << c.variant << " | " << c.setting << " | " << c.baseline << " | " << c.val.size() << " | ";
    if (c.val.empty()) {
      md << "— | — | — | — | — | — |\n";
      continue;
    }
    md << fixed(stats::mean(c.val)) << " | " << fixed(stats::mean(c.baseline_val)) << " | "
       << (c.mean_difference >= 0 ? "+" : "") << fixed(c.mean_difference) << " | "
       << (c.test ? fixed(c.test->t, 2) : std::string("—")) << " | "
       << detail::p_text(c.test ? std::optional<double>(c.test->p) : std::nullopt) << " | "
       << detail::p_text(c.p_holm) << " |\n";
  }
  if (!g.task_across.empty()) md << detail::task_across_markdown(g);
  for (const auto& [point, summary] : g.settings) {
    md << "\n## At " << setting_label(point) << "\n\n";
    // the point's own summary, its headings one level down
    std::istringstream lines(summary_markdown(summary));
    std::string line;
    while (std::getline(lines, line)) {
      if (line.starts_with("# Study summary")) continue;
      md << (line.starts_with("#") ? "#" : "") << line << '\n';
    }
  }
  return md.str();
}

// Writes OUT/summary.json, summary.csv and summary.md of a grid study.
inline void write_grid_summary(const GridSummary& g, const std::filesystem::path& out) {
  write_file_atomically((out / "summary.json").string(), grid_summary_json(g).dump(2) + "\n");
  write_file_atomically((out / "summary.csv").string(), grid_summary_csv(g));
  write_file_atomically((out / "summary.md").string(), grid_summary_markdown(g));
}

}  // namespace posenc
