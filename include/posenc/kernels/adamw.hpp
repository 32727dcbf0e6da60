// adamw_update: one AdamW step over flat buffers, exactly as torch.optim.AdamW computes it.
#pragma once

#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>

#include "posenc/config.hpp"
#include "posenc/kernels/parallel.hpp"

namespace posenc {

struct AdamWConfig {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.01;  // PyTorch's AdamW default, applied to every parameter

  // Throws posenc::Error naming the first setting out of its range.
  void check() const {
    if (!(lr >= 0)) fail("AdamW: learning rate must be non-negative, got ", lr);
    if (!(beta1 >= 0 && beta1 < 1 && beta2 >= 0 && beta2 < 1))
      fail("AdamW: betas must lie in [0, 1), got (", beta1, ", ", beta2, ")");
    if (!(eps > 0)) fail("AdamW: eps must be positive, got ", eps);
    if (!(weight_decay >= 0)) fail("AdamW: weight decay must be non-negative, got ", weight_decay);
  }
};

// params, grads, m (first moment), v (second moment): n each; step is the 1-based step count
template <std::floating_point S>
void adamw_update(S* params, const S* grads, S* m, S* v, std::size_t n, std::int64_t step,
                  const AdamWConfig& cfg) {
  const double bias_correction1 = 1.0 - std::pow(cfg.beta1, static_cast<double>(step));
  const double bias_correction2 = 1.0 - std::pow(cfg.beta2, static_cast<double>(step));
  const S decay = static_cast<S>(1.0 - cfg.lr * cfg.weight_decay);  // decoupled: p ← p − lr·wd·p
  const S b1 = static_cast<S>(cfg.beta1);
  const S b2 = static_cast<S>(cfg.beta2);
  const S step_size = static_cast<S>(cfg.lr / bias_correction1);
  const S bc2_sqrt = static_cast<S>(std::sqrt(bias_correction2));
  const S eps = static_cast<S>(cfg.eps);
  // Every element is independent, so the threads split the buffers and each runs the same
  // element-wise arithmetic: the result does not depend on the thread count.
  parallel_for_chunks(n, [&](std::size_t i0, std::size_t i1) {
    // GCC vectorizes std::sqrt here when told to; clang does not without -fno-math-errno, and
    // would warn that the pragma failed in every program that includes posenc.
#if !defined(__clang__)
    POSENC_OMP(omp simd)
#endif
    for (std::size_t i = i0; i < i1; ++i) {
      const S g = grads[i];
      S p = params[i] * decay;
      const S mi = b1 * m[i] + (S(1) - b1) * g;
      const S vi = b2 * v[i] + (S(1) - b2) * g * g;
      m[i] = mi;
      v[i] = vi;
      const S denom = std::sqrt(vi) / bc2_sqrt + eps;  // eps outside the square root
      params[i] = p - step_size * mi / denom;
    }
  }, 1024, 16384);
}

}  // namespace posenc
