// fast::attention_forward/backward: causal attention in query blocks that skip masked keys, a (batch, head) per thread.
#pragma once

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "posenc/config.hpp"
#include "posenc/kernels/attention.hpp"
#include "posenc/kernels/dropout.hpp"
#include "posenc/kernels/fast_softmax.hpp"
#include "posenc/kernels/gemm.hpp"
#include "posenc/kernels/parallel.hpp"

namespace posenc::fast {

// Queries are taken attention_block at a time; block [i0, i0+rows) needs keys [0, i0+rows) only,
// so at T = 128 the products cover 3/4 of the (T,T) square instead of all of it, at T = 512 9/16.
// Smaller blocks skip more, but the products are small enough that a call's own cost decides:
// forward + backward at B 32, H 4, head dim 48 took 10.6, 27.0 and 84.6 ms at T = 128, 256, 512
// with blocks of 16, and 7.7, 19.9 and 59.2 ms with 64 (ALiBi-single; bench_attention, Zen 5).
inline constexpr std::size_t attention_block = 64;

// Scratch attention_backward needs, in scalars, when `threads` threads run it: per thread one
// (attention_block, T) score gradient and two (T, hd) gradients of the rotated q and k; with
// `bias_parameters` (the hooks' has_bias_parameters) also one (H, T, T) sum over the thread's
// sequences of the score gradients, which is all a bias parameter's gradient needs (a bias
// depends on head, query and key, never on the sequence); with `dropout`, one more
// (attention_block, T) block of dropped probabilities.
inline std::size_t attention_scratch_size(std::size_t T, std::size_t C, std::size_t H, std::size_t threads,
                                          bool bias_parameters, bool dropout = false) {
  return threads * ((dropout ? 2 : 1) * attention_block * T + 2 * T * (C / H) + (bias_parameters ? H * T * T : 0));
}

// Dropout of the attention probabilities (nanoGPT's attn_dropout): the probability of key j for
// query i in head h of sequence first_sequence + b is masked by element ((s·H + h)·T + i)·T + j.
struct AttentionDropout {
  DropoutMask mask;
  std::uint64_t first_sequence = 0;

