// StudyDesign: a study's runs (grid points × variants × seeds, extended runs, evaluations after training).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "posenc/config.hpp"
#include "posenc/encodings/all.hpp"
#include "posenc/encodings/rope_scaling.hpp"
#include "posenc/study/grid.hpp"
#include "posenc/train/run_config.hpp"

namespace posenc {

// The published study's variants and seeds (its model is study_layers × study_dim × study_heads at
// study_context, model/aliases.hpp).
inline const std::vector<std::string> published_variants = {"learned", "sinusoidal", "rope", "alibi-single"};
inline const std::vector<std::uint64_t> published_seeds = {1337, 2024, 42};

// The published study's design; every field can be changed from the study's command line.
struct StudyDesign {
  std::vector<std::string> variants = published_variants;
  std::vector<std::uint64_t> seeds = published_seeds;
  std::int64_t steps = 2000;
  std::int64_t extended_steps = 4000;  // 0: no extended runs
  std::vector<std::uint64_t> extended_seeds = {1337};
  // Everything else every run shares: model size, training settings, initialisation, precision and
  // corpus. Its posenc, steps and seed are each run's own (run_config).
  RunConfig run;
  // After training, each base run's final model is evaluated again (each empty or 0: skipped):
  std::vector<std::size_t> extrapolate;       // the validation loss at these lengths
  std::size_t per_position_bins = 0;          // and its mean by position there, in this many ranges
  std::vector<std::size_t> copy_probe;        // the copy probe at these distances (posenc::copy_probe)
  std::size_t copy_segments = 64;             // … over this many segments of the validation split
  std::vector<RopeScaling> extrapolate_rope;  // rotary variants: all of it again under each scaling
  // Settings crossed with the variants and seeds: every run is made at every point of the grid
  // (grid_points), each point's settings applied to `run`. None: one point, `run` itself.
  std::vector<GridAxis> grid;
};

struct RunSpec {
  std::string variant;
  std::uint64_t seed = 0;
  std::int64_t steps = 0;
  GridPoint setting{};  // the grid point; empty without a grid
  std::string id() const {
    return variant + "-seed" + std::to_string(seed) + "-steps" + std::to_string(steps) + setting.id_suffix();
  }
};

// For each grid point: the base runs (every variant × seed), then the extended runs (every variant
// × extended seed).
inline std::vector<RunSpec> plan_runs(const StudyDesign& d) {
  std::vector<RunSpec> runs;
  for (const GridPoint& point : grid_points(d.grid)) {
    for (std::uint64_t seed : d.seeds)
      for (const std::string& v : d.variants) runs.push_back({v, seed, d.steps, point});
    if (d.extended_steps > 0)
      for (std::uint64_t seed : d.extended_seeds)
        for (const std::string& v : d.variants) runs.push_back({v, seed, d.extended_steps, point});
  }
  return runs;
}

// One run of the design on the corpus whose corpus_digest() is data_digest: a stored run is reused
// only when its configuration is the same run (RunConfig::same_run).
inline RunConfig run_config(const StudyDesign& d, const RunSpec& run, const std::string& data_digest) {
  RunConfig c = with_setting(d.run, run.setting);
  c.posenc = run.variant;
  c.train.seed = run.seed;
  c.train.steps = run.steps;
  c.data_digest = data_digest;
  return c;
}

// The RoPE settings a variant's final models are evaluated under after training: the trained
// angles, and for a rotary variant each of the design's extrapolate_rope.
inline std::vector<RopeScaling> evaluated_scalings(const StudyDesign& d, const std::string& variant) {
  std::vector<RopeScaling> scalings = {RopeScaling{}};
  if (rotary_policy(variant)) scalings.insert(scalings.end(), d.extrapolate_rope.begin(), d.extrapolate_rope.end());
  return scalings;
}

namespace detail {
template <class T>
void reject_repeats(const std::vector<T>& values, const char* what) {
  for (std::size_t i = 0; i < values.size(); ++i)
    if (std::find(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(i), values[i]) !=
        values.begin() + static_cast<std::ptrdiff_t>(i))
      fail(what, ": '", values[i], "' is given twice");
}
}  // namespace detail

// Throws posenc::Error naming the first problem (each `what` is the study CLI's option): a
// repeated variant, seed or length would count the same runs twice in every statistic.
inline void validate_design(const StudyDesign& d) {
  if (d.variants.empty()) fail("--variants: no variant given");
  if (d.seeds.empty()) fail("--seeds: no seed given");
  detail::reject_repeats(d.variants, "--variants");
  detail::reject_repeats(d.seeds, "--seeds");
  detail::reject_repeats(d.extended_seeds, "--extended-seeds");
  detail::reject_repeats(d.extrapolate, "--extrapolate");
  for (const std::string& v : d.variants) with_policy(v, []<class>() {});  // an unknown name lists the known
  if (d.steps < 1) fail("--steps ", d.steps, " must be at least 1");
  if (d.extended_steps != 0 && d.extended_steps <= d.steps)
    fail("--extended-steps ", d.extended_steps, " must exceed --steps ", d.steps, " (or be 0)");
  if (d.extended_steps != 0)
    for (std::uint64_t seed : d.extended_seeds)
      if (std::find(d.seeds.begin(), d.seeds.end(), seed) == d.seeds.end())
        fail("--extended-seeds: ", seed, " is not among --seeds; an extended run continues the base run of its seed");
  for (std::size_t L : d.extrapolate)
    if (L == 0) fail("--extrapolate: a length must be at least 1");
  if (d.per_position_bins > 0 && d.extrapolate.empty())
    fail("--per-position: the loss by position is taken at the --extrapolate lengths; give some");
  detail::reject_repeats(d.copy_probe, "--copy-probe");
  for (std::size_t n : d.copy_probe)
    if (n < 2) fail("--copy-probe: a distance must be at least 2, got ", n);
  if (d.copy_segments == 0) fail("--copy-segments must be at least 1");
  for (std::size_t i = 0; i < d.extrapolate_rope.size(); ++i) {
    const RopeScaling& scaling = d.extrapolate_rope[i];
    if (!scaling.scales()) fail("--extrapolate-rope: each entry is METHOD:FACTOR with a scaling method");
    scaling.validate();
    for (std::size_t j = 0; j < i; ++j)
      if (d.extrapolate_rope[j] == scaling) fail("--extrapolate-rope: '", scaling.label(), "' is given twice");
  }
  if (!d.extrapolate_rope.empty()) {
    if (d.extrapolate.empty() && d.copy_probe.empty())
      fail("--extrapolate-rope: the scalings apply to the --extrapolate lengths and the --copy-probe distances; "
           "give either");
    if (std::none_of(d.variants.begin(), d.variants.end(), [](const std::string& v) { return rotary_policy(v); }))
      fail("--extrapolate-rope: none of the variants is rotary (rope, rope-interleaved, rope-partial, xpos)");
  }
  for (std::size_t a = 0; a < d.grid.size(); ++a) {
    for (std::size_t b = 0; b < a; ++b)
      if (d.grid[b].name == d.grid[a].name) fail("--grid ", d.grid[a].name, ": the setting is given twice");
    detail::reject_repeats(d.grid[a].values, ("--grid " + d.grid[a].name).c_str());
  }
  // every point: its settings exist and make a configuration that can train for the design's steps
  for (const GridPoint& point : grid_points(d.grid)) {
    const LearningRateSchedule schedule = with_setting(d.run, point).train.schedule;
    if (schedule.depends_on_length() && d.extended_steps != 0)
      fail(point.values.empty() ? "" : "--grid " + point.label() + ": ", "--extended-steps ", d.extended_steps,
           ": an extended run continues its seed's base run, which the '",
           schedule_kind_name(schedule.kind),
           "' schedule forbids (it decays over the run's length); pass --extended-steps 0, or study the longer runs "
           "as --steps");
    schedule.check(d.steps);
  }
}

}  // namespace posenc
