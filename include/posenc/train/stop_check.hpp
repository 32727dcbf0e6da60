// StopCheck and EvaluationStopped: how a long evaluation is asked to stop between its batches.
#pragma once

#include <functional>

#include "posenc/config.hpp"

namespace posenc {

// Asked between the batches of a long evaluation (a program's Ctrl-C handler sets what it reads):
// true abandons the evaluation, which throws EvaluationStopped. An empty one is never asked.
using StopCheck = std::function<bool()>;

// What an evaluation throws when its StopCheck asked it to stop before it scored the whole split.
class EvaluationStopped : public Error {
 public:
  EvaluationStopped() : Error("the evaluation was stopped on request before it finished") {}
};

namespace detail {
inline void stop_if_asked(const StopCheck& should_stop) {
  if (should_stop && should_stop()) throw EvaluationStopped();
}
}  // namespace detail

}  // namespace posenc
