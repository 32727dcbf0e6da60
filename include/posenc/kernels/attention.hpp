// attention_forward / attention_backward: causal multi-head self-attention with a positional encoding's hooks.
#pragma once

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <vector>

#include "posenc/kernels/gemm.hpp"
#include "posenc/kernels/softmax.hpp"

namespace posenc {

// `hooks` are a positional encoding's attention hooks, whose contract (posenc/encodings/concept.hpp)
// declares by flags what the kernels call; a kernel calls only what the flags turn on.

// The key side of a rotation: rotate_key when the hooks turn keys differently from queries.
template <class Hooks, class S>
void rotate_key(const Hooks& hooks, S* k, std::size_t pos) {
  if constexpr (Hooks::rotates_keys_separately) hooks.rotate_key(k, pos);
  else hooks.rotate(k, pos);
}
template <class Hooks, class S>
void unrotate_key(const Hooks& hooks, S* g, std::size_t pos) {
  if constexpr (Hooks::rotates_keys_separately) hooks.unrotate_key(g, pos);
  else hooks.unrotate(g, pos);
}

// q and k of one head at positions 0..T−1 (rows `ld` apart), turned in place as the hooks turn them.
template <class Hooks, class S>
void rotate_head(const Hooks& hooks, S* q, S* k, std::size_t ld, std::size_t T) {
  for (std::size_t t = 0; t < T; ++t) {
    hooks.rotate(q + t * ld, t);
    rotate_key(hooks, k + t * ld, t);
  }
}

// q and k were rotated in place by the forward pass  →  rotate their gradients back and add them:
// dq, dk (T rows, row stride ld) += unrotate(gq), unrotate_key(gk), or with overwrite = what they
// hold (which then need not be zeroed first); gq, gk (T, hd) are turned in place.
template <class Hooks, class S>
void add_unrotated_qk_gradients(const Hooks& hooks, S* dq, S* dk, std::size_t ld, S* gq, S* gk,
                                std::size_t T, std::size_t hd, bool overwrite = false) {
  for (std::size_t t = 0; t < T; ++t) {
    S* rq = gq + t * hd;
    S* rk = gk + t * hd;
    hooks.unrotate(rq, t);
    unrotate_key(hooks, rk, t);
    S* outq = dq + t * ld;
    S* outk = dk + t * ld;
    if (overwrite) {
      std::copy(rq, rq + hd, outq);
      std::copy(rk, rk + hd, outk);
    } else {
      for (std::size_t d = 0; d < hd; ++d) {
        outq[d] += rq[d];
        outk[d] += rk[d];
      }
    }
  }
}

// out (B,T,C), att (B,H,T,T) the softmax saved for backward (zero above the diagonal),
// qkv (B,T,3C): per position q | k | v, each C = H·hd wide with head h at columns [h·hd, (h+1)·hd).
// When the hooks rotate, q and k are rotated in place: qkv then holds what backward needs.
// Scores: s[i,j] = q_i·k_j / sqrt(hd) + bias(h,i,j) for j ≤ i; with causal = false, for every j
// (a bidirectional layer, which the tests use to show what a position signal breaks).
template <std::floating_point S, class Hooks>
void attention_forward(S* out, S* att, S* qkv, std::size_t B, std::size_t T, std::size_t C,
                       std::size_t H, const Hooks& hooks, bool causal = true) {
  const std::size_t hd = C / H;
  const std::size_t C3 = 3 * C;
  const S scale = S(1) / std::sqrt(static_cast<S>(hd));
  if constexpr (Hooks::rotates_qk)
    for (std::size_t b = 0; b < B; ++b)
      for (std::size_t h = 0; h < H; ++h) {
        S* q = qkv + b * T * C3 + h * hd;
        rotate_head(hooks, q, q + C, C3, T);
      }
  for (std::size_t b = 0; b < B; ++b) {
    for (std::size_t h = 0; h < H; ++h) {
      const S* q = qkv + b * T * C3 + h * hd;
      const S* k = q + C;
      const S* v = q + 2 * C;
      S* a = att + (b * H + h) * T * T;
      gemm<S>(false, true, T, T, hd, scale, q, C3, k, C3, S(0), a, T);  // a = scale·q·kᵀ
      for (std::size_t i = 0; i < T; ++i) {
        S* row = a + i * T;
        const std::size_t keys = causal ? i + 1 : T;
        if constexpr (Hooks::biases_scores) hooks.add_bias(row, h, i, 0, keys);
        softmax_row(row, keys);
        std::fill(row + keys, row + T, S(0));  // masked keys get no weight
      }
      gemm<S>(false, false, T, hd, T, S(1), a, T, v, C3, S(0), out + b * T * C + h * hd, C);
    }
  }
}

// dqkv (B,T,3C) is added into (gradients of the unrotated q, k and v); dout (B,T,C);
// qkv and att as attention_forward left them. (The reference allocates its scratch: one (T,T) score
// gradient and, when the hooks rotate, a (T,hd) gradient for each of q and k; fast::attention_backward
// takes a caller's.)
template <std::floating_point S, class Hooks>
void attention_backward(S* dqkv, const S* dout, const S* qkv, const S* att,
                        std::size_t B, std::size_t T, std::size_t C, std::size_t H, Hooks& hooks,
                        bool causal = true) {
  const std::size_t hd = C / H;
  const std::size_t C3 = 3 * C;
  const S scale = S(1) / std::sqrt(static_cast<S>(hd));
  std::vector<S> scratch(T * T + 2 * T * hd);
  S* dscores = scratch.data();        // (T,T)
  S* dq_rotated = dscores + T * T;    // (T,hd), only when the hooks rotate
  S* dk_rotated = dq_rotated + T * hd;
  for (std::size_t b = 0; b < B; ++b) {
    for (std::size_t h = 0; h < H; ++h) {
      const S* q = qkv + b * T * C3 + h * hd;
      const S* k = q + C;
      const S* v = q + 2 * C;
      S* dq = dqkv + b * T * C3 + h * hd;
      S* dk = dq + C;
      S* dv = dq + 2 * C;
      const S* a = att + (b * H + h) * T * T;
      const S* dy = dout + b * T * C + h * hd;
      // out = a·v  →  da = dy·vᵀ,  dv += aᵀ·dy
      gemm<S>(false, true, T, T, hd, S(1), dy, C, v, C3, S(0), dscores, T);
      gemm<S>(true, false, T, hd, T, S(1), a, T, dy, C, S(1), dv, C3);
      // a = softmax(s) row by row  →  ds_ij = a_ij (da_ij − Σ_k a_ik da_ik), zero past the mask
      for (std::size_t i = 0; i < T; ++i) {
        const S* arow = a + i * T;
        S* drow = dscores + i * T;
        const std::size_t keys = causal ? i + 1 : T;
        S dot = 0;
        for (std::size_t j = 0; j < keys; ++j) dot += arow[j] * drow[j];
        for (std::size_t j = 0; j < keys; ++j) drow[j] = arow[j] * (drow[j] - dot);
        std::fill(drow + keys, drow + T, S(0));
        // s += bias(h,i,j)  →  the bias parameters receive ds
        if constexpr (Hooks::has_bias_parameters) hooks.bias_backward(drow, h, i, keys);
      }
      // s = scale·q·kᵀ  →  dq += scale·ds·k,  dk += scale·dsᵀ·q
      if constexpr (Hooks::rotates_qk) {
        gemm<S>(false, false, T, hd, T, scale, dscores, T, k, C3, S(0), dq_rotated, hd);
        gemm<S>(true, false, T, hd, T, scale, dscores, T, q, C3, S(0), dk_rotated, hd);
        add_unrotated_qk_gradients(hooks, dq, dk, C3, dq_rotated, dk_rotated, T, hd);
      } else {
        gemm<S>(false, false, T, hd, T, scale, dscores, T, k, C3, S(1), dq, C3);
        gemm<S>(true, false, T, hd, T, scale, dscores, T, q, C3, S(1), dk, C3);
      }
    }
  }
  if constexpr (Hooks::finishes_backward) hooks.finish_backward();
}

// The keys a query attends to in a cache: `count` of them, the oldest in slot `first`, each next
// one in the next slot, wrapping at `capacity` (a ring, so evicting the oldest moves nothing).
struct CacheWindow {
  std::size_t first = 0, count = 0, capacity = 0;
  std::size_t slot(std::size_t j) const {
    const std::size_t s = first + j;
    return s < capacity ? s : s - capacity;
  }
};

// One new query against the P = window.count keys and values of a cache, the query's own the
// last (generation with a key/value cache). out (C), scores (P) scratch, q (C) already rotated,
// keys and values (H, capacity, hd): per head a ring holding what attention_forward would have seen. The bias is
// that of query P−1 over keys 0..P−1: positions within the window, oldest first.
template <std::floating_point S, class Hooks>
void attention_step_forward(S* out, S* scores, const S* q, const S* keys, const S* values,
                            const CacheWindow& window, std::size_t C, std::size_t H, const Hooks& hooks) {
  const std::size_t hd = C / H;
  const std::size_t P = window.count;
  const S scale = S(1) / std::sqrt(static_cast<S>(hd));
  for (std::size_t h = 0; h < H; ++h) {
    const S* qh = q + h * hd;
    for (std::size_t j = 0; j < P; ++j) {
      const S* kj = keys + (h * window.capacity + window.slot(j)) * hd;
      S dot = 0;
      for (std::size_t d = 0; d < hd; ++d) dot += qh[d] * kj[d];
      scores[j] = dot * scale;
    }
    if constexpr (Hooks::biases_scores) hooks.add_bias(scores, h, P - 1, 0, P);
    const S smax = *std::max_element(scores, scores + P);
    S sum = 0;
    for (std::size_t j = 0; j < P; ++j) {
      scores[j] = std::exp(scores[j] - smax);
      sum += scores[j];
    }
    S* oh = out + h * hd;
    std::fill(oh, oh + hd, S(0));
    for (std::size_t j = 0; j < P; ++j) {
      const S w = scores[j] / sum;
      const S* vj = values + (h * window.capacity + window.slot(j)) * hd;
      for (std::size_t d = 0; d < hd; ++d) oh[d] += w * vj[d];
    }
  }
}

}  // namespace posenc
