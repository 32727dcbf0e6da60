// write_study_summary: a study's records summarized (a grid's across its settings) and written, for study and Python.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <posenc/study/grid_summary.hpp>
#include <posenc/study/summary_report.hpp>
#include <string>
#include <vector>

namespace examples {

struct WrittenSummary {
  std::string markdown;  // summary.md
  nlohmann::json json;   // summary.json
};

// OUT/summary.{md,json,csv} of the records; a grid study's compares its settings too.
inline WrittenSummary write_study_summary(const posenc::StudyDesign& design,
                                          const std::vector<posenc::RunRecord>& records,
                                          const std::filesystem::path& out) {
  if (!posenc::has_grid(design)) {
    const posenc::StudySummary summary = posenc::summarize_study(design, records);
    posenc::write_summary(summary, out);
    return {posenc::summary_markdown(summary), posenc::summary_json(summary)};
  }
  const posenc::GridSummary summary = posenc::summarize_grid(design, records);
  posenc::write_grid_summary(summary, out);
  return {posenc::grid_summary_markdown(summary), posenc::grid_summary_json(summary)};
}

}  // namespace examples
