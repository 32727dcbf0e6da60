// stage_text(): the curriculum part of an evaluation's progress line — its stage's loss, the steps stages skipped.
#pragma once

#include <cstdio>
#include <string>

#include <posenc/train/trainer.hpp>

namespace examples {

// ", stage 0.3210" inside a curriculum stage, then ", 52000 steps skipped" once stages ended early;
// "" for a run without either.
inline std::string stage_text(const posenc::EvalRecord& r) {
  std::string text;
  char number[64];
  if (r.stage_loss) {
    std::snprintf(number, sizeof number, ", stage %.4f", *r.stage_loss);
    text += number;
  }
  if (r.skipped_steps != 0) {
    std::snprintf(number, sizeof number, ", %lld steps skipped", static_cast<long long>(r.skipped_steps));
    text += number;
  }
  return text;
}

}  // namespace examples
