// StepRate: seconds per step over the recent past, for an ETA that follows the machine's present speed.
#pragma once

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

}  // namespace examples
