// The one shim over xtensor: tensor and token aliases, and adaptors that view flat buffers as tensors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include <xtensor/xadapt.hpp>
#include <xtensor/xarray.hpp>
#include <xtensor/xtensor.hpp>

namespace posenc {

template <class Scalar, std::size_t Rank>
using Tensor = xt::xtensor<Scalar, Rank>;

using TokenId = std::int32_t;
using Tokens = xt::xtensor<TokenId, 2>;  // (B,T) token ids
// (B,T): 1 where a target is scored by the loss, 0 where it is left out (a task's prompt, padding)
using TargetMask = xt::xtensor<std::uint8_t, 2>;

// A non-owning, row-major tensor over memory someone else owns (a slice of a flat buffer).
template <class T>
using TensorView = decltype(xt::adapt(std::declval<T*>(), std::size_t{}, xt::no_ownership(),
                                      std::declval<const std::vector<std::size_t>&>()));

template <class T>
TensorView<T> view_of(T* data, const std::vector<std::size_t>& shape) {
  std::size_t size = 1;
  for (std::size_t extent : shape) size *= extent;
  return xt::adapt(static_cast<T*>(data), size, xt::no_ownership(), shape);
}

}  // namespace posenc
