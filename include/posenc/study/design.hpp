// StudyDesign: a study's runs (grid points × variants × seeds, extended runs, fine-tunes, evaluations after training).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "posenc/config.hpp"
#include "posenc/encodings/all.hpp"
#include "posenc/encodings/rope_scaling.hpp"
#include "posenc/study/grid.hpp"
#include "posenc/train/init_from.hpp"
#include "posenc/train/run_config.hpp"

namespace posenc {

// The published study's variants and seeds (its model is study_layers × study_dim × study_heads at
// study_context, model/aliases.hpp).
inline const std::vector<std::string> published_variants = {"learned", "sinusoidal", "rope", "alibi-single"};
inline const std::vector<std::uint64_t> published_seeds = {1337, 2024, 42};

// A base run's final model trained on at another context (initialize_from_checkpoint), for
// `steps` steps, under a RoPE scaling (rotary variants; rope_scaling_over the base run's settings;
// none: the trained angles).
struct FineTune {
  std::size_t context = 0;
  std::int64_t steps = 0;
  RopeScaling rope = {};
  bool operator==(const FineTune&) const = default;
  // "ft 512×200", the row's name in a summary (the scaling is named apart)
  std::string label() const { return "ft " + std::to_string(context) + "×" + std::to_string(steps); }
  // "-ft512x200", "-ft512x200-yarn4" or "-ft512x200-yarn4-beta_fast16", the run's name past its
  // base run's
  std::string id_suffix() const {
    std::string text = "-ft" + std::to_string(context) + "x" + std::to_string(steps);
    char number[32];
    if (rope.scales()) {
      std::snprintf(number, sizeof number, "%.15g", rope.factor);
      text += "-" + std::string(rope_scaling_name(rope.method)) + number;
    }
    for (const auto& [name, value] : rope.changed_settings()) {
      std::snprintf(number, sizeof number, "%.15g", value);
      text += "-" + name + number;
    }
    return text;
  }
};

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
  // Each base run is also fine-tuned from its final model at fine_tune_context (0: none) for
  // fine_tune_steps, with fine_tune_batch windows a step (0: as many tokens a step as training),
  // the rest of the training settings as the base run's; a rotary variant again under each of
  // fine_tune_rope (its factor stretching the base run's context, or a new base). Every fine-tuned model gets the
  // evaluations above, under the angles it was fine-tuned with.
  std::size_t fine_tune_context = 0;
  std::int64_t fine_tune_steps = 200;
  std::size_t fine_tune_batch = 0;
  std::vector<RopeScaling> fine_tune_rope;
  // A task study (run.task set): each base run's final model is tested at these lengths of the
  // task (empty: default_test_lengths of the trained ones), task_examples examples a length drawn
  // from task_seed (each length its own stream, task_length_seed), under each scaling above.
  std::vector<std::size_t> task_lengths;
  std::size_t task_examples = 100;
  std::uint64_t task_seed = 1337;
  // Settings crossed with the variants and seeds: every run is made at every point of the grid
  // (grid_points), each point's settings applied to `run`. None: one point, `run` itself.
  std::vector<GridAxis> grid;
  // Or the grid's points listed (settings that change together, not crossed): every run is made at
  // `run` itself and at each of these points (study_points). Not with `grid`.
  std::vector<GridPoint> grid_list;
};

// The settings a study's runs are made at: the crossed grid's points, or `run` itself (the empty
// point) and then the listed points; one empty point for a study without a grid. The first is the
// baseline its summary compares the others with.
inline std::vector<GridPoint> study_points(const StudyDesign& d) {
  if (d.grid_list.empty()) return grid_points(d.grid);
  std::vector<GridPoint> points(1);
  points.insert(points.end(), d.grid_list.begin(), d.grid_list.end());
  return points;
}

inline bool has_grid(const StudyDesign& d) { return !d.grid.empty() || !d.grid_list.empty(); }

// The lengths a task study tests its models at (none without a task).
inline std::vector<std::size_t> tested_task_lengths(const StudyDesign& d) {
  if (!d.run.task) return {};
  return d.task_lengths.empty() ? default_test_lengths(d.run.task->lengths) : d.task_lengths;
}

// Every setting a point of the study sets, once each, in the order they first appear.
inline std::vector<std::string> grid_setting_names(const StudyDesign& d) {
  std::vector<std::string> names;
  for (const GridPoint& point : study_points(d))
    for (const auto& [name, value] : point.values)
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  return names;
}

struct RunSpec {
  std::string variant;
  std::uint64_t seed = 0;
  std::int64_t steps = 0;  // a fine-tune's: its base run's
  GridPoint setting{};  // the grid point; empty without a grid
  std::optional<FineTune> fine_tune = std::nullopt;  // none: trained from the start
  std::string id() const {
    return variant + "-seed" + std::to_string(seed) + "-steps" + std::to_string(steps) + setting.id_suffix() +
           (fine_tune ? fine_tune->id_suffix() : "");
  }
  // The run a fine-tune starts from (itself for any other run).
  RunSpec base() const { return {variant, seed, steps, setting}; }
};

