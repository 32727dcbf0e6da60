// fast::gelu_forward/backward: gelu.hpp's tanh GELU as x·σ(2u), 4, 8 or 16 floats at a time by the CPU, threaded.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <type_traits>
#include <vector>

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

// One thread's part of the float GELUs, by the widest vectors the CPU has.
inline void gelu_forward_part(float* out, const float* inp, std::size_t n) {
  if (simd::cpu_has_avx512f()) gelu_forward_avx512(out, inp, n);
  else if (simd::cpu_has_avx2_fma()) gelu_forward_avx2(out, inp, n);
  else gelu_forward_span<simd::f32x4>(out, inp, n);
}
inline void gelu_backward_part(float* dinp, const float* inp, const float* dout, std::size_t n, bool overwrite) {
  if (simd::cpu_has_avx512f()) gelu_backward_avx512(dinp, inp, dout, n, overwrite);
  else if (simd::cpu_has_avx2_fma()) gelu_backward_avx2(dinp, inp, dout, n, overwrite);
  else gelu_backward_span<simd::f32x4>(dinp, inp, dout, n, overwrite);
}

}  // namespace detail

// out (N), inp (N) — as posenc::gelu_forward; float uses simd::exp_v, double the reference's
// std::tanh
template <std::floating_point S>
void gelu_forward(S* out, const S* inp, std::size_t N) {
  parallel_for_chunks(N, [&](std::size_t i0, std::size_t i1) {
    if constexpr (std::is_same_v<S, float>) detail::gelu_forward_part(out + i0, inp + i0, i1 - i0);
    else posenc::gelu_forward(out + i0, inp + i0, i1 - i0);
  }, 64, 4096);
}

// dinp (N) is added into — as posenc::gelu_backward — or, with overwrite, written (so a fresh
// gradient buffer needs no zeroing first). dinp may be dout itself (each element is read before
// it is written).
template <std::floating_point S>
void gelu_backward(S* dinp, const S* inp, const S* dout, std::size_t N, bool overwrite = false) {
  parallel_for_chunks(N, [&](std::size_t i0, std::size_t i1) {
    if constexpr (std::is_same_v<S, float>) {
      detail::gelu_backward_part(dinp + i0, inp + i0, dout + i0, i1 - i0, overwrite);
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

namespace detail {

// What gelu_forward_bf16 computes its float results into, a piece of its part at a time, so that
// the rounding reads them from cache: 128 KB, a few calls of oneDNN's rounding a layer.
inline constexpr std::size_t gelu_bf16_tile = std::size_t{1} << 15;
inline std::vector<float>& gelu_bf16_tile_of_this_thread() {
  thread_local std::vector<float> tile(gelu_bf16_tile);
  return tile;
}

}  // namespace detail

// out (N) = gelu(inp) rounded to bfloat16 (to nearest even, as round_to_bf16): the bits of
// gelu_forward followed by round_to_bf16, without writing or reading the float result in memory —
// a bf16 layer that reads the GELU's output needs only its rounding.
inline void gelu_forward_bf16(Bf16* out, const float* inp, std::size_t N) {
  parallel_for_chunks(N, [&](std::size_t i0, std::size_t i1) {
    float* tile = detail::gelu_bf16_tile_of_this_thread().data();
    [[maybe_unused]] const GemmSignalHold signals_held{};  // one hold for the part's roundings
    for (std::size_t t0 = i0; t0 < i1; t0 += detail::gelu_bf16_tile) {
      const std::size_t n = std::min(detail::gelu_bf16_tile, i1 - t0);
      detail::gelu_forward_part(tile, inp + t0, n);
      round_to_bf16(out + t0, tile, 1, n, n);
    }
  }, 64, 4096);
}

// dinp16 (rows, cols) = gelu'(inp)·dout rounded to bfloat16, and dbias (cols), unless nullptr, added
// the columns' sums of the unrounded products in add_row_block_column_sums' order: the bits of
// gelu_backward with overwrite, round_to_bf16 and that sum, in one pass that never writes the
// float products to memory — a bf16 layer whose output gradient they are reads only their
// rounding, and its bias gradient is their sum (fast::linear_backward sums a bf16 layer's bias
// gradient in the same order). Each thread takes whole rows, a block of them at a time.
inline void gelu_backward_bf16(Bf16* dinp16, float* dbias, const float* inp, const float* dout, std::size_t rows,
                               std::size_t cols) {
  const auto block = [&](std::size_t r0, std::size_t r1, float* partial) {
    thread_local std::vector<float> tile;
    tile.resize(column_sum_block_rows * cols);
    [[maybe_unused]] const GemmSignalHold signals_held{};
    const std::size_t n = (r1 - r0) * cols;
    detail::gelu_backward_part(tile.data(), inp + r0 * cols, dout + r0 * cols, n, true);
    round_to_bf16(dinp16 + r0 * cols, tile.data(), 1, n, n);
    if (partial != nullptr) sum_rows_in_order(partial, tile.data(), r1 - r0, cols);
  };
  if (dbias != nullptr) add_row_block_column_sums(dbias, rows, cols, block);
  else parallel_for_row_blocks(rows, [&](std::size_t r0, std::size_t r1, std::size_t) { block(r0, r1, nullptr); });
}

}  // namespace posenc::fast
