// StudyProgress: the study's console view — runs done, each running run's progress, and an ETA across the whole study.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <posenc/study/runner.hpp>

#include "../common/duration.hpp"
#include "../common/stage_text.hpp"
#include "../common/step_rate.hpp"
#include "../common/stop_signal.hpp"

namespace study {

class StudyProgress final : public posenc::StudyObserver {
 public:
  // prefix starts every line (a rank's name in a distributed study); remaining_steps 0: no ETA;
  // redraw: a one-line view on a terminal (false under mpirun, which gives ranks a pseudo-terminal)
  StudyProgress(std::size_t total_runs, std::size_t done, std::int64_t remaining_steps, bool redraw,
                std::string prefix = "")
      : total_(total_runs), done_(done), remaining_steps_(remaining_steps), prefix_(std::move(prefix)),
        terminal_(redraw && ::isatty(::fileno(stdout)) == 1), start_(Clock::now()) {}
  StudyProgress(const StudyProgress&) = delete;
  StudyProgress& operator=(const StudyProgress&) = delete;
  ~StudyProgress() override {  // an error's message starts on a line of its own
    if (dirty_) std::fputc('\n', stdout);
  }

  bool stop_requested() override { return examples::stop_requested(); }
  // The steps the ETA counts on: those to train less those trained since the start.
  std::int64_t steps_left() const {
    std::lock_guard lock(mutex_);
    return remaining_steps_ - steps_done_;
  }

  void started(std::size_t worker, const std::string& id) override {
    std::lock_guard lock(mutex_);
    if (workers_.size() <= worker) workers_.resize(worker + 1);
    workers_[worker] = {id, 0, 0, 0};
    line("start " + id);
  }
  void step(std::size_t worker, const posenc::StepReport& r) override {
    std::lock_guard lock(mutex_);
    workers_[worker].step = r.step;
    workers_[worker].total = r.total;
    ++steps_done_;
    rate_.add(seconds_since_start(), steps_done_);
    if (terminal_) {
      std::string text = "\r\x1b[K[" + std::to_string(done_) + "/" + std::to_string(total_) + " runs]";
      for (const Worker& w : workers_)
        if (!w.id.empty()) text += "  " + w.id + " " + std::to_string(w.step) + "/" + std::to_string(w.total);
      text += "  ETA " + eta();
      std::fputs(text.c_str(), stdout);
      std::fflush(stdout);
      dirty_ = true;
    }
  }
  void eval(std::size_t worker, const posenc::EvalRecord& r) override {
    std::lock_guard lock(mutex_);
    // a curriculum stage that ended early: its skipped steps will not be trained (a resumed run's
    // earlier skips come with its first evaluation here, as they were counted to train)
    Worker& w = workers_[worker];
    if (remaining_steps_ != 0) remaining_steps_ -= r.skipped_steps - w.skipped;
    w.skipped = r.skipped_steps;
    char text[320];
    std::snprintf(text, sizeof text, "%s step %lld: train %.4f val %.4f%s (estimates), ETA %s",
                  workers_[worker].id.c_str(), static_cast<long long>(r.step), r.train_loss, r.val_loss,
                  examples::stage_text(r).c_str(), eta().c_str());
    line(text);
  }
  // steps_elsewhere: the steps of a run another rank trained, which step() never saw
  void finished(std::size_t worker, posenc::RunEnd end, const std::string& message,
                std::int64_t steps_elsewhere) override {
    std::lock_guard lock(mutex_);
    if (end == posenc::RunEnd::done) ++done_;  // a stopped or failed run is still to do
    steps_done_ += steps_elsewhere;
    trained_elsewhere_ = trained_elsewhere_ || steps_elsewhere > 0;
    workers_[worker].id.clear();
    line("[" + std::to_string(done_) + "/" + std::to_string(total_) + " runs] " + message);
  }

 private:
  using Clock = std::chrono::steady_clock;
  struct Worker {
    std::string id;
    std::int64_t step = 0, total = 0;
    std::int64_t skipped = 0;  // the steps its run's curriculum skipped, as its evaluations said
  };
  double seconds_since_start() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  // At the recent rate of the steps trained here; at the average since the start when there is
  // none yet, or when the runs are trained by other ranks (reported only as they finish).
  std::string eta() const {
    if (remaining_steps_ == 0) return "?";
    const auto seconds = examples::eta_seconds(steps_done_, remaining_steps_ - steps_done_, seconds_since_start(),
                                               trained_elsewhere_ ? std::nullopt : rate_.seconds_per_step());
    return seconds ? examples::format_duration(*seconds) : "?";
  }
  void line(const std::string& text) {
    if (dirty_) std::fputc('\n', stdout);
    dirty_ = false;
    std::printf("%s%s\n", prefix_.c_str(), text.c_str());
    std::fflush(stdout);
  }
  mutable std::mutex mutex_;
  std::size_t total_, done_;
  std::int64_t remaining_steps_, steps_done_ = 0;
  std::string prefix_;
  bool terminal_, dirty_ = false, trained_elsewhere_ = false;
  Clock::time_point start_;
  examples::StepRate rate_;
  std::vector<Worker> workers_;
};

}  // namespace study