// The fine-tunes of each of a variant's base runs: at the design's fine-tuning context with the
// trained angles, and for a rotary variant under each of fine_tune_rope.
inline std::vector<FineTune> fine_tunes(const StudyDesign& d, const std::string& variant) {
  if (d.fine_tune_context == 0) return {};
  std::vector<FineTune> tunes = {{d.fine_tune_context, d.fine_tune_steps}};
  if (rotary_policy(variant))
    for (const RopeScaling& rope : d.fine_tune_rope) tunes.push_back({d.fine_tune_context, d.fine_tune_steps, rope});
  return tunes;
}

// For each grid point: the base runs (every variant × seed), then the extended runs (every variant
// × extended seed), then the fine-tunes of each base run.
inline std::vector<RunSpec> plan_runs(const StudyDesign& d) {
  std::vector<RunSpec> runs;
  for (const GridPoint& point : study_points(d)) {
    for (std::uint64_t seed : d.seeds)
      for (const std::string& v : d.variants) runs.push_back({v, seed, d.steps, point});
    if (d.extended_steps > 0)
      for (std::uint64_t seed : d.extended_seeds)
        for (const std::string& v : d.variants) runs.push_back({v, seed, d.extended_steps, point});
    for (std::uint64_t seed : d.seeds)
      for (const std::string& v : d.variants)
        for (const FineTune& tune : fine_tunes(d, v)) runs.push_back({v, seed, d.steps, point, tune});
  }
  return runs;
}

// One run of the design on the corpus whose corpus_digest() is data_digest: a stored run is reused
// only when its configuration is the same run (RunConfig::same_run). A fine-tune starts from
// `base_checkpoint`, its base run's final model.
inline RunConfig run_config(const StudyDesign& d, const RunSpec& run, const std::string& data_digest,
                            const std::string& base_checkpoint = "") {
  RunConfig c = with_setting(d.run, run.setting);
  c.posenc = run.variant;
  c.train.seed = run.seed;
  c.train.steps = run.steps;
  c.data_digest = data_digest;
  if (run.fine_tune) {
    const FineTune& tune = *run.fine_tune;
    c.init_from = {base_checkpoint, run.steps, c.train.context};
    c.train.batch = d.fine_tune_batch != 0
                        ? d.fine_tune_batch
                        : std::max<std::size_t>(1, c.train.batch * c.train.context / tune.context);
    c.train.context = tune.context;
    c.train.steps = tune.steps;
    c.train.eval_every = std::min(c.train.eval_every, tune.steps);
    if (tune.rope.changes_anything()) c.rope = rope_scaling_over(c.rope, tune.rope);
    c.rope = rope_for_fine_tuning(c.rope, c.init_from.context);
  }
  return c;
}

// The training settings of the design's fine-tunes (without a RoPE scaling), which a summary
// states once for all of them: the first variant's, seed and source left out.
inline TrainConfig fine_tune_training(const StudyDesign& d) {
  return run_config(d, {d.variants.front(), 0, d.steps, {}, FineTune{d.fine_tune_context, d.fine_tune_steps}}, "")
      .train;
}

// One row of the evaluations after training: a variant's base model under a RoPE scaling (none:
// the trained angles), or one of its fine-tuned models under the angles it was fine-tuned with.
struct EvaluatedModel {
  std::optional<FineTune> fine_tune = std::nullopt;
  RopeScaling scaling = {};  // the record's entries are keyed by it; a fine-tuned model's: none
  std::string fine_tune_label() const { return fine_tune ? fine_tune->label() : "none"; }
  // the scaling in effect: a fine-tuned model's is the one it was fine-tuned under
  std::string scaling_label() const { return fine_tune ? fine_tune->rope.label() : scaling.label(); }
  bool is_base() const { return !fine_tune && !scaling.changes_anything(); }
};

// The RoPE settings a variant's final models are evaluated under after training: the trained
// angles, and for a rotary variant each of the design's extrapolate_rope. A fine-tuned model is
// evaluated with the angles it was fine-tuned with only.
inline std::vector<RopeScaling> evaluated_scalings(const StudyDesign& d, const RunSpec& run) {
  std::vector<RopeScaling> scalings = {RopeScaling{}};
  if (rotary_policy(run.variant) && !run.fine_tune)
    scalings.insert(scalings.end(), d.extrapolate_rope.begin(), d.extrapolate_rope.end());
  return scalings;
}

// Every row of a variant's evaluations, in a summary's order: the base model under each scaling,
// then each fine-tune.
inline std::vector<EvaluatedModel> evaluated_models(const StudyDesign& d, const std::string& variant) {
  std::vector<EvaluatedModel> models;
  for (const RopeScaling& scaling : evaluated_scalings(d, RunSpec{variant})) models.push_back({std::nullopt, scaling});
  for (const FineTune& tune : fine_tunes(d, variant)) models.push_back({tune, {}});
  return models;
}

