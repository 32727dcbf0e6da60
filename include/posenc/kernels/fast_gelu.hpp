// fast::gelu_forward/backward: gelu.hpp's tanh GELU as x·σ(2u), 4, 8 or 16 floats at a time by the CPU, threaded.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <type_traits>

#include "posenc/kernels/fast_math.hpp"
#include "posenc/kernels/gelu.hpp"
#include "posenc/kernels/parallel.hpp"

namespace posenc::fast {

namespace detail {

// x ← ½x(1 + tanh u) = x·σ(2u) with σ(z) = 1/(1 + e^−z) and u = k(x + a·x³): one exp and one
// division, and no cancellation. Vectors by reference, as in fast_math.hpp.
template <class V>
[[gnu::always_inline]] inline void gelu_v(V& x) {
  const float k = static_cast<float>(posenc::detail::gelu_scale);
  const float a = static_cast<float>(posenc::detail::gelu_cube);
  V e = -2.0f * k * (x + a * x * x * x);
  simd::exp_v(e);
  x = x / (1.0f + e);
}
// x ← d/dx ½x(1 + tanh u) = ½(1 + tanh u) + ½x·sech²u·du/dx, with ½(1 + tanh u) = s = σ(2u) and
// sech²u = 4s(1 − s)
template <class V>
[[gnu::always_inline]] inline void gelu_grad_v(V& x) {
  const float k = static_cast<float>(posenc::detail::gelu_scale);
  const float a = static_cast<float>(posenc::detail::gelu_cube);
  V e = -2.0f * k * (x + a * x * x * x);
  simd::exp_v(e);
  const V s = 1.0f / (1.0f + e);
  x = s + 2.0f * x * s * (1.0f - s) * k * (1.0f + 3.0f * a * x * x);
}

// out[0..n) = gelu(inp), W floats at a time, the tail through a zero-padded 4-wide vector
template <class V>
[[gnu::always_inline]] inline void gelu_forward_span(float* out, const float* inp, std::size_t n) {
  constexpr std::size_t W = sizeof(V) / sizeof(float);
  std::size_t i = 0;
  for (; i + W <= n; i += W) {
    V x;
    simd::load_v(x, inp + i);
    gelu_v(x);
    simd::store_v(out + i, x);
  }
  for (; i < n; i += 4) {
    const std::size_t r = std::min<std::size_t>(4, n - i);
    simd::f32x4 x = simd::load_partial(inp + i, r);
    gelu_v(x);
    simd::store_partial(out + i, x, r);
  }
}

// dinp[0..n) (+)= gelu'(inp)·dout
template <class V>
[[gnu::always_inline]] inline void gelu_backward_span(float* dinp, const float* inp,
                                                      const float* dout, std::size_t n,
                                                      bool overwrite) {
  constexpr std::size_t W = sizeof(V) / sizeof(float);
  std::size_t i = 0;
  for (; i + W <= n; i += W) {
    V x, dy, prev{};
    simd::load_v(x, inp + i);
    simd::load_v(dy, dout + i);
    if (!overwrite) simd::load_v(prev, dinp + i);
    gelu_grad_v(x);
    simd::store_v(dinp + i, prev + x * dy);
  }
  for (; i < n; i += 4) {
    const std::size_t r = std::min<std::size_t>(4, n - i);
    simd::f32x4 x = simd::load_partial(inp + i, r);
    const simd::f32x4 prev = overwrite ? simd::f32x4{} : simd::load_partial(dinp + i, r);
    gelu_grad_v(x);
    simd::store_partial(dinp + i, prev + x * simd::load_partial(dout + i, r), r);
  }
}

using f32x8 = float __attribute__((vector_size(32)));

[[gnu::target("avx2,fma")]] inline void gelu_forward_avx2(float* out, const float* inp, std::size_t n) {
  gelu_forward_span<f32x8>(out, inp, n);
}
[[gnu::target("avx2,fma")]] inline void gelu_backward_avx2(float* dinp, const float* inp,
                                                           const float* dout, std::size_t n,
                                                           bool overwrite) {
  gelu_backward_span<f32x8>(dinp, inp, dout, n, overwrite);
}

using f32x16 = float __attribute__((vector_size(64)));

// the same arithmetic per lane as the AVX2 functions, so the same bits (test_fast_kernels)
[[gnu::target("avx512f,avx2,fma")]] inline void gelu_forward_avx512(float* out, const float* inp, std::size_t n) {
  gelu_forward_span<f32x16>(out, inp, n);
}
[[gnu::target("avx512f,avx2,fma")]] inline void gelu_backward_avx512(float* dinp, const float* inp,
                                                                     const float* dout, std::size_t n,
                                                                     bool overwrite) {
  gelu_backward_span<f32x16>(dinp, inp, dout, n, overwrite);
}

}  // namespace detail

// out (N), inp (N) — as posenc::gelu_forward; float uses simd::exp_v, double the reference's
// std::tanh
template <std::floating_point S>
void gelu_forward(S* out, const S* inp, std::size_t N) {
  const bool avx512 = simd::cpu_has_avx512f(), avx2 = simd::cpu_has_avx2_fma();
  parallel_for_chunks(N, [&](std::size_t i0, std::size_t i1) {
    if constexpr (std::is_same_v<S, float>) {
      if (avx512) detail::gelu_forward_avx512(out + i0, inp + i0, i1 - i0);
      else if (avx2) detail::gelu_forward_avx2(out + i0, inp + i0, i1 - i0);
      else detail::gelu_forward_span<simd::f32x4>(out + i0, inp + i0, i1 - i0);
    } else {
      posenc::gelu_forward(out + i0, inp + i0, i1 - i0);
    }
  }, 64, 4096);
}

// dinp (N) is added into — as posenc::gelu_backward — or, with overwrite, written (so a fresh
// gradient buffer needs no zeroing first). dinp may be dout itself (each element is read before
// it is written).
template <std::floating_point S>
void gelu_backward(S* dinp, const S* inp, const S* dout, std::size_t N, bool overwrite = false) {
  const bool avx512 = simd::cpu_has_avx512f(), avx2 = simd::cpu_has_avx2_fma();
  parallel_for_chunks(N, [&](std::size_t i0, std::size_t i1) {
    if constexpr (std::is_same_v<S, float>) {
      if (avx512) detail::gelu_backward_avx512(dinp + i0, inp + i0, dout + i0, i1 - i0, overwrite);
      else if (avx2) detail::gelu_backward_avx2(dinp + i0, inp + i0, dout + i0, i1 - i0, overwrite);
      else detail::gelu_backward_span<simd::f32x4>(dinp + i0, inp + i0, dout + i0, i1 - i0, overwrite);
    } else {
      for (std::size_t i = i0; i < i1; ++i) {  // the reference's arithmetic, element by element
        const S dy = dout[i];
        S local = 0;
        posenc::gelu_backward(&local, inp + i, &dy, 1);  // local = gelu'(x)·dy
        dinp[i] = overwrite ? local : dinp[i] + local;
      }
    }
  }, 64, 4096);
}

}  // namespace posenc::fast
