// layernorm_forward / layernorm_backward: layer normalisation over the last axis, PyTorch's eps 1e-5.
#pragma once

#include <cmath>
#include <concepts>
#include <cstddef>
#include <utility>

namespace posenc {

inline constexpr double layernorm_eps = 1e-5;

// out (N,C), mean (N), rstd (N) saved for backward, inp (N,C), weight (C), bias (C)
template <std::floating_point S>
void layernorm_forward(S* out, S* mean, S* rstd, const S* inp, const S* weight, const S* bias,
                       std::size_t N, std::size_t C) {
  for (std::size_t n = 0; n < N; ++n) {
    const S* x = inp + n * C;
    S m = 0;
    for (std::size_t c = 0; c < C; ++c) m += x[c];
    m /= static_cast<S>(C);
    S var = 0;  // biased variance, as PyTorch normalises
    for (std::size_t c = 0; c < C; ++c) var += (x[c] - m) * (x[c] - m);
    var /= static_cast<S>(C);
    const S s = S(1) / std::sqrt(var + static_cast<S>(layernorm_eps));
    S* y = out + n * C;
    for (std::size_t c = 0; c < C; ++c) y[c] = (x[c] - m) * s * weight[c] + bias[c];
    mean[n] = m;
    rstd[n] = s;
  }
}

namespace detail {
// y = norm·weight + bias  →  dnorm = dy·weight; these two means of a row carry its gradient
// through the row's mean and variance: mean(dnorm) and mean(dnorm·norm).
template <std::floating_point S>
std::pair<S, S> layernorm_gradient_means(const S* x, const S* dy, const S* weight, S m, S s, std::size_t C) {
  S dnorm_mean = 0;
  S dnorm_norm_mean = 0;
  for (std::size_t c = 0; c < C; ++c) {
    const S norm = (x[c] - m) * s;
    const S dnorm = dy[c] * weight[c];
    dnorm_mean += dnorm;
    dnorm_norm_mean += dnorm * norm;
  }
  return {dnorm_mean / static_cast<S>(C), dnorm_norm_mean / static_cast<S>(C)};
}
}  // namespace detail

// dinp (N,C), dweight (C), dbias (C) are added into
template <std::floating_point S>
void layernorm_backward(S* dinp, S* dweight, S* dbias, const S* dout, const S* inp, const S* weight,
                        const S* mean, const S* rstd, std::size_t N, std::size_t C) {
  for (std::size_t n = 0; n < N; ++n) {
    const S* x = inp + n * C;
    const S* dy = dout + n * C;
    S* dx = dinp + n * C;
    const S m = mean[n];
    const S s = rstd[n];
    const auto [dnorm_mean, dnorm_norm_mean] = detail::layernorm_gradient_means(x, dy, weight, m, s, C);
    for (std::size_t c = 0; c < C; ++c) {
      const S norm = (x[c] - m) * s;
      const S dnorm = dy[c] * weight[c];
      dbias[c] += dy[c];
      dweight[c] += norm * dy[c];
      dx[c] += (dnorm - dnorm_mean - norm * dnorm_norm_mean) * s;
    }
  }
}

}  // namespace posenc
