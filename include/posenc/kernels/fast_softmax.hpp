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

// row[0..n) ← softmax(row[0..n)) in place, W floats at a time; returns the log-normaliser
template <class V>
[[gnu::always_inline]] inline float softmax_span(float* row, std::size_t n) {
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
  V acc{};
  j = 0;
  for (; j + W <= n; j += W) {
    V x;
    simd::load_v(x, row + j);
    x -= rmax;
    simd::exp_v(x);
    simd::store_v(row + j, x);
    acc += x;
  }
  float sum = lane_sum(acc);
  for (; j < n; j += 4) {
    const std::size_t r = std::min<std::size_t>(4, n - j);
    simd::f32x4 x = simd::load_partial(row + j, r) - rmax;
    simd::exp_v(x);
    simd::store_partial(row + j, x, r);
    for (std::size_t l = 0; l < r; ++l) sum += x[l];  // only the lanes that hold entries
  }
  // a probability below the smallest normal float is stored as 0, never as a subnormal
  const float inv = 1.0f / sum;
  constexpr float smallest = std::numeric_limits<float>::min();
  j = 0;
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
  for (j = 0; j + W <= n; j += W) {
    V p, d;
    simd::load_v(p, prow + j);
    simd::load_v(d, drow + j);
    simd::store_v(drow + j, p * (d - dot));
  }
  for (; j < n; ++j) drow[j] = prow[j] * (drow[j] - dot);
}

using f32x8 = float __attribute__((vector_size(32)));

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
