// Progress: a one-line progress bar on a terminal, plain log lines otherwise.
#pragma once

#include <cstdio>
#include <string>

#include <unistd.h>

#include <posenc/train/trainer.hpp>

#include "../common/duration.hpp"

namespace shakespeare {

using examples::format_duration;

class Progress {
 public:
  // redraw: a progress bar when out is a terminal (mpirun gives its ranks a pseudo-terminal even
  // when its own output goes to a file, so MPI programs pass false)
  explicit Progress(std::FILE* out = stdout, bool redraw = true)
      : out_(out), terminal_(redraw && ::isatty(::fileno(out)) == 1) {}

  void step(const posenc::StepReport& r, double eta_seconds) {
    if (terminal_) {
      std::fprintf(out_, "\r\x1b[Kstep %lld/%lld  loss %.4f  %.0f tokens/s  elapsed %s  ETA %s",
                   static_cast<long long>(r.step), static_cast<long long>(r.total), r.loss,
                   r.tokens_per_second, format_duration(r.elapsed_seconds).c_str(),
                   format_duration(eta_seconds).c_str());
      std::fflush(out_);
      dirty_ = true;
    } else if (r.step % plain_interval(r.total) == 0) {
      std::fprintf(out_, "step %lld/%lld loss %.4f tokens/s %.0f elapsed %s eta %s\n",
                   static_cast<long long>(r.step), static_cast<long long>(r.total), r.loss,
                   r.tokens_per_second, format_duration(r.elapsed_seconds).c_str(),
                   format_duration(eta_seconds).c_str());
      std::fflush(out_);
    }
  }

  void eval(const posenc::EvalRecord& r) {
    line_break();
    std::fprintf(out_, "eval step %lld: train loss %.4f, val loss %.4f (estimates)\n",
                 static_cast<long long>(r.step), r.train_loss, r.val_loss);
    std::fflush(out_);
  }

  void line_break() {
    if (dirty_) std::fputc('\n', out_);
    dirty_ = false;
  }

 private:
  static long long plain_interval(long long total) { return total >= 20 ? total / 20 : 1; }
  std::FILE* out_;
  bool terminal_;
  bool dirty_ = false;
};

}  // namespace shakespeare
