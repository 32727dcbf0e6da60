// fast::softmax_row, softmax_row_backward and dot: the row operations of attention and cross-entropy, vectorised.
#pragma once

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <limits>
#include <type_traits>

#include "posenc/kernels/fast_math.hpp"
#include "posenc/kernels/softmax.hpp"

namespace posenc::fast {

namespace detail {

// Σ of a vector's lanes, lane 0 first
template <class V>
[[gnu::always_inline]] inline float lane_sum(const V& v) {
  float s = 0;
  for (std::size_t l = 0; l < sizeof(V) / sizeof(float); ++l) s += v[l];
  return s;
}

// the largest of row[0..n), n ≥ 1, W floats at a time
template <class V>
[[gnu::always_inline]] inline float max_span(const float* row, std::size_t n) {
  constexpr std::size_t W = sizeof(V) / sizeof(float);
  float rmax = -std::numeric_limits<float>::infinity();
  std::size_t j = 0;
  if (n >= W) {
    V vmax;
    simd::load_v(vmax, row);
    for (j = W; j + W <= n; j += W) {
      V x;
      simd::load_v(x, row + j);
      vmax = x > vmax ? x : vmax;
    }
    for (std::size_t l = 0; l < W; ++l) rmax = std::max(rmax, vmax[l]);
  }
  for (; j < n; ++j) rmax = std::max(rmax, row[j]);
  return rmax;
}

// row[0..n) ← exp(row − shift) in place, a value below the smallest normal float stored as 0;
// returns their sum
template <class V>
[[gnu::always_inline]] inline float exp_shifted_span(float* row, std::size_t n, float shift) {
  constexpr std::size_t W = sizeof(V) / sizeof(float);
  constexpr float smallest = std::numeric_limits<float>::min();
  V acc{};
  std::size_t j = 0;
  for (; j + W <= n; j += W) {
    V x;
    simd::load_v(x, row + j);
    x -= shift;
    simd::exp_v(x);
    x = x < smallest ? V{} : x;
    simd::store_v(row + j, x);
    acc += x;
  }
  float sum = lane_sum(acc);
  for (; j < n; j += 4) {
    const std::size_t r = std::min<std::size_t>(4, n - j);
    simd::f32x4 x = simd::load_partial(row + j, r) - shift;
    simd::exp_v(x);
    x = x < smallest ? simd::f32x4{} : x;
    simd::store_partial(row + j, x, r);
    for (std::size_t l = 0; l < r; ++l) sum += x[l];
  }
  return sum;
}

// row[0..n) ← softmax(row[0..n)) in place, W floats at a time; returns the log-normaliser
template <class V>
[[gnu::always_inline]] inline float softmax_span(float* row, std::size_t n) {
  constexpr std::size_t W = sizeof(V) / sizeof(float);
  const float rmax = max_span<V>(row, n);
  // a value below the smallest normal float adds nothing to a sum ≥ 1 (the maximum's term)
  const float sum = exp_shifted_span<V>(row, n, rmax);
  // a probability below the smallest normal float is stored as 0, never as a subnormal
  const float inv = 1.0f / sum;
  constexpr float smallest = std::numeric_limits<float>::min();
  std::size_t j = 0;
  for (; j + W <= n; j += W) {
    V x;
    simd::load_v(x, row + j);
    x *= inv;
    simd::store_v(row + j, x < smallest ? V{} : x);
  }
  for (; j < n; ++j) {
    const float p = row[j] * inv;
    row[j] = p < smallest ? 0.0f : p;
  }
  return std::log(sum) + rmax;
}

// drow[0..n) ← p ⊙ (drow − d), W floats at a time
template <class V>
[[gnu::always_inline]] inline void softmax_backward_given_span(float* drow, const float* prow, std::size_t n,
                                                               float d) {
  constexpr std::size_t W = sizeof(V) / sizeof(float);
  std::size_t j = 0;
  for (; j + W <= n; j += W) {
    V p, g;
    simd::load_v(p, prow + j);
    simd::load_v(g, drow + j);
    simd::store_v(drow + j, p * (g - d));
  }
  for (; j < n; ++j) drow[j] = prow[j] * (drow[j] - d);
}

// drow[0..n) ← p ⊙ (drow − Σ p·drow), W floats at a time
template <class V>
[[gnu::always_inline]] inline void softmax_backward_span(float* drow, const float* prow, std::size_t n) {
  constexpr std::size_t W = sizeof(V) / sizeof(float);
  V acc{};
  std::size_t j = 0;
  for (; j + W <= n; j += W) {
    V p, d;
    simd::load_v(p, prow + j);
    simd::load_v(d, drow + j);
    acc += p * d;
  }
  float dot = lane_sum(acc);
  for (std::size_t k = j; k < n; ++k) dot += prow[k] * drow[k];
  softmax_backward_given_span<V>(drow, prow, n, dot);
}

using f32x8 = float __attribute__((vector_size(32)));

[[gnu::target("avx2,fma")]] inline void softmax_backward_given_avx2(float* drow, const float* prow, std::size_t n,
                                                                    float d) {
  softmax_backward_given_span<f32x8>(drow, prow, n, d);
}
[[gnu::target("avx2,fma")]] inline float max_avx2(const float* row, std::size_t n) {
  return max_span<f32x8>(row, n);
}
[[gnu::target("avx2,fma")]] inline float exp_shifted_avx2(float* row, std::size_t n, float shift) {
  return exp_shifted_span<f32x8>(row, n, shift);
}

[[gnu::target("avx2,fma")]] inline float softmax_row_avx2(float* row, std::size_t n) {
  return softmax_span<f32x8>(row, n);
}
[[gnu::target("avx2,fma")]] inline void softmax_backward_avx2(float* drow, const float* prow, std::size_t n) {
  softmax_backward_span<f32x8>(drow, prow, n);
}

}  // namespace detail

// Σ a[j]·b[j] for j < n
template <std::floating_point S>
S dot(const S* a, const S* b, std::size_t n) {
  if constexpr (std::is_same_v<S, float>) {
    simd::f32x4 acc{};
    std::size_t j = 0;
    for (; j + 4 <= n; j += 4) acc += simd::load(a + j) * simd::load(b + j);
    float s = simd::sum(acc);
    for (; j < n; ++j) s += a[j] * b[j];
    return s;
  } else {
    S s = 0;
    for (std::size_t j = 0; j < n; ++j) s += a[j] * b[j];
    return s;
  }
}

// row[0..n) ← softmax(row[0..n)) in place; returns log Σ exp(row − max) + max, the row's
// log-normaliser (cross-entropy uses it). n ≥ 1. Float uses simd::exp_v, double std::exp.
template <std::floating_point S>
S softmax_row(S* row, std::size_t n) {
  if constexpr (std::is_same_v<S, float>) {
    return simd::cpu_has_avx2_fma() ? detail::softmax_row_avx2(row, n)
                                    : detail::softmax_span<simd::f32x4>(row, n);
  } else {
    return posenc::softmax_row(row, n);
  }
}

// The largest of row[0..n), n ≥ 1.
template <std::floating_point S>
S row_max(const S* row, std::size_t n) {
  if constexpr (std::is_same_v<S, float>) {
    return simd::cpu_has_avx2_fma() ? detail::max_avx2(row, n) : detail::max_span<simd::f32x4>(row, n);
  } else {
    return *std::max_element(row, row + n);
  }
}

// row[0..n) ← exp(row − shift) in place; returns their sum: a softmax row's numerators under a
// running maximum (the online softmax of tiled attention), or, with shift the row's
// log-normaliser, its probabilities. Float uses simd::exp_v and stores a value below the smallest
// normal float as 0 (as softmax_row does); double uses std::exp.
template <std::floating_point S>
S exp_shifted_row(S* row, std::size_t n, S shift) {
  if constexpr (std::is_same_v<S, float>) {
    return simd::cpu_has_avx2_fma() ? detail::exp_shifted_avx2(row, n, shift)
                                    : detail::exp_shifted_span<simd::f32x4>(row, n, shift);
  } else {
    S sum = 0;
    for (std::size_t j = 0; j < n; ++j) sum += row[j] = std::exp(row[j] - shift);
    return sum;
  }
}

// drow[0..n) ← p ⊙ (drow − d), with d = Σ p·drow given (in tiled attention, the row's dy·y)
template <std::floating_point S>
void softmax_row_backward_given(S* drow, const S* prow, std::size_t n, S d) {
  if constexpr (std::is_same_v<S, float>) {
    if (simd::cpu_has_avx2_fma()) detail::softmax_backward_given_avx2(drow, prow, n, d);
    else detail::softmax_backward_given_span<simd::f32x4>(drow, prow, n, d);
  } else {
    for (std::size_t j = 0; j < n; ++j) drow[j] = prow[j] * (drow[j] - d);
  }
}

// drow[0..n) ← p ⊙ (drow − Σ p·drow): the gradient through a softmax row p = prow[0..n)
template <std::floating_point S>
void softmax_row_backward(S* drow, const S* prow, std::size_t n) {
  if constexpr (std::is_same_v<S, float>) {
    if (simd::cpu_has_avx2_fma()) detail::softmax_backward_avx2(drow, prow, n);
    else detail::softmax_backward_span<simd::f32x4>(drow, prow, n);
  } else {
    const S d = dot(prow, drow, n);
    for (std::size_t j = 0; j < n; ++j) drow[j] = prow[j] * (drow[j] - d);
  }
}

}  // namespace posenc::fast
