// Tests of the example programs' StepRate, eta_seconds and the study's steps left: the ETAs of study and train.
#include <catch2/catch.hpp>

#include <cstdint>
#include <optional>

#include "../examples/common/step_rate.hpp"
#include "../examples/study/progress.hpp"

using examples::eta_seconds;
using examples::StepRate;

TEST_CASE("StepRate: the rate of the last window, a pause and a slow start forgotten once they are older") {
  StepRate rate(100);
  CHECK_FALSE(rate.seconds_per_step());
  rate.add(0, 0);
  CHECK_FALSE(rate.seconds_per_step());  // one moment: no rate yet
  // a slow start: 10 steps in 50 s, then 2 steps per second
  rate.add(50, 10);
  std::int64_t steps = 10;
  double t = 50;
  for (int i = 0; i < 200; ++i) rate.add(t += 0.5, ++steps);
  CHECK(*rate.seconds_per_step() == Approx(0.5));  // the slow start is older than the window
  // a pause of an hour (a stopped process), then 1 step per second
  t += 3600;
  rate.add(t, ++steps);
  CHECK_FALSE(rate.seconds_per_step());  // nothing in the window but the moment after the pause
  for (int i = 0; i < 30; ++i) rate.add(t += 1.0, ++steps);
  CHECK(*rate.seconds_per_step() == Approx(1.0));
  // within the window both speeds count
  for (int i = 0; i < 40; ++i) rate.add(t += 0.5, ++steps);
  CHECK(*rate.seconds_per_step() == Approx((30 * 1.0 + 40 * 0.5) / 70));
}

TEST_CASE("StepRate: steps closer together than a second are not each kept, and time without steps is no rate") {
  StepRate rate(10);
  for (int i = 0; i <= 1000; ++i) rate.add(i * 0.01, i);  // 1,000 steps in 10 s
  CHECK(*rate.seconds_per_step() == Approx(0.01));
  StepRate idle(10);
  idle.add(0, 5);
  idle.add(20, 5);
  CHECK_FALSE(idle.seconds_per_step());
}

TEST_CASE("eta_seconds: none for the first steps, then the recent rate, else the average, times the steps left") {
  CHECK_FALSE(eta_seconds(examples::min_steps_for_eta - 1, 100, 50.0, 0.5));
  CHECK(*eta_seconds(20, 100, 40.0, 0.5) == Approx(50.0));  // the recent rate wins
  CHECK(*eta_seconds(20, 100, 40.0, std::nullopt) == Approx(200.0));  // 2 s a step on average
  CHECK(*eta_seconds(20, -5, 40.0, 0.5) == 0.0);  // past the planned steps: nothing left
}

TEST_CASE("the study's ETA counts out the steps a curriculum stage skipped, once, a resumed run's too") {
  study::StudyProgress progress(2, 0, 300, false);  // two runs of 150 steps
  progress.started(0, "a");
  progress.step(0, posenc::StepReport{.step = 1, .total = 150});
  CHECK(progress.steps_left() == 299);
  posenc::EvalRecord r{.step = 1, .skipped_steps = 100};  // its stage ended at step 1
  progress.eval(0, r);
  CHECK(progress.steps_left() == 199);
  r.step = 2;
  progress.eval(0, r);  // the same skip again: counted once
  CHECK(progress.steps_left() == 199);
  progress.started(1, "b");  // a resumed run whose stage ended before it stopped
  r.step = 40;
  progress.eval(1, r);
  CHECK(progress.steps_left() == 99);
  study::StudyProgress without_eta(1, 0, 0, false);  // 0: no ETA, nothing to count
  without_eta.started(0, "a");
  without_eta.eval(0, r);
  CHECK(without_eta.steps_left() == 0);
}
