// fast::layernorm_forward/backward: layernorm.hpp's kernels split over rows (and columns), four floats at a time.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <tuple>
#include <type_traits>

#include "posenc/kernels/fast_math.hpp"
#include "posenc/kernels/layernorm.hpp"
#include "posenc/kernels/parallel.hpp"

namespace posenc::fast {

namespace detail {
// Σ x[c] and Σ x[c]·y[c] over C entries, in four lanes for float (the order differs from a
// plain loop by rounding only).
template <std::floating_point S>
S row_sum(const S* x, std::size_t C) {
  if constexpr (std::is_same_v<S, float>) {
    simd::f32x4 acc{};
    std::size_t c = 0;
    for (; c + 4 <= C; c += 4) acc += simd::load(x + c);
    float s = simd::sum(acc);
    for (; c < C; ++c) s += x[c];
    return s;
  } else {
    S s = 0;
    for (std::size_t c = 0; c < C; ++c) s += x[c];
    return s;
  }
}
}  // namespace detail

// out (N,C), mean (N), rstd (N), inp (N,C), weight (C), bias (C) — as posenc::layernorm_forward
template <std::floating_point S>
void layernorm_forward(S* out, S* mean, S* rstd, const S* inp, const S* weight, const S* bias,
                       std::size_t N, std::size_t C) {
  parallel_for_chunks(N, [&](std::size_t r0, std::size_t r1) {
    for (std::size_t n = r0; n < r1; ++n) {
      const S* x = inp + n * C;
      S* y = out + n * C;
      const S m = detail::row_sum(x, C) / static_cast<S>(C);
      // y holds x − m for a moment, so the variance is a plain sum of squares
      for (std::size_t c = 0; c < C; ++c) y[c] = x[c] - m;
      S var = 0;
      if constexpr (std::is_same_v<S, float>) {
        simd::f32x4 acc{};
        std::size_t c = 0;
        for (; c + 4 <= C; c += 4) {
          const simd::f32x4 d = simd::load(y + c);
          acc += d * d;
        }
        var = simd::sum(acc);
        for (; c < C; ++c) var += y[c] * y[c];
      } else {
        for (std::size_t c = 0; c < C; ++c) var += y[c] * y[c];
      }
      var /= static_cast<S>(C);
      const S s = S(1) / std::sqrt(var + static_cast<S>(layernorm_eps));
      for (std::size_t c = 0; c < C; ++c) y[c] = y[c] * s * weight[c] + bias[c];
      mean[n] = m;
      rstd[n] = s;
    }
  }, 8, 64);
}

// dinp (N,C), dweight (C), dbias (C) are added into — as posenc::layernorm_backward
template <std::floating_point S>
void layernorm_backward(S* dinp, S* dweight, S* dbias, const S* dout, const S* inp, const S* weight,
                        const S* mean, const S* rstd, std::size_t N, std::size_t C) {
  // dinp: rows are independent
  parallel_for_chunks(N, [&](std::size_t r0, std::size_t r1) {
    for (std::size_t n = r0; n < r1; ++n) {
      const S* x = inp + n * C;
      const S* dy = dout + n * C;
      S* dx = dinp + n * C;
      const S m = mean[n];
      const S s = rstd[n];
      // y = norm·weight + bias  →  dnorm = dy·weight, carried through the row's mean and variance
      S dnorm_mean = 0, dnorm_norm_mean = 0;
      if constexpr (std::is_same_v<S, float>) {  // posenc::detail::layernorm_gradient_means in four lanes
        simd::f32x4 a1{}, a2{};
        std::size_t c = 0;
        for (; c + 4 <= C; c += 4) {
          const simd::f32x4 norm = (simd::load(x + c) - m) * s;
          const simd::f32x4 dnorm = simd::load(dy + c) * simd::load(weight + c);
          a1 += dnorm;
          a2 += dnorm * norm;
        }
        dnorm_mean = simd::sum(a1);
        dnorm_norm_mean = simd::sum(a2);
        for (; c < C; ++c) {
          const S norm = (x[c] - m) * s;
          const S dnorm = dy[c] * weight[c];
          dnorm_mean += dnorm;
          dnorm_norm_mean += dnorm * norm;
        }
        dnorm_mean /= static_cast<S>(C);
        dnorm_norm_mean /= static_cast<S>(C);
      } else {
        std::tie(dnorm_mean, dnorm_norm_mean) = posenc::detail::layernorm_gradient_means(x, dy, weight, m, s, C);
      }
      for (std::size_t c = 0; c < C; ++c) {
        const S norm = (x[c] - m) * s;
        dx[c] += (dy[c] * weight[c] - dnorm_mean - norm * dnorm_norm_mean) * s;
      }
    }
  }, 8, 64);
  // dbias += Σ_n dy, dweight += Σ_n norm·dy, in order over n (as the reference)
  add_column_sums<S, 2>({dbias, dweight}, N, C, [&](std::size_t n, std::size_t c) {
    const S dy = dout[n * C + c];
    return std::array<S, 2>{dy, (inp[n * C + c] - mean[n]) * rstd[n] * dy};
  });
}

}  // namespace posenc::fast
