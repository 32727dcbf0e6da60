// exp and tanh on four, eight or sixteen floats at once (GCC vector extensions, branch-free).
#pragma once

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace posenc::simd {

// Four floats in one SSE register (16 bytes: the baseline x86-64 ABI, so no -march is needed).
// Written with GCC's vector extensions because, without -ffast-math, GCC will not if-convert the
// clamps of a scalar exp and so will not vectorise a loop of them.
using f32x4 = float __attribute__((vector_size(16)));
using i32x4 = std::int32_t __attribute__((vector_size(16)));

inline f32x4 load(const float* p) {
  f32x4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store(float* p, f32x4 v) { std::memcpy(p, &v, sizeof v); }
// The first n < 4 floats of p, the rest zero; and the matching partial store.
inline f32x4 load_partial(const float* p, std::size_t n) {
  f32x4 v{};
  std::memcpy(&v, p, n * sizeof(float));
  return v;
}
inline void store_partial(float* p, f32x4 v, std::size_t n) { std::memcpy(p, &v, n * sizeof(float)); }
inline f32x4 broadcast(float x) { return f32x4{} + x; }
inline float sum(f32x4 v) { return (v[0] + v[1]) + (v[2] + v[3]); }

// The functions below are templates over the vector type V (f32x4 here; f32x8 and f32x16 inside
// the AVX2 and AVX-512 functions of the kernels). They take and give vectors by reference, never
// by value, so no 32- or 64-byte vector crosses a call boundary of code compiled without AVX
// (which GCC warns about as an ABI change, -Wpsabi), and they are always inlined.
template <class V>
[[gnu::always_inline]] inline void load_v(V& v, const float* p) {
  std::memcpy(&v, p, sizeof v);
}
template <class V>
[[gnu::always_inline]] inline void store_v(float* p, const V& v) {
  std::memcpy(p, &v, sizeof v);
}

// x ← e^x: x = n·ln2 + r with |r| ≤ ln2/2, e^r by Cephes's degree-6 polynomial, 2^n built in the
// exponent bits. Below −87.3 the result is exactly 0 and above 88 it is e^88, so it is never
// subnormal (a subnormal costs a microcode assist in every multiply it enters on many CPUs) or
// infinite. Within 2 ulp of std::exp elsewhere (tests/test_fast_kernels.cpp).
template <class V>
[[gnu::always_inline]] inline void exp_v(V& x) {
  using I = decltype(x < x);  // the integer vector of the same width
  const I underflows = x < -87.3f;
  x = underflows ? V{} - 87.3f : x;
  x = x > 88.0f ? V{} + 88.0f : x;
  const V t = x * 1.44269504088896341f;                        // x / ln 2
  const V fn = (t + 12582912.0f) - 12582912.0f;                // round to nearest (1.5·2^23 trick)
  const I n = __builtin_convertvector(fn, I);
  V r = x - fn * 0.693359375f;                                 // ln 2 in two parts (Cody–Waite)
  r = r - fn * -2.12194440e-4f;
  V p = r * 1.9875691500e-4f + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const V er = p * (r * r) + r + 1.0f;
  const I bits = (n + 127) << 23;
  V two_n;
  std::memcpy(&two_n, &bits, sizeof two_n);
  x = underflows ? V{} : er * two_n;
}

// x ← tanh x: Cephes's odd polynomial for |x| < 0.625, 1 − 2/(e^{2|x|} + 1) with the sign of x
// above. Absolute error below 3e-7 (tests/test_fast_kernels.cpp).
template <class V>
[[gnu::always_inline]] inline void tanh_v(V& x) {
  using I = decltype(x < x);
  const I sign_bit = I{} + static_cast<std::int32_t>(0x80000000u);
  I bits;
  std::memcpy(&bits, &x, sizeof bits);
  const I abs_bits = bits & ~sign_bit;
  V a;
  std::memcpy(&a, &abs_bits, sizeof a);
  V e = 2.0f * (a < 10.0f ? a : V{} + 10.0f);  // tanh 10 is 1 in float
  exp_v(e);
  const V large = 1.0f - 2.0f / (e + 1.0f);
  const V z = x * x;
  V p = z * -5.70498872745e-3f + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  const V small = x + x * z * p;
  I large_bits;
  std::memcpy(&large_bits, &large, sizeof large_bits);
  large_bits |= bits & sign_bit;
  V signed_large;
  std::memcpy(&signed_large, &large_bits, sizeof signed_large);
  x = a < 0.625f ? small : signed_large;
}

inline f32x4 exp(f32x4 x) {
  exp_v(x);
  return x;
}
inline f32x4 tanh(f32x4 x) {
  tanh_v(x);
  return x;
}

// Whether this CPU runs AVX2 with FMA: kernels then take their 8-wide paths, compiled for it with
// __attribute__((target)) so that posenc needs no -march flag.
inline bool cpu_has_avx2_fma() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return yes;
#else
  return false;
#endif
}

// Whether this CPU runs AVX-512F: element-wise kernels then take 16-wide paths. Each lane does
// the 8-wide path's arithmetic (FMA contractions included), so they give the same bits; on Zen 5
// GELU ran 1.9× faster so.
inline bool cpu_has_avx512f() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool yes = cpu_has_avx2_fma() && __builtin_cpu_supports("avx512f");
  return yes;
#else
  return false;
#endif
}

// Scalar forms, for tails and single values.
inline float exp(float x) { return simd::exp(broadcast(x))[0]; }
inline float tanh(float x) { return simd::tanh(broadcast(x))[0]; }

}  // namespace posenc::simd
