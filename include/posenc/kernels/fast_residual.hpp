// fast::add_into: a residual connection's dst += src, element by element, split over the threads.
#pragma once

#include <cstddef>

#include "posenc/kernels/parallel.hpp"

namespace posenc::fast {

// dst (n) += src (n). Each element is one addition whichever thread does it, so the result does
// not depend on the thread count; below 64k elements one thread is faster than waking a second.
template <class S>
void add_into(S* dst, const S* src, std::size_t n) {
  parallel_for_chunks(n, [&](std::size_t i0, std::size_t i1) {
    for (std::size_t i = i0; i < i1; ++i) dst[i] += src[i];
  }, 64, std::size_t{1} << 16);
}

}  // namespace posenc::fast