  // to[r, j] = from[r, j]·m/(1 − p) for the rows × keys entries of the block of queries i0… (row
  // stride T) of head h of sequence b: the dropped probabilities from a, or in place the gradient
  template <std::floating_point S>
  void apply(S* to, const S* from, std::size_t b, std::size_t h, std::size_t i0, std::size_t rows,
             std::size_t keys, std::size_t T, std::size_t H) const {
    for (std::size_t r = 0; r < rows; ++r)
      mask.apply(to + r * T, from + r * T, keys, (((first_sequence + b) * H + h) * T + i0 + r) * T);
  }
};

// As posenc::attention_forward: out (B,T,C), att (B,H,T,T), qkv (B,T,3C) with q and k rotated in
// place when the hooks rotate. Differences: att holds the softmax only at and below the diagonal
// (row i's entries past key i, rounded up to the query block, are zero; the rest of the row is
// not written); float rows use simd::exp. Bias hooks must be safe to call from several threads
// (they are const reads in every policy posenc ships).
template <std::floating_point S, class Hooks>
void attention_forward(S* out, S* att, S* qkv, std::size_t B, std::size_t T, std::size_t C,
                       std::size_t H, const Hooks& hooks, bool causal = true, const AttentionDropout& dropout = {}) {
  const std::size_t hd = C / H;
  const std::size_t C3 = 3 * C;
  const S scale = S(1) / std::sqrt(static_cast<S>(hd));
  // each thread's (attention_block, T) block of dropped probabilities; att keeps the softmax, which
  // the backward needs whole
  std::vector<S> dropped(dropout.mask.active() ? max_parallel_threads() * attention_block * T : 0);
  parallel_for_each(B * H, [&](std::size_t bh) {
    [[maybe_unused]] const GemmSignalHold signals_held{};  // once for the head's 2·⌈T/16⌉ products
    const std::size_t b = bh / H, h = bh % H;
    S* q = qkv + b * T * C3 + h * hd;
    S* k = q + C;
    const S* v = q + 2 * C;
    if constexpr (Hooks::rotates_qk) rotate_head(hooks, q, k, C3, T);
    S* a = att + bh * T * T;
    for (std::size_t i0 = 0; i0 < T; i0 += attention_block) {
      const std::size_t rows = std::min(attention_block, T - i0);
      const std::size_t keys = causal ? i0 + rows : T;
      S* ablock = a + i0 * T;
      // s = scale·q·kᵀ over the block's unmasked keys
      gemm<S>(false, true, rows, keys, hd, scale, q + i0 * C3, C3, k, C3, S(0), ablock, T);
      for (std::size_t r = 0; r < rows; ++r) {
        const std::size_t i = i0 + r;
        S* row = ablock + r * T;
        const std::size_t n = causal ? i + 1 : T;
        if constexpr (Hooks::biases_scores) hooks.add_bias(row, h, i, n);
        softmax_row(row, n);
        std::fill(row + n, row + keys, S(0));  // masked keys inside the block get no weight
      }
      // y = a·v, with a dropped when training with dropout
      const S* probs = ablock;
      if (dropout.mask.active()) {
        S* block = dropped.data() + parallel_thread_index() * attention_block * T;
        dropout.apply(block, ablock, b, h, i0, rows, keys, T, H);
        probs = block;
      }
      gemm<S>(false, false, rows, hd, keys, S(1), probs, T, v, C3, S(0), out + (b * T + i0) * C + h * hd, C);
    }
  });
}

// As posenc::attention_backward: dqkv (B,T,3C) is added into (or, with overwrite, written: each
// thread zeroes its own head's columns first); dout (B,T,C); qkv and att as fast::attention_forward
// left them; scratch of fast::attention_scratch_size(T, C, H, max_parallel_threads(),
// Hooks::has_bias_parameters) scalars. Hooks with bias parameters get bias_backward once per
// (head, query) row, with the row's gradient summed over the batch, after the parallel part.
template <std::floating_point S, class Hooks>
void attention_backward(S* dqkv, S* scratch, const S* dout, const S* qkv, const S* att,
                        std::size_t B, std::size_t T, std::size_t C, std::size_t H, Hooks& hooks,
                        bool causal = true, bool overwrite = false, const AttentionDropout& dropout = {}) {
  const std::size_t hd = C / H;
  const std::size_t C3 = 3 * C;
  const S scale = S(1) / std::sqrt(static_cast<S>(hd));
  const std::size_t threads = max_parallel_threads();
  const std::size_t per_thread = (dropout.mask.active() ? 2 : 1) * attention_block * T + 2 * T * hd;
  // (threads, H, T, T): each thread's sum of ds over its sequences, for the bias parameters
  S* const dbias_all = scratch + threads * per_thread;
  if constexpr (Hooks::has_bias_parameters) std::fill(dbias_all, dbias_all + threads * H * T * T, S(0));
  const auto item = [&](std::size_t bh) {
    [[maybe_unused]] const GemmSignalHold signals_held{};  // once for the head's products
    const std::size_t b = bh / H, h = bh % H;
    const std::size_t thread = parallel_thread_index();
    S* dscores = scratch + thread * per_thread;     // (attention_block, T)
    S* dq_rotated = dscores + attention_block * T;  // (T, hd)
    S* dk_rotated = dq_rotated + T * hd;            // (T, hd)
    S* dropped = dk_rotated + T * hd;               // (attention_block, T), with dropout
    const S* q = qkv + b * T * C3 + h * hd;
    const S* k = q + C;
    const S* v = q + 2 * C;
    S* dq = dqkv + b * T * C3 + h * hd;
    S* dk = dq + C;
    S* dv = dq + 2 * C;
    const S* a = att + bh * T * T;
    const S* dy = dout + b * T * C + h * hd;
    // q and k were rotated in place: their gradients gather in scratch and are rotated back
    // at the end; otherwise they go straight into dqkv
    S* gq = Hooks::rotates_qk ? dq_rotated : dq;
    S* gk = Hooks::rotates_qk ? dk_rotated : dk;
    const std::size_t ldg = Hooks::rotates_qk ? hd : C3;
    if constexpr (Hooks::rotates_qk) std::fill(dq_rotated, dq_rotated + 2 * T * hd, S(0));
    if (overwrite)
      for (std::size_t t = 0; t < T; ++t)
        for (S* g : {dq + t * C3, dk + t * C3, dv + t * C3}) std::fill(g, g + hd, S(0));
    for (std::size_t i0 = 0; i0 < T; i0 += attention_block) {
      const std::size_t rows = std::min(attention_block, T - i0);
      const std::size_t keys = causal ? i0 + rows : T;
      const S* ablock = a + i0 * T;
      // y = a·v  →  da = dy·vᵀ,  dv += aᵀ·dy; with dropout y = (a ⊙ m)·v, so dv takes the dropped
      // a and da the mask: da = (dy·vᵀ) ⊙ m
      gemm<S>(false, true, rows, keys, hd, S(1), dy + i0 * C, C, v, C3, S(0), dscores, T);
      const S* probs = ablock;
      if (dropout.mask.active()) {
        dropout.apply(dropped, ablock, b, h, i0, rows, keys, T, H);
        dropout.apply(dscores, dscores, b, h, i0, rows, keys, T, H);
        probs = dropped;
      }
      gemm<S>(true, false, keys, hd, rows, S(1), probs, T, dy + i0 * C, C, S(1), dv, C3);
      // a = softmax(s) row by row  →  ds = a ⊙ (da − Σ a·da), zero past the mask
      for (std::size_t r = 0; r < rows; ++r) {
        const std::size_t n = causal ? i0 + r + 1 : T;
        S* drow = dscores + r * T;
        softmax_row_backward(drow, ablock + r * T, n);
        std::fill(drow + n, drow + keys, S(0));
        // s += bias(h,i,j)  →  the bias parameters receive Σ over sequences of ds (after the loop)
        if constexpr (Hooks::has_bias_parameters) {
          S* sum = dbias_all + ((thread * H + h) * T + i0 + r) * T;
          for (std::size_t j = 0; j < n; ++j) sum[j] += drow[j];
        }
      }
      // s = scale·q·kᵀ  →  dq += scale·ds·k,  dk += scale·dsᵀ·q
      gemm<S>(false, false, rows, hd, keys, scale, dscores, T, k, C3, S(1), gq + i0 * ldg, ldg);
      gemm<S>(true, false, keys, hd, rows, scale, dscores, T, q + i0 * C3, C3, S(1), gk, ldg);
    }
    if constexpr (Hooks::rotates_qk) add_unrotated_qk_gradients(hooks, dq, dk, C3, dq_rotated, dk_rotated, T, hd);
  };
  // A thread's bias sums must cover the same items on every run (a fixed partition), or the sums
  // round differently from run to run; without bias parameters items are handed out as threads free up.
  if constexpr (Hooks::has_bias_parameters) parallel_for_each_fixed(B * H, item);
  else parallel_for_each(B * H, item);
  if constexpr (Hooks::has_bias_parameters) {
    // the threads' sums into thread 0's, then each (head, query) row once into the shared gradients
    for (std::size_t t = 1; t < threads; ++t) {
      const S* part = dbias_all + t * H * T * T;
      for (std::size_t e = 0; e < H * T * T; ++e) dbias_all[e] += part[e];
    }
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t i = 0; i < T; ++i) hooks.bias_backward(dbias_all + (h * T + i) * T, h, i, causal ? i + 1 : T);
    if constexpr (Hooks::finishes_backward) hooks.finish_backward();
  }
}

