// StepRate and eta_seconds(): seconds per step over the recent past, for an ETA that follows the present speed.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <optional>
#include <utility>

namespace examples {

// A long study outlives many changes of speed: a build sharing the cores, a pause (Ctrl-Z, a
// stopped container), the start-up of a resumed run. An average since the start carries each of
// them for hours; this rate forgets what is older than `window_seconds`.
class StepRate {
 public:
  explicit StepRate(double window_seconds = 900) : window_(window_seconds) {}

  // `steps` is the count done by time `seconds` (both non-decreasing).
  void add(double seconds, std::int64_t steps) {
    if (samples_.empty() || seconds - samples_.back().first >= min_spacing) samples_.emplace_back(seconds, steps);
    while (samples_.size() > 1 && samples_.front().first < seconds - window_) samples_.pop_front();
    last_ = {seconds, steps};
  }

  // None until the window holds two moments with steps between them (right after a pause too).
  std::optional<double> seconds_per_step() const {
    if (samples_.empty() || last_.second <= samples_.front().second || last_.first <= samples_.front().first)
      return std::nullopt;
    return (last_.first - samples_.front().first) / static_cast<double>(last_.second - samples_.front().second);
  }

 private:
  static constexpr double min_spacing = 1.0;  // seconds between kept samples: a window holds ≤ 900 of them
  double window_;
  std::deque<std::pair<double, std::int64_t>> samples_;
  std::pair<double, std::int64_t> last_{0.0, 0};
};

// The time `remaining` more steps take: at the recent rate when there is one, else at the average
// of the `done` steps over `elapsed` seconds (evaluations included, as they recur). None before
// min_steps_for_eta steps: the first ones follow the start's evaluation and would count it per step.
inline constexpr std::int64_t min_steps_for_eta = 10;
inline std::optional<double> eta_seconds(std::int64_t done, std::int64_t remaining, double elapsed,
                                         std::optional<double> recent_seconds_per_step) {
  if (done < min_steps_for_eta) return std::nullopt;
  const double per_step = recent_seconds_per_step.value_or(elapsed / static_cast<double>(done));
  return per_step * static_cast<double>(std::max<std::int64_t>(0, remaining));
}

}  // namespace examples
