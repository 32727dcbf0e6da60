// linear_forward / linear_backward: a fully connected layer, out = inp·weightᵀ + bias, on OpenBLAS GEMM.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstddef>

#include "posenc/kernels/gemm.hpp"

namespace posenc {

// out (N,OC), inp (N,C), weight (OC,C) as PyTorch stores it, bias (OC) or nullptr
template <std::floating_point S>
void linear_forward(S* out, const S* inp, const S* weight, const S* bias, std::size_t N,
                    std::size_t C, std::size_t OC) {
  if (bias != nullptr) {
    for (std::size_t n = 0; n < N; ++n) std::copy(bias, bias + OC, out + n * OC);
  }
  gemm<S>(false, true, N, OC, C, S(1), inp, C, weight, C, bias != nullptr ? S(1) : S(0), out, OC);
}

// dinp (N,C), dweight (OC,C), dbias (OC) are added into; dinp or dbias may be nullptr.
template <std::floating_point S>
void linear_backward(S* dinp, S* dweight, S* dbias, const S* dout, const S* inp, const S* weight,
                     std::size_t N, std::size_t C, std::size_t OC) {
  // out = inp·weightᵀ  →  dinp += dout·weight,  dweight += doutᵀ·inp
  if (dinp != nullptr) gemm<S>(false, false, N, C, OC, S(1), dout, OC, weight, C, S(1), dinp, C);
  gemm<S>(true, false, OC, C, N, S(1), dout, OC, inp, C, S(1), dweight, C);
  // out += bias  →  dbias += Σ_n dout
  if (dbias != nullptr) {
    for (std::size_t n = 0; n < N; ++n) {
      const S* row = dout + n * OC;
      for (std::size_t o = 0; o < OC; ++o) dbias[o] += row[o];
    }
  }
}

}  // namespace posenc