// posenc::attention_step_forward (one new query against a cache's window), through the GEMM
// backend: each head's ring is at most two runs of consecutive rows, and each run's scores
// (q·Kᵀ) and weighted values (p·V) are one matrix-vector product per head. Generation spends most
// of its time here once the window holds hundreds of keys.
template <std::floating_point S, class Hooks>
void attention_step_forward(S* out, S* scores, const S* q, const S* keys, const S* values,
                            const CacheWindow& window, std::size_t C, std::size_t H, const Hooks& hooks) {
  const std::size_t hd = C / H;
  const std::size_t P = window.count;
  const S scale = S(1) / std::sqrt(static_cast<S>(hd));
  // runs of the ring: keys 0..first_run−1 in slots window.first…, the rest from slot 0
  const std::size_t first_run = std::min(P, window.capacity - window.first);
  const std::size_t runs[2][3] = {{0, window.first, first_run}, {first_run, 0, P - first_run}};
  [[maybe_unused]] const GemmSignalHold signals_held{};  // once for every head's products
  for (std::size_t h = 0; h < H; ++h) {
    const S* qh = q + h * hd;
    const S* kh = keys + h * window.capacity * hd;
    const S* vh = values + h * window.capacity * hd;
    for (const auto& [key, slot, n] : runs)
      if (n > 0) gemm<S>(false, true, 1, n, hd, scale, qh, hd, kh + slot * hd, hd, S(0), scores + key, n);
    if constexpr (Hooks::biases_scores) hooks.add_bias(scores, h, P - 1, P);
    softmax_row(scores, P);
    S* oh = out + h * hd;
    for (std::size_t r = 0; r < 2; ++r) {
      const auto& [key, slot, n] = runs[r];
      if (n > 0)
        gemm<S>(false, false, 1, hd, n, S(1), scores + key, n, vh + slot * hd, hd, r == 0 ? S(0) : S(1), oh, hd);
    }
  }
}

}  // namespace posenc::fast
