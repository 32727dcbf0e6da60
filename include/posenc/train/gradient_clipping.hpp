// clip_grad_norm: the global L2 norm of a model's gradients, scaled down to a maximum as clip_grad_norm_ does.
#pragma once

#include <cmath>
#include <concepts>
#include <cstddef>

#include "posenc/config.hpp"
#include "posenc/parameters.hpp"

namespace posenc {

// The L2 norm of every gradient at once, summed in double in buffer order, so it does not depend
// on the thread count.
template <std::floating_point S>
double gradient_norm(const ParameterBuffer<S>& grads) {
  double sum = 0;
  const S* g = grads.data();
  for (std::size_t i = 0; i < grads.size(); ++i) sum += static_cast<double>(g[i]) * static_cast<double>(g[i]);
  return std::sqrt(sum);
}

// g ← factor·g for every gradient.
template <std::floating_point S>
void scale_gradients(ParameterBuffer<S>& grads, S factor) {
  S* g = grads.data();
  for (std::size_t i = 0; i < grads.size(); ++i) g[i] *= factor;
}

// Returns the norm before clipping. Where it exceeds max_norm, every gradient is multiplied by
// max_norm / (norm + 1e-6), PyTorch's coefficient; a non-finite norm is left for the caller to see.
template <std::floating_point S>
double clip_grad_norm(ParameterBuffer<S>& grads, double max_norm) {
  if (!(max_norm > 0 && std::isfinite(max_norm))) fail("clip_grad_norm: max_norm must be positive, got ", max_norm);
  const double norm = gradient_norm(grads);
  const double coefficient = max_norm / (norm + 1e-6);
  if (std::isfinite(norm) && coefficient < 1) scale_gradients(grads, static_cast<S>(coefficient));
  return norm;
}

}  // namespace posenc
