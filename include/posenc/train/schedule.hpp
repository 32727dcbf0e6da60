// LearningRateSchedule: the learning rate at each step — constant, warm-up, cosine, linear and warm-up-stable-decay.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <string>
#include <string_view>

#include "posenc/config.hpp"
#include "posenc/enum_names.hpp"

namespace posenc {

enum class ScheduleKind { constant, cosine, linear, wsd };

inline constexpr EnumNames<ScheduleKind, 4> schedule_kinds{
    "learning-rate schedule",
    {{{ScheduleKind::constant, "constant"},
      {ScheduleKind::cosine, "cosine"},
      {ScheduleKind::linear, "linear"},
      {ScheduleKind::wsd, "wsd"}}}};
static_assert(schedule_kinds.in_order());

inline constexpr std::string_view schedule_kind_name(ScheduleKind kind) { return schedule_kinds.name(kind); }
inline ScheduleKind parse_schedule_kind(std::string_view name) { return schedule_kinds.parse(name); }

// As llm.c's schedulers: step s (0-based, the step about to be taken) of a run of n steps, peak
// rate lr, floor lr·min_lr_fraction:
//   warm-up   s < warmup:  lr·(s+1)/warmup, whatever the kind
//   constant             lr
//   cosine               floor + (lr − floor)·(1 + cos(π·r))/2,  r = (s − warmup)/(n − warmup)
//   linear               lr − (lr − floor)·r
//   wsd                  lr until the last ⌈decay_fraction·n⌉ steps, then floor + (lr − floor)·(1 − √r)
//                        over them (r counted from where the decay starts; Hägele et al. 2024's
//                        1 − sqrt cool-down, as llm.c's)
// The default is the published study's: constant, no warm-up.
struct LearningRateSchedule {
  ScheduleKind kind = ScheduleKind::constant;
  std::int64_t warmup_steps = 0;
  double min_lr_fraction = 0.1;  // nanoGPT's min_lr 6e-5 with lr 6e-4; not used by constant
  double decay_fraction = 0.2;   // wsd: the share of the run spent decaying
  bool operator==(const LearningRateSchedule&) const = default;

  // Whether the rate depends on the run's length, so that a run cannot be extended.
  bool depends_on_length() const { return kind != ScheduleKind::constant; }

  // The number of steps wsd spends decaying in a run of `steps`.
  std::int64_t decay_steps(std::int64_t steps) const {
    return static_cast<std::int64_t>(std::ceil(decay_fraction * static_cast<double>(steps)));
  }

  double at(double lr, std::int64_t step, std::int64_t steps) const {
    if (step < warmup_steps) return lr * static_cast<double>(step + 1) / static_cast<double>(warmup_steps);
    const double floor = lr * min_lr_fraction;
    auto ratio = [](std::int64_t done, std::int64_t span) {
      return span > 0 ? std::min(1.0, static_cast<double>(done) / static_cast<double>(span)) : 1.0;
    };
    switch (kind) {
      case ScheduleKind::constant: return lr;
      case ScheduleKind::cosine:
        return floor + (lr - floor) * 0.5 * (1.0 + std::cos(std::numbers::pi * ratio(step - warmup_steps,
                                                                                       steps - warmup_steps)));
      case ScheduleKind::linear: return lr - (lr - floor) * ratio(step - warmup_steps, steps - warmup_steps);
      case ScheduleKind::wsd: {
        const std::int64_t decay = decay_steps(steps), start = std::max(warmup_steps, steps - decay);
        return step < start ? lr : floor + (lr - floor) * (1 - std::sqrt(ratio(step - start, steps - start)));
      }
    }
    return lr;
  }

  // Throws posenc::Error naming the option (as the programs spell it) that makes no schedule for
  // a run of `steps`.
  void check(std::int64_t steps) const {
    if (warmup_steps < 0) fail("--warmup-steps must be at least 0, got ", warmup_steps);
    if (warmup_steps > steps) fail("--warmup-steps ", warmup_steps, " exceeds the run's ", steps, " steps");
    if (depends_on_length() && warmup_steps == steps)
      fail("--warmup-steps ", warmup_steps, ": the warm-up takes the whole run, so the ", schedule_kind_name(kind),
           " schedule never decays");
    if (!(min_lr_fraction >= 0 && min_lr_fraction <= 1))
      fail("--min-lr-fraction must lie in [0, 1], got ", min_lr_fraction);
    if (!(decay_fraction > 0 && decay_fraction <= 1)) fail("--decay-fraction must lie in (0, 1], got ", decay_fraction);
    // a setting the kind does not read would be recorded (and make a run of another name) for nothing
    const LearningRateSchedule defaults;
    if (kind == ScheduleKind::constant && min_lr_fraction != defaults.min_lr_fraction)
      fail("--min-lr-fraction: the constant schedule does not decay; give --lr-schedule cosine, linear or wsd");
    if (kind != ScheduleKind::wsd && decay_fraction != defaults.decay_fraction)
      fail("--decay-fraction: only the wsd schedule reads it, not ", schedule_kind_name(kind));
  }
};

}  // namespace posenc
