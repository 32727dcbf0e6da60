// fast::linear_forward / fast::linear_backward: linear.hpp's layer with every GEMM split over the threads.
#pragma once

#include <algorithm>
#include <array>
#include <concepts>
#include <cstddef>
#include <type_traits>
#include <vector>

#include "posenc/kernels/parallel.hpp"

namespace posenc::fast {

namespace detail {

// The calling thread's bfloat16 copies of a linear layer's operands, kept from call to call so
// that the copies are not allocated (and their pages faulted in) on every call.
struct LinearBf16Operands {
  std::vector<Bf16> inp, weight, dout;
  static LinearBf16Operands& of_this_thread() {
    thread_local LinearBf16Operands operands;
    return operands;
  }
};

}  // namespace detail

// out (N,OC) = inp·weightᵀ (+ bias) with inp (N,C) already rounded to bfloat16 and the weight
// rounded here. The bias is copied into out and the product added to it: with oneDNN's bias
// argument instead, the study model's (1024, 768) forward took 1.47× as long (AMX Xeon).
inline void linear_forward_rounded(float* out, const Bf16* inp, const float* weight, const float* bias,
                                   std::size_t N, std::size_t C, std::size_t OC) {
  auto& bf16 = detail::LinearBf16Operands::of_this_thread();
  bf16.weight.resize(OC * C);
  parallel_round_to_bf16(bf16.weight.data(), weight, OC, C);
  split_gemm_output(N, OC, C, [&](std::size_t r0, std::size_t r1, std::size_t c0, std::size_t c1) {
    if (bias != nullptr)
      for (std::size_t n = r0; n < r1; ++n) std::copy(bias + c0, bias + c1, out + n * OC + c0);
    gemm_bf16(false, true, r1 - r0, c1 - c0, C, inp + r0 * C, C, bf16.weight.data() + c0 * C, C, bias != nullptr,
              out + r0 * OC + c0, OC);
  });
}

namespace detail {

// bf16 linear_forward: each operand rounded once, not once per thread (the layer is bound by memory
// traffic, not arithmetic); the input into rounded_inp when given, for the backward to reuse.
inline void linear_forward_bf16(float* out, const float* inp, const float* weight, const float* bias, std::size_t N,
                                std::size_t C, std::size_t OC, Bf16* rounded_inp) {
  auto& bf16 = LinearBf16Operands::of_this_thread();
  if (rounded_inp == nullptr) {
    bf16.inp.resize(N * C);
    rounded_inp = bf16.inp.data();
  }
  parallel_round_to_bf16(rounded_inp, inp, N, C);
  linear_forward_rounded(out, rounded_inp, weight, bias, N, C, OC);
}

// bf16 linear_backward: each operand rounded once, the rounded dout serving both products; inp not
// at all when the forward's rounding of it is given, dout not when its rounding is. The bias
// gradient is summed over blocks of rows (add_row_block_column_sums): each thread reads whole rows.
inline void linear_backward_bf16(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                                 const float* weight, std::size_t N, std::size_t C, std::size_t OC,
                                 bool overwrite_dinp, const Bf16* rounded_inp, const Bf16* rounded_dout) {
  auto& bf16 = LinearBf16Operands::of_this_thread();
  const Bf16* dout16 = rounded_dout;
  if (dout16 == nullptr) {
    bf16.dout.resize(N * OC);
    parallel_round_to_bf16(bf16.dout.data(), dout, N, OC);
    dout16 = bf16.dout.data();
  }
  if (dbias != nullptr)  // in the order of gelu_backward_bf16's, which computes mlp_fc's
    add_row_block_column_sums(dbias, N, OC, [&](std::size_t r0, std::size_t r1, float* partial) {
      sum_rows_in_order(partial, dout + r0 * OC, r1 - r0, OC);
    });
  if (rounded_inp == nullptr) {
    bf16.inp.resize(N * C);
    parallel_round_to_bf16(bf16.inp.data(), inp, N, C);
    rounded_inp = bf16.inp.data();
  }
  if (dinp != nullptr) {
    bf16.weight.resize(OC * C);
    parallel_round_to_bf16(bf16.weight.data(), weight, OC, C);
    parallel_gemm_bf16(false, false, N, C, OC, dout16, OC, bf16.weight.data(), C, !overwrite_dinp, dinp, C);
  }
  parallel_gemm_bf16(true, false, OC, C, N, dout16, OC, rounded_inp, C, true, dweight, C);
}

}  // namespace detail

// out (N,OC), inp (N,C), weight (OC,C), bias (OC) or nullptr — as posenc::linear_forward; with
// bf16 precision the GEMM's operands are rounded to bfloat16 (gemm.hpp) and it accumulates in float,
// and rounded_inp (N,C), when given, receives the rounded input for linear_backward to reuse
// (a training step saves a pass over each input that way; ignored at fp32).
template <std::floating_point S>
void linear_forward(S* out, const S* inp, const S* weight, const S* bias, std::size_t N,
                    std::size_t C, std::size_t OC, Precision precision = Precision::fp32,
                    Bf16* rounded_inp = nullptr) {
  if constexpr (std::is_same_v<S, float>)
    if (precision == Precision::bf16)
      return detail::linear_forward_bf16(out, inp, weight, bias, N, C, OC, rounded_inp);
  // out = inp·weightᵀ (+ bias): each thread takes whole rows, its bias copy and its GEMM together.
  parallel_for_chunks(N, [&](std::size_t r0, std::size_t r1) {
    if (bias != nullptr)
      for (std::size_t n = r0; n < r1; ++n) std::copy(bias, bias + OC, out + n * OC);
    gemm<S>(false, true, r1 - r0, OC, C, S(1), inp + r0 * C, C, weight, C,
            bias != nullptr ? S(1) : S(0), out + r0 * OC, OC, precision);
  }, 16, (1u << 21) / (2 * std::max<std::size_t>(1, C * OC)));
}

// dinp (N,C), dweight (OC,C), dbias (OC) are added into; dinp or dbias may be nullptr. With
// overwrite_dinp, dinp is written instead of added into (a fresh buffer needs no zeroing). bf16
// rounds both GEMMs' operands (dout, weight, inp), as autocast's backward does; rounded_inp, when
// given, is linear_forward's rounding of this inp and is used instead of rounding it again (inp may
// then be nullptr), and rounded_dout likewise dout's (dout is still read for dbias, and may be nullptr
// without one).
template <std::floating_point S>
void linear_backward(S* dinp, S* dweight, S* dbias, const S* dout, const S* inp, const S* weight,
                     std::size_t N, std::size_t C, std::size_t OC, bool overwrite_dinp = false,
                     Precision precision = Precision::fp32, const Bf16* rounded_inp = nullptr,
                     const Bf16* rounded_dout = nullptr) {
  if constexpr (std::is_same_v<S, float>)
    if (precision == Precision::bf16)
      return detail::linear_backward_bf16(dinp, dweight, dbias, dout, inp, weight, N, C, OC, overwrite_dinp,
                                          rounded_inp, rounded_dout);
  // out = inp·weightᵀ  →  dinp += dout·weight,  dweight += doutᵀ·inp
  if (dinp != nullptr)
    parallel_gemm<S>(false, false, N, C, OC, S(1), dout, OC, weight, C, overwrite_dinp ? S(0) : S(1),
                     dinp, C, precision);
  parallel_gemm<S>(true, false, OC, C, N, S(1), dout, OC, inp, C, S(1), dweight, C, precision);
  // out += bias  →  dbias += Σ_n dout, in order over n (as the reference)
  if (dbias != nullptr)
    add_column_sums<S, 1>({dbias}, N, OC,
                          [&](std::size_t n, std::size_t o) { return std::array<S, 1>{dout[n * OC + o]}; });
}

}  // namespace posenc::fast
