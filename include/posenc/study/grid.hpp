// GridAxis, GridPoint: training settings a study crosses with its variants and seeds, named by config.json keys.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "posenc/config.hpp"
#include "posenc/train/run_config.hpp"

namespace posenc {

// One setting and the values a grid gives it: `name` is a key of RunConfig's JSON (lr,
// lr_schedule, grad_clip, init, tie_weights, …), each value as written on a command line.
struct GridAxis {
  std::string name;
  std::vector<std::string> values;
  bool operator==(const GridAxis&) const = default;
};

// One combination of the axes' values, in axis order; empty when a study has no grid.
struct GridPoint {
  std::vector<std::pair<std::string, std::string>> values;
  bool operator==(const GridPoint&) const = default;

  bool sets(std::string_view name) const {
    return std::any_of(values.begin(), values.end(), [&](const auto& v) { return v.first == name; });
  }
  // "init=pytorch lr_schedule=cosine"; "" for the empty point
  std::string label() const {
    std::string text;
    for (const auto& [name, value] : values) text += (text.empty() ? "" : " ") + name + "=" + value;
    return text;
  }
  // What a run's id gains: "-init-pytorch-lr_schedule-cosine"; "" for the empty point, so a study
  // without a grid names its runs as before grids existed.
  std::string id_suffix() const {
    std::string text;
    for (const auto& [name, value] : values) text += "-" + name + "-" + value;
    return text;
  }
};

// The settings a grid may not set: the study's own options own them.
inline bool grid_may_set(std::string_view name) {
  for (const std::string_view owned : {"posenc", "seed", "steps", "data", "data_digest"})
    if (name == owned) return false;
  return nlohmann::json(to_json(RunConfig{})).contains(name);
}

// A grid value as JSON: a number, true, false, none (no value: null), or else a string.
inline nlohmann::json grid_value_json(const std::string& value) {
  if (value == "none") return nullptr;
  if (value == "true") return true;
  if (value == "false") return false;
  const nlohmann::json number = nlohmann::json::parse(value, nullptr, /*allow_exceptions=*/false);
  if (number.is_number()) return number;
  return value;
}

// `run` with the point's settings; an unknown name or a value its setting cannot take is an
// error naming it as the study's `option` (--grid or --grid-point) does. `init` is the whole
// initialisation: with it, the embedding std becomes that scheme's (nn.Embedding's 1 for pytorch)
// unless the point sets embedding_std too, as --init does on a command line without --embedding-std.
inline RunConfig with_setting(const RunConfig& run, const GridPoint& point, std::string_view option = "--grid") {
  if (point.values.empty()) return run;
  nlohmann::json j = to_json(run);
  for (const auto& [name, value] : point.values) {
    if (!grid_may_set(name))
      fail(option, " ", name, ": not a setting a grid can cross (it may set any key of a run's config.json but ",
           "posenc, seed, steps and data, which --variants, --seeds, --steps and --data set)");
    j[name] = grid_value_json(value);
  }
  RunConfig at;
  try {
    at = run_config_from_json(j, "the grid point");
  } catch (const Error& e) {
    fail(option, " ", point.label(), ": ", e.what());
  }
  if (point.sets("init") && !point.sets("embedding_std")) at.embedding_std = default_embedding_std(at.init);
  return at;
}

// Every combination of the axes' values, the first axis varying slowest; one empty point when
// there are no axes.
inline std::vector<GridPoint> grid_points(const std::vector<GridAxis>& grid) {
  std::vector<GridPoint> points(1);
  for (const GridAxis& axis : grid) {
    std::vector<GridPoint> crossed;
    for (const GridPoint& point : points)
      for (const std::string& value : axis.values) {
        GridPoint next = point;
        next.values.emplace_back(axis.name, value);
        crossed.push_back(std::move(next));
      }
    points = std::move(crossed);
  }
  return points;
}

// Parses "NAME=V1,V2,…" (NAME with - or _); the error names what is wrong.
inline GridAxis parse_grid_axis(std::string_view text) {
  const std::size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0 || eq + 1 == text.size())
    fail("--grid '", text, "' is not NAME=V1,V2,… (e.g. --grid lr_schedule=constant,cosine)");
  GridAxis axis;
  axis.name = std::string(text.substr(0, eq));
  std::replace(axis.name.begin(), axis.name.end(), '-', '_');
  std::string value;
  for (const char c : std::string(text.substr(eq + 1)) + ",") {
    if (c != ',') {
      value.push_back(c);
    } else if (!value.empty()) {
      axis.values.push_back(value);
      value.clear();
    }
  }
  if (axis.values.empty()) fail("--grid ", axis.name, ": no value given");
  return axis;
}

// Parses "NAME=VALUE NAME=VALUE …" (NAME with - or _), one point of a listed grid (--grid-point):
// settings that change together; the error names what is wrong.
inline GridPoint parse_grid_point(std::string_view text) {
  GridPoint point;
  std::string word;
  const auto add = [&] {
    if (word.empty()) return;
    const std::size_t eq = word.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == word.size())
      fail("--grid-point '", text, "': '", word, "' is not NAME=VALUE (e.g. --grid-point 'lr_schedule=cosine ",
           "warmup_steps=100')");
    std::string name = word.substr(0, eq), value = word.substr(eq + 1);
    std::replace(name.begin(), name.end(), '-', '_');
    if (value.find(',') != std::string::npos)
      fail("--grid-point '", text, "': ", name, " has one value in a point ('", value,
           "' is several); --grid crosses values");
    for (const auto& [seen, unused] : point.values)
      if (seen == name) fail("--grid-point '", text, "': ", name, " is given twice");
    point.values.emplace_back(std::move(name), std::move(value));
    word.clear();
  };
  for (const char c : text) {
    if (c == ' ' || c == '\t') add();
    else word.push_back(c);
  }
  add();
  if (point.values.empty()) fail("--grid-point: no setting given (NAME=VALUE …)");
  return point;
}

}  // namespace posenc
