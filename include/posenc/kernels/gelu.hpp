// gelu_forward / gelu_backward: GELU with the tanh approximation (PyTorch's approximate="tanh").
#pragma once

#include <cmath>
#include <concepts>
#include <cstddef>
#include <numbers>

namespace posenc {

namespace detail {
inline constexpr double gelu_scale = 0.7978845608028654;  // sqrt(2/pi)
inline constexpr double gelu_cube = 0.044715;
}  // namespace detail

// out (N), inp (N)
template <std::floating_point S>
void gelu_forward(S* out, const S* inp, std::size_t N) {
  const S k = static_cast<S>(detail::gelu_scale);
  const S a = static_cast<S>(detail::gelu_cube);
  for (std::size_t i = 0; i < N; ++i) {
    const S x = inp[i];
    out[i] = S(0.5) * x * (S(1) + std::tanh(k * (x + a * x * x * x)));
  }
}

// dinp (N) is added into
template <std::floating_point S>
void gelu_backward(S* dinp, const S* inp, const S* dout, std::size_t N) {
  const S k = static_cast<S>(detail::gelu_scale);
  const S a = static_cast<S>(detail::gelu_cube);
  for (std::size_t i = 0; i < N; ++i) {
    const S x = inp[i];
    const S u = k * (x + a * x * x * x);
    const S t = std::tanh(u);
    const S sech2 = S(1) - t * t;
    // out = ½x(1 + tanh u)  →  dout/dx = ½(1 + tanh u) + ½x·sech²u·du/dx
    const S local = S(0.5) * (S(1) + t) + S(0.5) * x * sech2 * k * (S(1) + S(3) * a * x * x);
    dinp[i] += local * dout[i];
  }
}

}  // namespace posenc
