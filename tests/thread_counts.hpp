// ThreadCounts: restores posenc's default thread count when a test that fixes it ends.
#pragma once

#include <posenc/threads.hpp>

namespace posenc_test {

struct ThreadCounts {
  ~ThreadCounts() { posenc::set_num_threads(posenc::default_num_threads()); }
};

}  // namespace posenc_test
