// fast::attention_forward_bf16/backward_bf16: a bf16 training pass's attention, its six products in bfloat16, batched.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "posenc/kernels/attention.hpp"
#include "posenc/kernels/fast_attention.hpp"
#include "posenc/kernels/fast_softmax.hpp"
#include "posenc/kernels/gemm.hpp"
#include "posenc/kernels/parallel.hpp"

namespace posenc::fast {

// The attention of a bf16 training pass that keeps its (B,H,T,T) probabilities (DecoderBlock, T up
// to the budget of keeps_attention_probabilities): the same computation as attention_forward and
// attention_backward with kept probabilities, but each of the six products (q·kᵀ, p·v; dy·vᵀ,
// pᵀ·dy, ds·k, dsᵀ·q) takes operands rounded to bfloat16 and accumulates in float, as PyTorch's
// autocast does, and the heads of a few sequences (sequences_per_product) are one oneDNN product
// (AMX on CPUs that have it): per head, the products of T = 128 are too small for a primitive each.
// The rows' softmax, the biases, rotations and dropout stay in float, as in attention_forward.
// Whole rows: the masked part of each product is computed and multiplied by zero, which AMX does
// faster than the fp32 kernels skip it. Work is split by sequence, a contiguous range a thread.
// (There is no fp32 twin of this arithmetic: tests compare it with a direct computation.)

// Whether bf16 products pay at this shape: while one sequence's (H, T, T) scores take at most
// 256 KB (in cache while its products and the rows' passes run over them). bench_attention,
// B = 32, H = 4, 2 threads, an Intel Xeon with AMX, against the fp32 kernel with kept probabilities
// (attention_table.py): T = 128 0.72–0.96× its time, T = 256 1.04–1.29×, T = 512 1.22–1.49×.
constexpr bool bf16_attention_pays(std::size_t H, std::size_t T) {
  return H * T * T * sizeof(float) <= (std::size_t{256} << 10);
}

namespace detail {

// One thread's operands and results of one sequence's bf16 products (kept between calls: a
// training step makes the same shapes dozens of times).
struct Bf16AttentionBuffers {
  std::vector<Bf16> q, k, v, dy, p;  // (H, T, hd) rounded; p (H, T, T) rounded
  std::vector<float> scores;         // (H, T, T): dropped probabilities, then dp and ds
  std::vector<float> a, b;           // (H, T, hd) products' outputs
  static Bf16AttentionBuffers& of_this_thread() {
    thread_local Bf16AttentionBuffers buffers;
    return buffers;
  }
  void reserve(std::size_t heads, std::size_t T, std::size_t hd) {
    for (auto* operand : {&q, &k, &v, &dy}) operand->resize(heads * T * hd);
    p.resize(heads * T * T);
    scores.resize(heads * T * T);
    a.resize(heads * T * hd);
    b.resize(heads * T * hd);
  }
};

// The H heads of sequences b… b + count − 1 at `offset` columns into (B, T, width) rows, rounded
// and packed as (count·H, T, hd): q, k or v of qkv (width 3C), dy of dout (width C).
inline void round_heads(Bf16* to, const float* rows, std::size_t b, std::size_t count, std::size_t T, std::size_t width,
                        std::size_t offset, std::size_t H, std::size_t hd) {
  round_blocks_to_bf16(to, rows + b * T * width + offset, count, T * width, H, hd, T, hd, width);
}

// How many sequences one product takes: as many as keep their (H, T, T) scores within 256 KB, in
// cache while the products and the rows' passes run over them (profile_step, bf16 RoPE at T = 128,
// H = 4, alternated with the fp32 kernel: attention forward + backward took 0.88× its time with one
// sequence a product, 0.90× with four; a thread's whole share at once, 16 sequences, was slower
// than the fp32 kernel in bench_attention)
inline std::size_t sequences_per_product(std::size_t H, std::size_t T) {
  return std::max<std::size_t>(1, (std::size_t{256} << 10) / (H * T * T * sizeof(float)));
}

}  // namespace detail

// As attention_forward with kept probabilities: out (B,T,C); qkv (B,T,3C), q and k rotated in
// place when the hooks rotate; att (B,H,T,T) the probabilities (each row zero past its last key);
// lse (B,H,T) each query's log-normaliser, when not null.
template <class Hooks>
void attention_forward_bf16(float* out, float* lse, float* att, float* qkv, std::size_t B, std::size_t T, std::size_t C,
                            std::size_t H, const Hooks& hooks, bool causal = true,
                            const AttentionDropout& dropout = {}) {
  const std::size_t hd = C / H;
  const std::size_t C3 = 3 * C;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const std::size_t group = detail::sequences_per_product(H, T);
  parallel_for_chunks(B, [&](std::size_t first, std::size_t last) {
    auto& buf = detail::Bf16AttentionBuffers::of_this_thread();
    buf.reserve(std::min(group, last - first) * H, T, hd);
    // sequences b0… b0 + count − 1, their heads g = (b − b0)·H + h one after another
    for (std::size_t b0 = first; b0 < last; b0 += group) {
      const std::size_t count = std::min(group, last - b0), heads = count * H;
      if constexpr (Hooks::rotates_qk)
        for (std::size_t g = 0; g < heads; ++g) {
          float* q = qkv + (b0 + g / H) * T * C3 + (g % H) * hd;
          rotate_head(hooks, q, q + C, C3, T);
        }
      detail::round_heads(buf.q.data(), qkv, b0, count, T, C3, 0, H, hd);
      detail::round_heads(buf.k.data(), qkv, b0, count, T, C3, C, H, hd);
      detail::round_heads(buf.v.data(), qkv, b0, count, T, C3, 2 * C, H, hd);
      // s = scale·q·kᵀ, then each row's biases and softmax over the keys it may see
      float* probs = att + b0 * H * T * T;
      batched_gemm_bf16(heads, false, true, T, T, hd, scale, buf.q.data(), buf.k.data(), probs);
      for (std::size_t g = 0; g < heads; ++g)
        for (std::size_t i = 0; i < T; ++i) {
          float* row = probs + (g * T + i) * T;
          const std::size_t n = causal ? i + 1 : T;
          if constexpr (Hooks::biases_scores) hooks.add_bias(row, g % H, i, 0, n);
          const float log_normaliser = softmax_row(row, n);
          std::fill(row + n, row + T, 0.0f);
          if (lse != nullptr) lse[(b0 * H + g) * T + i] = log_normaliser;
        }
      // y = p·v, with p dropped when training with dropout
      const float* used = probs;
      if (dropout.mask.active()) {
        for (std::size_t g = 0; g < heads; ++g)
          dropout.apply(buf.scores.data() + g * T * T, probs + g * T * T, T, b0 + g / H, g % H, 0, T, 0, T, T, H);
        used = buf.scores.data();
      }
      round_to_bf16(buf.p.data(), used, heads * T, T, T);
      batched_gemm_bf16(heads, false, false, T, hd, T, 1.0f, buf.p.data(), buf.v.data(), buf.a.data());
      for (std::size_t g = 0; g < heads; ++g)
        for (std::size_t t = 0; t < T; ++t) {
          const float* from = buf.a.data() + (g * T + t) * hd;
          std::copy(from, from + hd, out + ((b0 + g / H) * T + t) * C + (g % H) * hd);
        }
    }
  });
}

// As attention_backward with kept probabilities: dqkv (B,T,3C) added into, or written with
// overwrite; dout (B,T,C); qkv, out and att as attention_forward_bf16 left them; scratch of
// attention_scratch_size<Hooks, float>(T, C, H, max_parallel_threads(), true) floats (of which it
// uses the bias parameters' sums). Hooks with bias parameters get bias_backward once per (head,
// query) row, with the row's gradient summed over the batch.
template <class Hooks>
void attention_backward_bf16(float* dqkv, float* scratch, const float* dout, const float* qkv, const float* out,
                             const float* att, std::size_t B, std::size_t T, std::size_t C, std::size_t H, Hooks& hooks,
                             bool causal = true, bool overwrite = false, const AttentionDropout& dropout = {}) {
  const std::size_t hd = C / H;
  const std::size_t C3 = 3 * C;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const std::size_t threads = max_parallel_threads();
  const std::size_t group = detail::sequences_per_product(H, T);
  // (threads, H, T, T): each thread's sum of ds over its sequences, for the bias parameters
  float* const dbias_all = scratch;
  if constexpr (Hooks::has_bias_parameters) std::fill(dbias_all, dbias_all + threads * H * T * T, 0.0f);
  parallel_for_chunks(B, [&](std::size_t first, std::size_t last) {
    auto& buf = detail::Bf16AttentionBuffers::of_this_thread();
    buf.reserve(std::min(group, last - first) * H, T, hd);
    float* const grads = buf.scores.data();
    const std::size_t thread = parallel_thread_index();
    for (std::size_t b0 = first; b0 < last; b0 += group) {
      const std::size_t count = std::min(group, last - b0), heads = count * H;
      detail::round_heads(buf.q.data(), qkv, b0, count, T, C3, 0, H, hd);
      detail::round_heads(buf.k.data(), qkv, b0, count, T, C3, C, H, hd);
      detail::round_heads(buf.v.data(), qkv, b0, count, T, C3, 2 * C, H, hd);
      detail::round_heads(buf.dy.data(), dout, b0, count, T, C, 0, H, hd);
      const float* probs = att + b0 * H * T * T;
      // y = p·v → dv = pᵀ·dy, with p dropped when training with dropout (y = (p ⊙ m)·v)
      if (dropout.mask.active()) {
        for (std::size_t g = 0; g < heads; ++g)
          dropout.apply(grads + g * T * T, probs + g * T * T, T, b0 + g / H, g % H, 0, T, 0, T, T, H);
        round_to_bf16(buf.p.data(), grads, heads * T, T, T);
      } else {
        round_to_bf16(buf.p.data(), probs, heads * T, T, T);
      }
      batched_gemm_bf16(heads, true, false, T, hd, T, 1.0f, buf.p.data(), buf.dy.data(), buf.a.data());
      for (std::size_t g = 0; g < heads; ++g)
        for (std::size_t t = 0; t < T; ++t) {
          const float* from = buf.a.data() + (g * T + t) * hd;
          float* to = dqkv + ((b0 + g / H) * T + t) * C3 + 2 * C + (g % H) * hd;
          if (overwrite)
            std::copy(from, from + hd, to);
          else
            for (std::size_t d = 0; d < hd; ++d) to[d] += from[d];
        }
      // dp = dy·vᵀ (⊙ m with dropout); p = softmax(s) row by row → ds = p ⊙ (dp − dy·y), zero
      // past the mask
      batched_gemm_bf16(heads, false, true, T, T, hd, 1.0f, buf.dy.data(), buf.v.data(), grads);
      for (std::size_t g = 0; g < heads; ++g) {
        const std::size_t b = b0 + g / H, h = g % H;
        if (dropout.mask.active()) dropout.apply(grads + g * T * T, grads + g * T * T, T, b, h, 0, T, 0, T, T, H);
        for (std::size_t i = 0; i < T; ++i) {
          const std::size_t n = causal ? i + 1 : T;
          float* drow = grads + (g * T + i) * T;
          const std::size_t row = (b * T + i) * C + h * hd;
          softmax_row_backward_given(drow, probs + (g * T + i) * T, n, dot(dout + row, out + row, hd));
          std::fill(drow + n, drow + T, 0.0f);
          if constexpr (Hooks::has_bias_parameters) {
            float* sum = dbias_all + ((thread * H + h) * T + i) * T;
            for (std::size_t j = 0; j < n; ++j) sum[j] += drow[j];
          }
        }
      }
      // s = scale·q·kᵀ → dq = scale·ds·k, dk = scale·dsᵀ·q
      round_to_bf16(buf.p.data(), grads, heads * T, T, T);
      batched_gemm_bf16(heads, false, false, T, hd, T, scale, buf.p.data(), buf.k.data(), buf.a.data());
      batched_gemm_bf16(heads, true, false, T, hd, T, scale, buf.p.data(), buf.q.data(), buf.b.data());
      for (std::size_t g = 0; g < heads; ++g) {
        float* dq = dqkv + (b0 + g / H) * T * C3 + (g % H) * hd;
        float* gq = buf.a.data() + g * T * hd;
        float* gk = buf.b.data() + g * T * hd;
        if constexpr (Hooks::rotates_qk) {
          add_unrotated_qk_gradients(hooks, dq, dq + C, C3, gq, gk, T, hd, overwrite);
        } else {
          for (std::size_t t = 0; t < T; ++t) {
            float* to_q = dq + t * C3;
            float* to_k = to_q + C;
            const float* from_q = gq + t * hd;
            const float* from_k = gk + t * hd;
            for (std::size_t d = 0; d < hd; ++d) {
              to_q[d] = overwrite ? from_q[d] : to_q[d] + from_q[d];
              to_k[d] = overwrite ? from_k[d] : to_k[d] + from_k[d];
            }
          }
        }
      }
    }
  });
  if constexpr (Hooks::has_bias_parameters) detail::apply_bias_gradient_sums(hooks, dbias_all, threads, H, T, causal);
}

}  // namespace posenc::fast
