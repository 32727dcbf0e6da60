// GridAxis, GridPoint: training settings a study crosses with its variants and seeds, named by config.json keys.
#pragma once

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "posenc/config.hpp"
#include "posenc/lists.hpp"
#include "posenc/train/run_config.hpp"

namespace posenc {

// One setting and the values a grid gives it: `name` is a key of RunConfig's JSON (lr,
// lr_schedule, grad_clip, init, tie_weights, …), each value as canonical_grid_value writes it.
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
  return complete_json(RunConfig{}).contains(name);
}

// A grid value as the JSON of its setting, whose kind is that of its value in a default
// configuration: a whole number for a count (batch, warmup_steps, grad_accum, eval_iters …), a
// finite number for a rate (lr, dropout, beta2 …), true or false for a switch (tie_weights), a number
// or none for grad_clip, any text for a choice (init, lr_schedule …: its parser knows the names).
// None when the value is not of its setting's kind; `takes` (when given) then says what it takes.
inline std::optional<nlohmann::json> read_grid_value(const std::string& name, const std::string& value,
                                                     std::string* takes = nullptr) {
  const nlohmann::json defaults = complete_json(RunConfig{});
  const auto it = defaults.find(name);
  if (it == defaults.end() || it->is_string()) return nlohmann::json(value);
  const auto whole = [&]<class Int>(Int) -> std::optional<nlohmann::json> {
    Int n{};
    const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (value.empty() || error != std::errc() || end != value.data() + value.size()) return std::nullopt;
    return nlohmann::json(n);
  };
  const auto number = [&]() -> std::optional<nlohmann::json> {
    char* end = nullptr;
    const double x = std::strtod(value.c_str(), &end);
    if (value.empty() || *end != '\0' || !std::isfinite(x)) return std::nullopt;
    return nlohmann::json(x);
  };
  std::optional<nlohmann::json> read;
  std::string kind;
  if (it->is_boolean()) {
    kind = "true or false";
    if (value == "true" || value == "false") read = nlohmann::json(value == "true");
  } else if (it->is_number_unsigned()) {
    kind = "a whole number ≥ 0";
    read = whole(std::uint64_t{});
  } else if (it->is_number_integer()) {
    kind = "a whole number";
    read = whole(std::int64_t{});
  } else if (it->is_null()) {
    kind = "a number or none";
    read = value == "none" ? std::optional<nlohmann::json>(nullptr) : number();
  } else {
    kind = "a number";
    read = number();
  }
  if (!read && takes != nullptr) *takes = kind;
  return read;
}

// A grid value written one way for each value it can be ("1e-3" and "0.001" → "0.001", "0.10" →
// "0.1", "1.0" → "1"), so a run's name and identity follow its configuration, not its typing; a
// value its setting cannot take stays as written (with_setting then says why).
inline std::string canonical_grid_value(const std::string& name, const std::string& value) {
  const std::optional<nlohmann::json> read = read_grid_value(name, value);
  if (!read || read->is_string()) return value;
  if (read->is_null()) return "none";
  if (read->is_number_float()) {
    const double x = read->get<double>();
    if (x == std::trunc(x) && std::abs(x) < 1e15) return std::to_string(static_cast<std::int64_t>(x));
  }
  return read->dump();  // nlohmann writes a double in its shortest round-trip form
}

// `run` with the point's settings; an unknown name or a value its setting cannot take is an
// error naming it as the study's `option` (--grid or --grid-point) does. `init` is the whole
// initialisation: with it, the embedding std becomes that scheme's (nn.Embedding's 1 for pytorch)
// unless the point sets embedding_std too, as --init does on a command line without --embedding-std.
inline RunConfig with_setting(const RunConfig& run, const GridPoint& point, std::string_view option = "--grid") {
  if (point.values.empty()) return run;
  nlohmann::json j = complete_json(run);  // with vocab_size, which a point's tokenizer=bpe uses
  for (const auto& [name, value] : point.values) {
    if (!grid_may_set(name))
      fail(option, " ", name, ": not a setting a grid can cross (it may set any key of a run's config.json but ",
           "posenc, seed, steps and data, which --variants, --seeds, --steps and --data set)");
    std::string takes;
    const std::optional<nlohmann::json> read = read_grid_value(name, value, &takes);
    if (!read) fail(option, " ", name, "=", value, ": ", name, " takes ", takes);
    j[name] = *read;
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
  for (const std::string& value : split_list(text.substr(eq + 1), "--grid " + axis.name))
    axis.values.push_back(canonical_grid_value(axis.name, value));
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
    value = canonical_grid_value(name, value);
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
