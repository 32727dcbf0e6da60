// softmax_row: one row's softmax in place, the reference arithmetic of attention (fast::softmax_row vectorises it).
#pragma once

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstddef>

namespace posenc {

// row[0..n) ← softmax(row[0..n)) in place; returns log Σ exp(row − max) + max, the row's
// log-normaliser. n ≥ 1.
template <std::floating_point S>
S softmax_row(S* row, std::size_t n) {
  const S rmax = *std::max_element(row, row + n);
  S sum = 0;
  for (std::size_t j = 0; j < n; ++j) {
    row[j] = std::exp(row[j] - rmax);
    sum += row[j];
  }
  const S inv = S(1) / sum;
  for (std::size_t j = 0; j < n; ++j) row[j] *= inv;
  return std::log(sum) + rmax;
}

}  // namespace posenc
