// fast::attention_forward/backward: tiled attention, online softmax, memory linear in T, a (batch, head) a thread.
#pragma once

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <type_traits>

#include "posenc/config.hpp"
#include "posenc/kernels/attention.hpp"
#include "posenc/kernels/dropout.hpp"
#include "posenc/kernels/fast_softmax.hpp"
#include "posenc/kernels/gemm.hpp"
#include "posenc/kernels/parallel.hpp"

namespace posenc::fast {

// Attention in tiles of attention_block queries × attention_key_block keys, FlashAttention-2's
// scheme on the CPU: the forward runs over a query block's key tiles with a running maximum and
// sum per query (the online softmax) and keeps each query's log-normaliser, from which the
// backward recomputes each tile's probabilities. No (T, T) matrix exists: the memory beyond the
// inputs and outputs is a few tiles per thread (a policy's biases are added to a tile's scores
// where they are made, add_bias taking the tile's keys). Under the causal mask a query block
// visits only the key tiles at or before its last query.
//
// Recomputing costs a product and an exponential per score and the policy's biases again (for
// FIRE, its MLP), about 1.2× the time of attention forward + backward for NoPE at T = 512 and 1.5×
// for FIRE (bench_attention). So a training pass may keep the (B,H,T,T) probabilities instead,
// where they fit (DecoderBlock keeps them up to attention_probability_budget): the query block's
// keys then form one tile whose rows are the kept probabilities, and the backward reads them.
// Tiles of 256 keys: with 64 or 128 the recomputing forward + backward at T = 512 took 1.2–1.3×
// as long for NoPE (more, smaller products), with 512 no less (bench_attention, Zen 5).
inline constexpr std::size_t attention_block = 64;
inline constexpr std::size_t attention_key_block = 256;

namespace detail {

// One thread's share of attention's scratch: tiles of scores (then probabilities) and of the
// dropped probabilities (with dropout), attention_block rows `ld` apart, and two values per query
// of the block (running max and sum; the backward's dy·y); for the backward also a tile of the
// scores' gradients and, with rotations, the (T, hd) gradients of the rotated q and k.
template <class Hooks, std::floating_point S>
struct AttentionTiles {
  static std::size_t size(std::size_t T, std::size_t hd, std::size_t ld, bool backward) {
    return (backward ? 3 : 2) * attention_block * ld + 2 * attention_block +
           (backward && Hooks::rotates_qk ? 2 * T * hd : 0);
  }
  AttentionTiles(S* base, std::size_t T, std::size_t hd, std::size_t ld, bool backward)
      : scores(base),
        dropped(scores + attention_block * ld),
        row_a(dropped + attention_block * ld),
        row_b(row_a + attention_block),
        grads(backward ? row_b + attention_block : nullptr),
        gq(backward && Hooks::rotates_qk ? grads + attention_block * ld : nullptr),
        gk(gq != nullptr ? gq + T * hd : nullptr) {}
  S *scores, *dropped, *row_a, *row_b, *grads, *gq, *gk;
};

// The keys a tile spans and the stride of its rows: with kept probabilities (B,H,T,T) a query
// block's whole row of keys, in place; otherwise attention_key_block.
inline std::size_t tile_stride(std::size_t T, bool probabilities_kept) {
  return probabilities_kept ? T : std::min(T, attention_key_block);
}

// Keys [j0, j0 + cols) of a tile that query i may see: all under no mask, those up to i under it.
inline std::size_t visible_keys(std::size_t i, std::size_t j0, std::size_t cols, bool causal) {
  if (!causal) return cols;
  return i < j0 ? 0 : std::min(cols, i - j0 + 1);
}

// A tile's scores s = scale·q·kᵀ (rows × cols, row stride ld) plus the hooks' biases over the keys
// each query may see.
template <class Hooks, std::floating_point S>
void tile_scores(S* tile, std::size_t ld, const S* q, const S* k, std::size_t C3, std::size_t hd, S scale,
                 const Hooks& hooks, std::size_t h, std::size_t i0, std::size_t rows, std::size_t j0,
                 std::size_t cols, bool causal) {
  gemm<S>(false, true, rows, cols, hd, scale, q + i0 * C3, C3, k + j0 * C3, C3, S(0), tile, ld);
  if constexpr (Hooks::biases_scores)
    for (std::size_t r = 0; r < rows; ++r)
      hooks.add_bias(tile + r * ld, h, i0 + r, j0, visible_keys(i0 + r, j0, cols, causal));
}

// The bias parameters' gradients from the threads' (threads, H, T, T) sums of the score
// gradients: the sums into thread 0's, in thread order, then each (head, query) row once into the
// shared gradients.
template <std::floating_point S, class Hooks>
void apply_bias_gradient_sums(Hooks& hooks, S* sums, std::size_t threads, std::size_t H, std::size_t T, bool causal) {
  for (std::size_t t = 1; t < threads; ++t) {
    const S* part = sums + t * H * T * T;
    for (std::size_t e = 0; e < H * T * T; ++e) sums[e] += part[e];
  }
  for (std::size_t h = 0; h < H; ++h)
    for (std::size_t i = 0; i < T; ++i) hooks.bias_backward(sums + (h * T + i) * T, h, i, causal ? i + 1 : T);
  if constexpr (Hooks::finishes_backward) hooks.finish_backward();
}

}  // namespace detail

// Per layer, the kept probabilities' bytes up to which a training pass keeps them (DecoderBlock):
// at the study's shape (8 sequences a pass, 4 heads, float) up to T = 724; past it the backward
// recomputes them.
inline constexpr std::size_t attention_probability_budget = std::size_t{64} << 20;

// Whether a training pass of B sequences of T keeps attention's (B,H,T,T) probabilities.
template <std::floating_point S>
constexpr bool keeps_attention_probabilities(std::size_t B, std::size_t H, std::size_t T) {
  return B * H * T * T * sizeof(S) <= attention_probability_budget;
}

// Scratch attention_backward needs, in scalars, when `threads` threads run it with these hooks,
// with or without kept probabilities: per thread an AttentionTiles share; with bias parameters
// also one (H, T, T) sum over the thread's sequences of the score gradients, which is all a bias
// parameter's gradient needs (a bias depends on head, query and key, never on the sequence) — the
// only part that grows with T², and only for training a policy with bias parameters.
template <class Hooks, std::floating_point S = float>
std::size_t attention_scratch_size(std::size_t T, std::size_t C, std::size_t H, std::size_t threads,
                                   bool probabilities_kept) {
  return threads * (detail::AttentionTiles<Hooks, S>::size(T, C / H, detail::tile_stride(T, probabilities_kept), true) +
                    (Hooks::has_bias_parameters ? H * T * T : 0));
}

// Dropout of the attention probabilities (nanoGPT's attn_dropout): the probability of key j for
// query i in head h of sequence first_sequence + b is masked by element ((s·H + h)·T + i)·T + j.
struct AttentionDropout {
  DropoutMask mask;
  std::uint64_t first_sequence = 0;

