// fast::linear_forward / fast::linear_backward: linear.hpp's layer with every GEMM split over the threads.
#pragma once

#include <algorithm>
#include <array>
#include <concepts>
#include <cstddef>

#include "posenc/kernels/parallel.hpp"

namespace posenc::fast {

// out (N,OC), inp (N,C), weight (OC,C), bias (OC) or nullptr — as posenc::linear_forward; with
// bf16 precision the GEMM's operands are rounded to bfloat16 (gemm.hpp)
template <std::floating_point S>
void linear_forward(S* out, const S* inp, const S* weight, const S* bias, std::size_t N,
                    std::size_t C, std::size_t OC, Precision precision = Precision::fp32) {
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
// rounds both GEMMs' operands (dout, weight, inp), as autocast's backward does.
template <std::floating_point S>
void linear_backward(S* dinp, S* dweight, S* dbias, const S* dout, const S* inp, const S* weight,
                     std::size_t N, std::size_t C, std::size_t OC, bool overwrite_dinp = false,
                     Precision precision = Precision::fp32) {
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
