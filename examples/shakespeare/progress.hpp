// Progress: a one-line progress bar on a terminal, plain log lines otherwise.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include <unistd.h>

#include <posenc/train/trainer.hpp>

#include "../common/duration.hpp"
#include "../common/stage_text.hpp"
#include "../common/step_rate.hpp"

namespace shakespeare {

using examples::format_duration;

class Progress {
 public:
  // redraw: a progress bar when out is a terminal (mpirun gives its ranks a pseudo-terminal even
  // when its own output goes to a file, so MPI programs pass false)
  explicit Progress(std::FILE* out = stdout, bool redraw = true)
      : out_(out), terminal_(redraw && ::isatty(::fileno(out)) == 1), start_(Clock::now()) {}
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  ~Progress() { line_break(); }  // an error's message starts on a line of its own

  void step(const posenc::StepReport& r) {
    const std::string eta = this->eta(r);
    if (terminal_) {
      std::fprintf(out_, "\r\x1b[Kstep %lld/%lld  loss %.4f  lr %.3g  |grad| %.3g  %.0f tokens/s  elapsed %s  ETA %s",
                   static_cast<long long>(r.step), static_cast<long long>(r.total), r.loss, r.lr, r.grad_norm,
                   r.tokens_per_second, format_duration(r.elapsed_seconds).c_str(), eta.c_str());
      std::fflush(out_);
      dirty_ = true;
    } else if (r.step % plain_interval(r.total) == 0) {
      std::fprintf(out_, "step %lld/%lld loss %.4f lr %.3g grad_norm %.3g tokens/s %.0f elapsed %s eta %s\n",
                   static_cast<long long>(r.step), static_cast<long long>(r.total), r.loss, r.lr, r.grad_norm,
                   r.tokens_per_second, format_duration(r.elapsed_seconds).c_str(), eta.c_str());
      std::fflush(out_);
    }
  }

  void eval(const posenc::EvalRecord& r) {
    line_break();
    std::fprintf(out_, "eval step %lld: train loss %.4f, val loss %.4f%s (estimates)\n",
                 static_cast<long long>(r.step), r.train_loss, r.val_loss, examples::stage_text(r).c_str());
    std::fflush(out_);
  }

  void line_break() {
    if (dirty_) std::fputc('\n', out_);
    dirty_ = false;
  }

 private:
  // The steps left at the recent wall-clock rate of this process's steps, evaluations included
  // (eta_seconds); "?" for the first few.
  std::string eta(const posenc::StepReport& r) {
    const double seconds = std::chrono::duration<double>(Clock::now() - start_).count();
    if (!first_step_) first_step_ = r.step - 1;  // a resumed run starts past its saved steps
    rate_.add(seconds, r.step);
    const auto left = examples::eta_seconds(r.step - *first_step_, r.total - r.step, seconds, rate_.seconds_per_step());
    return left ? format_duration(*left) : "?";
  }
  static long long plain_interval(long long total) { return total >= 20 ? total / 20 : 1; }
  using Clock = std::chrono::steady_clock;
  std::FILE* out_;
  bool terminal_;
  bool dirty_ = false;
  Clock::time_point start_;
  std::optional<std::int64_t> first_step_;
  examples::StepRate rate_;
};

}  // namespace shakespeare