  // to[r, c] = from[r, c]·m/(1 − p) for the rows × cols entries of the tile of queries i0… and
  // keys j0… (row stride ld) of head h of sequence b: the dropped probabilities, or in place the
  // gradient
  template <std::floating_point S>
  void apply(S* to, const S* from, std::size_t ld, std::size_t b, std::size_t h, std::size_t i0, std::size_t rows,
             std::size_t j0, std::size_t cols, std::size_t T, std::size_t H) const {
    for (std::size_t r = 0; r < rows; ++r)
      mask.apply(to + r * ld, from + r * ld, cols, (((first_sequence + b) * H + h) * T + i0 + r) * T + j0);
  }
};

// As posenc::attention_forward: out (B,T,C), qkv (B,T,3C) with q and k rotated in place when the
// hooks rotate. For a backward it keeps lse (B,H,T), each query's log-normaliser
// log Σ_j exp(s_ij), and, if att is given, the (B,H,T,T) probabilities (each row's entries past
// its last key, rounded up to the query block, zero; the rest not written). Without a backward
// both are null and nothing is kept. Float rows use simd::exp. Bias hooks must be safe to call
// from several threads (they are const reads in every policy posenc ships).
template <std::floating_point S, class Hooks>
void attention_forward(S* out, S* lse, S* att, S* qkv, std::size_t B, std::size_t T, std::size_t C, std::size_t H,
                       const Hooks& hooks, bool causal = true, const AttentionDropout& dropout = {}) {
  using Tiles = detail::AttentionTiles<Hooks, S>;
  const bool keep = att != nullptr;
  const std::size_t ld = detail::tile_stride(T, keep);
  // one tile a query block (kept probabilities, or T within a key tile): each row's softmax at once
  const bool whole_rows = ld >= T;
  const std::size_t hd = C / H;
  const std::size_t C3 = 3 * C;
  const S scale = S(1) / std::sqrt(static_cast<S>(hd));
  const std::size_t per_thread = Tiles::size(T, hd, ld, false);
  const auto scratch = std::make_unique_for_overwrite<S[]>(max_parallel_threads() * per_thread);
  parallel_for_each(B * H, [&](std::size_t bh) {
    [[maybe_unused]] const GemmSignalHold signals_held{};  // once for the head's products
    const std::size_t b = bh / H, h = bh % H;
    Tiles tiles(scratch.get() + parallel_thread_index() * per_thread, T, hd, ld, false);
    S* q = qkv + b * T * C3 + h * hd;
    S* k = q + C;
    const S* v = q + 2 * C;
    if constexpr (Hooks::rotates_qk) rotate_head(hooks, q, k, C3, T);
    S* running_max = tiles.row_a;
    S* running_sum = tiles.row_b;
    for (std::size_t i0 = 0; i0 < T; i0 += attention_block) {
      const std::size_t rows = std::min(attention_block, T - i0);
      const std::size_t keys = causal ? i0 + rows : T;
      S* y = out + (b * T + i0) * C + h * hd;  // (rows, hd), row stride C: the running Σ p·v
      S* tile = keep ? att + (bh * T + i0) * T : tiles.scores;
      std::fill(running_max, running_max + rows, -std::numeric_limits<S>::infinity());
      std::fill(running_sum, running_sum + rows, S(0));
      for (std::size_t j0 = 0; j0 < keys; j0 += ld) {
        const std::size_t cols = std::min(ld, keys - j0);
        detail::tile_scores(tile, ld, q, k, C3, hd, scale, hooks, h, i0, rows, j0, cols, causal);
        for (std::size_t r = 0; r < rows; ++r) {
          S* row = tile + r * ld;
          const std::size_t n = detail::visible_keys(i0 + r, j0, cols, causal);
          if (whole_rows) {  // the row's one tile: its softmax, normalised at once
            running_max[r] = softmax_row(row, n);
            running_sum[r] = S(1);
          } else if (n > 0) {
            // p = exp(s − m) under the new running maximum m; what was summed under the old one
            // is scaled down to it
            const S m = std::max(running_max[r], row_max(row, n));
            const S sum = exp_shifted_row(row, n, m);
            if (j0 > 0 && m != running_max[r]) {
              const S shrink = std::exp(running_max[r] - m);
              running_sum[r] *= shrink;
              for (std::size_t d = 0; d < hd; ++d) y[r * C + d] *= shrink;
            }
            running_max[r] = m;
            running_sum[r] += sum;
          }
          std::fill(row + n, row + cols, S(0));  // masked keys get no weight
        }
        // y += p·v, with p dropped when training with dropout
        const S* probs = tile;
        if (dropout.mask.active()) {
          dropout.apply(tiles.dropped, tile, ld, b, h, i0, rows, j0, cols, T, H);
          probs = tiles.dropped;
        }
        gemm<S>(false, false, rows, hd, cols, S(1), probs, ld, v + j0 * C3, C3, j0 == 0 ? S(0) : S(1), y, C);
      }
      for (std::size_t r = 0; r < rows; ++r) {
        if (!whole_rows) {
          const S inverse = S(1) / running_sum[r];
          for (std::size_t d = 0; d < hd; ++d) y[r * C + d] *= inverse;
        }
        if (lse != nullptr) lse[bh * T + i0 + r] = running_max[r] + std::log(running_sum[r]);
      }
    }
  });
}

// As posenc::attention_backward: dqkv (B,T,3C) is added into (or, with overwrite, written: each
// thread writes only its own head's columns, zeroing first those its products add into); dout
// (B,T,C); qkv, out, lse and att as fast::attention_forward left them (att null when it kept no
// probabilities; then each tile's probabilities are recomputed from lse); scratch of
// fast::attention_scratch_size<Hooks, S>(T, C, H, max_parallel_threads(), att != nullptr)
// scalars. The softmax's backward takes Σ_j p_ij·dp_ij as dy_i·y_i (FlashAttention's D, which
// holds with dropout too). Hooks with bias parameters get bias_backward once per (head, query)
// row, with the row's gradient summed over the batch, after the parallel part.
template <std::floating_point S, class Hooks>
void attention_backward(S* dqkv, S* scratch, const S* dout, const S* qkv, const S* out, const S* lse, const S* att,
                        std::size_t B, std::size_t T, std::size_t C, std::size_t H, Hooks& hooks,
                        bool causal = true, bool overwrite = false, const AttentionDropout& dropout = {}) {
  using Tiles = detail::AttentionTiles<Hooks, S>;
  const bool kept = att != nullptr;
  const std::size_t ld = detail::tile_stride(T, kept);
  const std::size_t hd = C / H;
  const std::size_t C3 = 3 * C;
  const S scale = S(1) / std::sqrt(static_cast<S>(hd));
  const std::size_t threads = max_parallel_threads();
  const std::size_t per_thread = Tiles::size(T, hd, ld, true);
  // (threads, H, T, T): each thread's sum of ds over its sequences, for the bias parameters
  S* const dbias_all = scratch + threads * per_thread;
  if constexpr (Hooks::has_bias_parameters) std::fill(dbias_all, dbias_all + threads * H * T * T, S(0));
  const auto item = [&](std::size_t bh) {
    [[maybe_unused]] const GemmSignalHold signals_held{};  // once for the head's products
    const std::size_t b = bh / H, h = bh % H;
    const std::size_t thread = parallel_thread_index();
    Tiles tiles(scratch + thread * per_thread, T, hd, ld, true);
    const S* q = qkv + b * T * C3 + h * hd;
    const S* k = q + C;
    const S* v = q + 2 * C;
    S* dq = dqkv + b * T * C3 + h * hd;
    S* dk = dq + C;
    S* dv = dq + 2 * C;
    const S* y = out + b * T * C + h * hd;
    const S* dy = dout + b * T * C + h * hd;
    S* dy_dot_y = tiles.row_a;
    // q and k were rotated in place: their gradients gather in scratch and are rotated back
    // at the end; otherwise they go straight into dqkv
    S* gq = Hooks::rotates_qk ? tiles.gq : dq;
    S* gk = Hooks::rotates_qk ? tiles.gk : dk;
    const std::size_t ldg = Hooks::rotates_qk ? hd : C3;
    if constexpr (Hooks::rotates_qk) std::fill(tiles.gq, tiles.gq + 2 * T * hd, S(0));
    // dq and dk of rotated q and k are written once at the end (add_unrotated_qk_gradients), so
    // only what the products add into is zeroed
    if (overwrite)
      for (std::size_t t = 0; t < T; ++t) {
        if constexpr (!Hooks::rotates_qk)
          for (S* g : {dq + t * C3, dk + t * C3}) std::fill(g, g + hd, S(0));
        std::fill(dv + t * C3, dv + t * C3 + hd, S(0));
      }
    for (std::size_t i0 = 0; i0 < T; i0 += attention_block) {
      const std::size_t rows = std::min(attention_block, T - i0);
      const std::size_t keys = causal ? i0 + rows : T;
      for (std::size_t r = 0; r < rows; ++r) dy_dot_y[r] = dot(dy + (i0 + r) * C, y + (i0 + r) * C, hd);
      for (std::size_t j0 = 0; j0 < keys; j0 += ld) {
        const std::size_t cols = std::min(ld, keys - j0);
        // p as the forward had it: kept, or exp(scale·q·kᵀ + bias − lse)
        const S* probs = kept ? att + (bh * T + i0) * T : tiles.scores;
        if (!kept) {
          detail::tile_scores(tiles.scores, ld, q, k, C3, hd, scale, hooks, h, i0, rows, j0, cols, causal);
          for (std::size_t r = 0; r < rows; ++r) {
            S* row = tiles.scores + r * ld;
            const std::size_t n = detail::visible_keys(i0 + r, j0, cols, causal);
            exp_shifted_row(row, n, lse[bh * T + i0 + r]);
            std::fill(row + n, row + cols, S(0));
          }
        }
        // y = p·v  →  dp = dy·vᵀ,  dv += pᵀ·dy; with dropout y = (p ⊙ m)·v, so dv takes the
        // dropped p and dp the mask: dp = (dy·vᵀ) ⊙ m
        gemm<S>(false, true, rows, cols, hd, S(1), dy + i0 * C, C, v + j0 * C3, C3, S(0), tiles.grads, ld);
        const S* used = probs;
        if (dropout.mask.active()) {
          dropout.apply(tiles.dropped, probs, ld, b, h, i0, rows, j0, cols, T, H);
          dropout.apply(tiles.grads, tiles.grads, ld, b, h, i0, rows, j0, cols, T, H);
          used = tiles.dropped;
        }
        gemm<S>(true, false, cols, hd, rows, S(1), used, ld, dy + i0 * C, C, S(1), dv + j0 * C3, C3);
        // p = softmax(s) row by row  →  ds = p ⊙ (dp − dy·y), zero past the mask
        for (std::size_t r = 0; r < rows; ++r) {
          const std::size_t n = detail::visible_keys(i0 + r, j0, cols, causal);
          S* drow = tiles.grads + r * ld;
          softmax_row_backward_given(drow, probs + r * ld, n, dy_dot_y[r]);
          std::fill(drow + n, drow + cols, S(0));
          // s += bias(h,i,j)  →  the bias parameters receive Σ over sequences of ds (after the loop)
          if constexpr (Hooks::has_bias_parameters) {
            S* sum = dbias_all + ((thread * H + h) * T + i0 + r) * T + j0;
            for (std::size_t j = 0; j < n; ++j) sum[j] += drow[j];
          }
        }
        // s = scale·q·kᵀ  →  dq += scale·ds·k,  dk += scale·dsᵀ·q
        gemm<S>(false, false, rows, hd, cols, scale, tiles.grads, ld, k + j0 * C3, C3, S(1), gq + i0 * ldg, ldg);
        gemm<S>(true, false, cols, hd, rows, scale, tiles.grads, ld, q + i0 * C3, C3, S(1), gk + j0 * ldg, ldg);
      }
    }
    if constexpr (Hooks::rotates_qk)
      add_unrotated_qk_gradients(hooks, dq, dk, C3, tiles.gq, tiles.gk, T, hd, overwrite);
  };
  // A thread's bias sums must cover the same items on every run (a fixed partition), or the sums
  // round differently from run to run; without bias parameters items are handed out as threads free up.
  if constexpr (Hooks::has_bias_parameters) parallel_for_each_fixed(B * H, item);
  else parallel_for_each(B * H, item);
  if constexpr (Hooks::has_bias_parameters) detail::apply_bias_gradient_sums(hooks, dbias_all, threads, H, T, causal);
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
    if constexpr (Hooks::biases_scores) hooks.add_bias(scores, h, P - 1, 0, P);
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