namespace detail {
template <class T>
void reject_repeats(const std::vector<T>& values, const char* what) {
  for (std::size_t i = 0; i < values.size(); ++i)
    if (std::find(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(i), values[i]) !=
        values.begin() + static_cast<std::ptrdiff_t>(i))
      fail(what, ": '", values[i], "' is given twice");
}

// Each a scaling method with its factor or a new base, none twice, and some variant rotary to take them.
inline void check_scalings(const std::vector<RopeScaling>& scalings, const std::vector<std::string>& variants,
                           const char* option) {
  for (std::size_t i = 0; i < scalings.size(); ++i) {
    const RopeScaling& scaling = scalings[i];
    if (!scaling.changes_anything())
      fail(option, ": each entry is METHOD:FACTOR with a scaling method, or base=B");
    scaling.validate();
    for (std::size_t j = 0; j < i; ++j)
      if (scalings[j] == scaling) fail(option, ": '", scaling.label(), "' is given twice");
  }
  if (!scalings.empty() &&
      std::none_of(variants.begin(), variants.end(), [](const std::string& v) { return rotary_policy(v); }))
    fail(option, ": none of the variants is rotary (", name_list(rotary_policy_names()), ")");
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
  detail::check_scalings(d.extrapolate_rope, d.variants, "--extrapolate-rope");
  if (!d.extrapolate_rope.empty() && d.extrapolate.empty() && d.copy_probe.empty() && !d.run.task)
    fail("--extrapolate-rope: the scalings apply to the --extrapolate lengths, the --copy-probe distances and a "
         "--task's lengths; give one");
  if (d.run.task) {
    // the evaluations of text read a corpus's validation split; a task's models are tested on the task
    if (!d.extrapolate.empty()) fail("--extrapolate with --task: a task study tests its models at --task-test-lengths");
    if (!d.copy_probe.empty())
      fail("--copy-probe with --task: the probe reads a corpus's text; probe a task's models with shakespeare eval");
    if (d.fine_tune_context != 0)
      fail("--fine-tune with --task: a task's examples are as long as its lengths make them; train another range "
           "with --task-lengths");
    if (d.task_examples == 0) fail("--task-examples must be at least 1");
    for (std::size_t n : d.task_lengths)
      if (n == 0) fail("--task-test-lengths: a length must be at least 1");
  } else if (!d.task_lengths.empty()) {
    fail("--task-test-lengths: the lengths a task's models are tested at; give --task too");
  }
  if (!d.grid.empty() && !d.grid_list.empty())
    fail("--grid with --grid-point: a grid's points are either crossed (--grid) or listed (--grid-point)");
  const std::string grid_option = d.grid_list.empty() ? "--grid" : "--grid-point";
  if (d.fine_tune_context == 0) {
    if (!d.fine_tune_rope.empty()) fail("--fine-tune-rope: the scalings apply to fine-tunes; give --fine-tune too");
  } else {
    if (d.fine_tune_context == d.run.train.context)
      fail("--fine-tune ", d.fine_tune_context, ": the runs train at that context already; fine-tune at another");
    if (d.fine_tune_steps < 1) fail("--fine-tune-steps ", d.fine_tune_steps, " must be at least 1");
    detail::check_scalings(d.fine_tune_rope, d.variants, "--fine-tune-rope");
    // a fine-tuned record is found at its grid point by its settings, which fine-tuning changes for these
    for (const std::string& name : grid_setting_names(d))
      for (const char* changed : {"batch", "context", "eval_every"})
        if (name == changed)
          fail(grid_option, " ", name, " with --fine-tune: the fine-tunes set their own ", name,
               "; study the two apart");
  }
  for (std::size_t a = 0; a < d.grid.size(); ++a) {
    for (std::size_t b = 0; b < a; ++b)
      if (d.grid[b].name == d.grid[a].name) fail("--grid ", d.grid[a].name, ": the setting is given twice");
    detail::reject_repeats(d.grid[a].values, ("--grid " + d.grid[a].name).c_str());
  }
  // every point: its settings exist, differ from every other point's and make a configuration that
  // can train for the design's steps
  std::vector<std::pair<std::string, RunConfig>> made;  // each point's label and configuration
  for (const GridPoint& point : study_points(d)) {
    const RunConfig at = with_setting(d.run, point, grid_option);
    for (const auto& [label, earlier] : made)
      if (earlier == at)
        fail(grid_option, " ", point.label(), ": the same run configuration as ",
             label.empty() ? "the study's own settings, which it runs anyway" : label);
    made.emplace_back(point.label(), at);
    const LearningRateSchedule schedule = at.train.schedule;
    if (schedule.depends_on_length() && d.extended_steps != 0)
      fail(point.values.empty() ? "" : grid_option + " " + point.label() + ": ", "--extended-steps ", d.extended_steps,
           ": an extended run continues its seed's base run, which the '",
           schedule_kind_name(schedule.kind),
           "' schedule forbids (it decays over the run's length); pass --extended-steps 0, or study the longer runs "
           "as --steps");
    schedule.check(d.steps);
    if (d.fine_tune_context != 0) schedule.check(d.fine_tune_steps);
  }
}

}  // namespace posenc
