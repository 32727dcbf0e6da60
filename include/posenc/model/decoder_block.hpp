// DecoderBlock<PosEnc, Dim, Heads, S>: one pre-LayerNorm transformer block with the policy's attention hooks.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "posenc/encodings/all.hpp"
#include "posenc/encodings/concept.hpp"
#include "posenc/encodings/position_map.hpp"
#include "posenc/encodings/rope_scaling.hpp"
#include "posenc/kernels/attention.hpp"
#include "posenc/kernels/dropout.hpp"
#include "posenc/kernels/fast_attention.hpp"
#include "posenc/kernels/fast_attention_bf16.hpp"
#include "posenc/kernels/fast_gelu.hpp"
#include "posenc/kernels/fast_layernorm.hpp"
#include "posenc/kernels/fast_linear.hpp"
#include "posenc/kernels/fast_residual.hpp"
#include "posenc/kernels/gelu.hpp"
#include "posenc/kernels/layernorm.hpp"
#include "posenc/kernels/linear.hpp"
#include "posenc/kernels/parallel.hpp"
#include "posenc/kernels/profile.hpp"
#include "posenc/parameters.hpp"

namespace posenc {

// What a block's forward saves for its backward, for N = B·T positions; a forward with no
// backward to follow works in the same buffers but needs neither lse, att nor fch_gelu.
template <std::floating_point S>
struct BlockActivations {
  std::vector<S> ln1, ln1_mean, ln1_rstd;  // (N,D), (N), (N)
  std::vector<S> qkv;                      // (N,3D), q and k as the policy rotated them
  std::vector<S> lse;                      // (B,H,T) each query's softmax log-normaliser
  std::vector<S> att;                      // (B,H,T,T) the softmax, where kept (fast_attention.hpp)
  std::vector<S> atty;                     // (N,D) attention output before c_proj
  std::vector<S> res1;                     // (N,D) input + attention branch
  std::vector<S> ln2, ln2_mean, ln2_rstd;  // (N,D), (N), (N)
  std::vector<S> fch, fch_gelu;            // (N,4D) before and after GELU (after: fp32 layers only)
  // (N,7D) with bf16 linear layers: their inputs ln1, atty, ln2 and fch_gelu as the forward
  // rounded them, so the backward need not round them again; empty otherwise
  std::vector<Bf16> rounded;

  void resize(std::size_t B, std::size_t T, std::size_t D, std::size_t H, bool for_backward = true,
              bool keep_rounded = false) {
    const std::size_t N = B * T;
    for (auto* v : {&ln1, &atty, &res1, &ln2}) v->resize(N * D);
    for (auto* v : {&ln1_mean, &ln1_rstd, &ln2_mean, &ln2_rstd}) v->resize(N);
    qkv.resize(N * 3 * D);
    fch.resize(N * 4 * D);
    if (for_backward) {
      lse.resize(B * H * T);
      if (fast::keeps_attention_probabilities<S>(B, H, T)) att.resize(B * H * T * T);
      if (keep_rounded) rounded.resize(N * 7 * D);
      else fch_gelu.resize(N * 4 * D);  // with bf16 layers, only its rounding is kept
    }
  }

  // The rounded copy of a linear layer's input (N, columns) at `offset` columns into `rounded`, or
  // nullptr when none is kept.
  Bf16* rounded_input(std::size_t N, std::size_t offset, std::size_t columns) {
    return rounded.size() >= N * (offset + columns) ? rounded.data() + N * offset : nullptr;
  }
  const Bf16* rounded_input(std::size_t N, std::size_t offset, std::size_t columns) const {
    return rounded.size() >= N * (offset + columns) ? rounded.data() + N * offset : nullptr;
  }
};

// Gradient buffers a block's backward works in; one set serves every layer. Buffers whose
// lifetimes do not overlap share memory: `small` holds dln2, then datty, then dln1; `big` holds
// dfch_gelu, turned into dfch in place, then dqkv.
template <std::floating_point S>
struct BlockScratch {
  std::vector<S> dres1;      // (N,D)
  std::vector<S> small;      // (N,D); first the dropped gradient of the MLP's output, with dropout
  std::vector<S> big;        // (N,4D)
  std::vector<Bf16> big16;   // (N,4D) with bf16 linear layers: dfch rounded; sized by the backward
  // fast::attention_scratch_size<Hooks>(T, D, H, threads, kept): sized by DecoderBlock::backward,
  // which knows the hooks and the thread count at the moment it runs
  std::vector<S> attention;

  void resize(std::size_t B, std::size_t T, std::size_t D) {
    const std::size_t N = B * T;
    dres1.resize(N * D);
    small.resize(N * D);
    big.resize(N * 4 * D);
  }
};

// Buffers for one position of one sequence, when generating with a key/value cache.
template <std::floating_point S>
struct StepScratch {
  std::vector<S> ln, atty, res1, h;       // (D)
  std::vector<S> qkv;                     // (3D)
  std::vector<S> fch, fch_gelu;           // (4D)
  std::vector<S> scores;                  // (capacity)
  S mean = 0, rstd = 0;

  void resize(std::size_t D, std::size_t capacity) {
    for (auto* v : {&ln, &atty, &res1, &h}) v->resize(D);
    qkv.resize(3 * D);
    fch.resize(4 * D);
    fch_gelu.resize(4 * D);
    scores.resize(capacity);
  }
};


// LN → causal multi-head self-attention → residual → LN → MLP (D → 4D → D, GELU tanh) → residual.
// Parameters are registered under nanoGPT's names, "transformer.h.{layer}.…".
template <class PosEnc, std::size_t Dim, std::size_t Heads, std::floating_point S = float>
class DecoderBlock {
  static_assert(Heads > 0 && Dim % Heads == 0,
                "DecoderBlock: Dim must be divisible by Heads (each head gets Dim / Heads dimensions)");
  static_assert(check_positional_encoding<PosEnc, S, Dim, Heads>);  // names what PosEnc misses

 public:
  static constexpr std::size_t dim = Dim;
  static constexpr std::size_t heads = Heads;
  static constexpr std::size_t head_dim = Dim / Heads;
  using Activations = BlockActivations<S>;
  // Where each linear layer's rounded input sits in Activations::rounded, in columns of N rows.
  static constexpr std::size_t ln1_at = 0, atty_at = Dim, ln2_at = 2 * Dim, gelu_at = 3 * Dim;
  using Scratch = BlockScratch<S>;
  using PositionHooks = typename PosEnc::template Attention<S, Heads, head_dim>;
  using BoundHooks = decltype(std::declval<PositionHooks&>().bind(std::declval<ParameterStore<S>&>(), std::size_t{}));

  // causal = false makes a bidirectional block (used by the tests to show what the mask hides);
  // precision is that of the linear layers' GEMMs in training (forward and backward).
  DecoderBlock(ParameterTable& table, std::size_t layer, std::size_t context, bool causal = true,
               Precision precision = Precision::fp32)
      : w_(register_weights(table, prefix(layer))),
        position_(table, prefix(layer) + "attn.", context),
        causal_(causal),
        precision_(precision) {}

  // Whether the policy turns q and k by a table a RopeScaling can change (rope_scaling.hpp).
  static constexpr bool rotary = is_rotary_policy<PosEnc>;
  // A rotary policy's base and stretch past the trained context; any other policy refuses a
  // setting that would change something, rather than ignore it.
  void set_rope_scaling(const RopeScaling& scaling) {
    if constexpr (rotary) {
      position_.set_rope_scaling(scaling);
    } else if (scaling.changes_anything()) {
      fail("rope scaling: ", PosEnc::name, " does not turn q and k, so a RoPE base or scaling does not apply to it (",
           name_list(rotary_policy_names()), " take them)");
    }
  }

  // The policy's hooks for a sequence of T indices read at `positions` (PositionedHooks).
  PositionedHooks<BoundHooks, S> bind_at(ParameterStore<S>& store, std::size_t T, PositionMap positions) {
    return {position_.bind(store, positions.extent(T)), positions};
  }

  // out (B,T,D), inp (B,T,D). The training path: posenc::fast kernels, which tests/
  // test_fast_kernels.cpp checks against the reference kernels. With an active `dropout` (this
  // layer's mask of a training pass; the batch's sequences are first_sequence…), nanoGPT's three
  // dropouts: the attention probabilities, and each branch's output before its residual add.
  // Every sequence's index t sits at position positions.at(t). Without `for_backward` nothing is
  // kept for a backward (act sized with for_backward false): attention keeps neither
  // log-normalisers nor probabilities, and the GELU runs in place.
  void forward(S* out, const S* inp, Activations& act, ParameterStore<S>& store, std::size_t B,
               std::size_t T, const DropoutMask& dropout = {}, std::uint64_t first_sequence = 0,
               PositionMap positions = {}, bool for_backward = true) {
    const std::size_t N = B * T;
    const auto& p = store.values;
    const std::uint64_t first = first_sequence * T * Dim;  // the batch's first element in the residual masks
    profiled("forward: layernorm", [&] { fast::layernorm_forward(act.ln1.data(), act.ln1_mean.data(),
                                         act.ln1_rstd.data(), inp, p[w_.ln_1_w], p[w_.ln_1_b], N, Dim); });
    profiled("forward: linear qkv", [&] {
      fast::linear_forward(act.qkv.data(), act.ln1.data(), p[w_.c_attn_w], p[w_.c_attn_b], N, Dim, 3 * Dim, precision_,
                           act.rounded_input(N, ln1_at, Dim));
    });
    S* lse = for_backward ? act.lse.data() : nullptr;
    S* att = for_backward && fast::keeps_attention_probabilities<S>(B, Heads, T) ? act.att.data() : nullptr;
    profiled("forward: attention", [&] {
      const fast::AttentionDropout attention_dropout{dropout.at(attention_site), first_sequence};
      if constexpr (std::is_same_v<S, float>)
        if (bf16_attention(att != nullptr, T))
          return fast::attention_forward_bf16(act.atty.data(), lse, att, act.qkv.data(), B, T, Dim, Heads,
                                              bind_at(store, T, positions), causal_, attention_dropout);
      fast::attention_forward(act.atty.data(), lse, att, act.qkv.data(), B, T, Dim, Heads,
                              bind_at(store, T, positions), causal_, attention_dropout);
    });
    profiled("forward: linear attn proj", [&] { fast::linear_forward(act.res1.data(), act.atty.data(),
                                                p[w_.attn_proj_w], p[w_.attn_proj_b], N, Dim, Dim, precision_,
                                                act.rounded_input(N, atty_at, Dim)); });
    profiled("forward: dropout", [&] { posenc::dropout(act.res1.data(), N * Dim, dropout.at(attention_output_site),
                                       first); });
    profiled("forward: residual add", [&] { fast::add_into(act.res1.data(), inp, N * Dim); });
    profiled("forward: layernorm", [&] { fast::layernorm_forward(act.ln2.data(), act.ln2_mean.data(),
                                         act.ln2_rstd.data(), act.res1.data(), p[w_.ln_2_w], p[w_.ln_2_b], N, Dim); });
    profiled("forward: linear mlp fc", [&] {
      fast::linear_forward(act.fch.data(), act.ln2.data(), p[w_.c_fc_w], p[w_.c_fc_b], N, Dim, 4 * Dim, precision_,
                           act.rounded_input(N, ln2_at, Dim));
    });
    if (Bf16* gelu16 = rounded_gelu(act, N); gelu16 != nullptr) {  // only its rounding is read
      if constexpr (std::is_same_v<S, float>) {
        profiled("forward: gelu", [&] { fast::gelu_forward_bf16(gelu16, act.fch.data(), N * 4 * Dim); });
        profiled("forward: linear mlp proj", [&] { fast::linear_forward_rounded(out, gelu16, p[w_.mlp_proj_w],
                                                   p[w_.mlp_proj_b], N, 4 * Dim, Dim); });
      }
    } else {
      S* gelu = for_backward ? act.fch_gelu.data() : act.fch.data();
      profiled("forward: gelu", [&] { fast::gelu_forward(gelu, act.fch.data(), N * 4 * Dim); });
      profiled("forward: linear mlp proj", [&] { fast::linear_forward(out, gelu, p[w_.mlp_proj_w],
                                                 p[w_.mlp_proj_b], N, 4 * Dim, Dim, precision_); });
    }
    profiled("forward: dropout", [&] { posenc::dropout(out, N * Dim, dropout.at(mlp_output_site), first); });
    profiled("forward: residual add", [&] { fast::add_into(out, act.res1.data(), N * Dim); });
  }

  // att (B,H,T,T): the attention probabilities of this block for its input inp (B,T,D), [b,h,i,j]
  // the weight query i of head h gives key j, 0 where the mask hides j; the forward's kernel
  // computes them as a backward would keep them. act sized as for forward without a backward.
  void attention_probabilities(S* att, const S* inp, Activations& act, ParameterStore<S>& store, std::size_t B,
                               std::size_t T, PositionMap positions = {}) {
    const std::size_t N = B * T;
    const auto& p = store.values;
    fast::layernorm_forward(act.ln1.data(), act.ln1_mean.data(), act.ln1_rstd.data(), inp, p[w_.ln_1_w],
                            p[w_.ln_1_b], N, Dim);
    fast::linear_forward(act.qkv.data(), act.ln1.data(), p[w_.c_attn_w], p[w_.c_attn_b], N, Dim, 3 * Dim, precision_);
    std::fill(att, att + B * Heads * T * T, S(0));  // the kernel leaves most masked entries unwritten
    fast::attention_forward(act.atty.data(), static_cast<S*>(nullptr), att, act.qkv.data(), B, T, Dim, Heads,
                            bind_at(store, T, positions), causal_);
  }

  // dinp (B,T,D) is added into; dout (B,T,D); inp and act as forward saw and left them, with the
  // forward's dropout
  void backward(S* dinp, const S* dout, const S* inp, const Activations& act, Scratch& sc,
                ParameterStore<S>& store, std::size_t B, std::size_t T, const DropoutMask& dropout = {},
                std::uint64_t first_sequence = 0, PositionMap positions = {}) {
    const std::size_t N = B * T;
    const std::uint64_t first = first_sequence * T * Dim;
    const auto& p = store.values;
    auto& g = store.grads;
    // Every scratch gradient below is written whole by the first kernel that produces it (the
    // overwrite flags), so none needs zeroing.
    S* dfch = sc.big.data();     // dfch_gelu, then dfch in place
    S* dqkv = sc.big.data();     // once dfch is consumed
    S* dsmall = sc.small.data(); // dln2, then datty, then dln1
    // out = res1 + dropout(mlp_proj(gelu(fc(ln2(res1)))))
    std::copy(dout, dout + N * Dim, sc.dres1.begin());
    const S* dmlp = dout;  // the gradient of mlp_proj's output
    if (dropout.active()) {
      profiled("backward: dropout", [&] {
        std::copy(dout, dout + N * Dim, dsmall);
        posenc::dropout(dsmall, N * Dim, dropout.at(mlp_output_site), first);
      });
      dmlp = dsmall;
    }
    profiled("backward: linear mlp proj", [&] { fast::linear_backward(dfch, g[w_.mlp_proj_w], g[w_.mlp_proj_b], dmlp,
                                                act.fch_gelu.data(), p[w_.mlp_proj_w], N, 4 * Dim, Dim, true,
                                                precision_, act.rounded_input(N, gelu_at, 4 * Dim)); });
    // in place; with bf16 layers only its rounding, for mlp_fc's products, and mlp_fc's bias
    // gradient in the same pass
    Bf16* dfch16 = nullptr;
    S* dfc_bias = g[w_.c_fc_b];
    if constexpr (std::is_same_v<S, float>) {
      if (rounded_gelu(act, N) != nullptr) {
        if (sc.big16.size() < N * 4 * Dim) sc.big16.resize(N * 4 * Dim);
        dfch16 = sc.big16.data();
        profiled("backward: gelu", [&] { fast::gelu_backward_bf16(dfch16, dfc_bias, act.fch.data(), dfch, N,
                                                                  4 * Dim); });
        dfc_bias = nullptr;
        dfch = nullptr;
      }
    }
    if (dfch16 == nullptr)
      profiled("backward: gelu", [&] { fast::gelu_backward(dfch, act.fch.data(), dfch, N * 4 * Dim, true); });
    profiled("backward: linear mlp fc", [&] { fast::linear_backward(dsmall, g[w_.c_fc_w], dfc_bias, dfch,
                                              act.ln2.data(), p[w_.c_fc_w], N, Dim, 4 * Dim, true, precision_,
                                              act.rounded_input(N, ln2_at, Dim), dfch16); });
    profiled("backward: layernorm", [&] { fast::layernorm_backward(sc.dres1.data(), g[w_.ln_2_w], g[w_.ln_2_b], dsmall,
                                          act.res1.data(), p[w_.ln_2_w], act.ln2_mean.data(), act.ln2_rstd.data(), N,
                                          Dim); });
    // res1 = inp + dropout(attn_proj(attention(c_attn(ln1(inp)))))
    profiled("backward: residual add", [&] { fast::add_into(dinp, sc.dres1.data(), N * Dim); });
    profiled("backward: dropout", [&] { posenc::dropout(sc.dres1.data(), N * Dim, dropout.at(attention_output_site),
                                        first); });
    profiled("backward: linear attn proj", [&] { fast::linear_backward(dsmall, g[w_.attn_proj_w], g[w_.attn_proj_b],
                                                 sc.dres1.data(), act.atty.data(), p[w_.attn_proj_w], N, Dim, Dim, true,
                                                 precision_, act.rounded_input(N, atty_at, Dim)); });
    // one share of scratch per thread of this moment (the count may have changed since the
    // forward); it grows on the first step only, unless the thread count or T grows
    profiled("backward: attention", [&] {
      auto hooks = bind_at(store, T, positions);
      const bool kept = fast::keeps_attention_probabilities<S>(B, Heads, T);
      const std::size_t needed =
          fast::attention_scratch_size<decltype(hooks), S>(T, Dim, Heads, max_parallel_threads(), kept);
      if (sc.attention.size() < needed) sc.attention.resize(needed);
      const fast::AttentionDropout attention_dropout{dropout.at(attention_site), first_sequence};
      if constexpr (std::is_same_v<S, float>)
        if (bf16_attention(kept, T))
          return fast::attention_backward_bf16(dqkv, sc.attention.data(), dsmall, act.qkv.data(), act.atty.data(),
                                               act.att.data(), B, T, Dim, Heads, hooks, causal_, true,
                                               attention_dropout);
      fast::attention_backward(dqkv, sc.attention.data(), dsmall, act.qkv.data(), act.atty.data(), act.lse.data(),
                               kept ? act.att.data() : nullptr, B, T, Dim, Heads, hooks, causal_, true,
                               attention_dropout);
    });
    profiled("backward: linear qkv", [&] { fast::linear_backward(dsmall, g[w_.c_attn_w], g[w_.c_attn_b], dqkv,
                                           act.ln1.data(), p[w_.c_attn_w], N, Dim, 3 * Dim, true, precision_,
                                           act.rounded_input(N, ln1_at, Dim)); });
    profiled("backward: layernorm", [&] { fast::layernorm_backward(dinp, g[w_.ln_1_w], g[w_.ln_1_b], dsmall, inp,
                                          p[w_.ln_1_w], act.ln1_mean.data(), act.ln1_rstd.data(), N, Dim); });
  }

  // Whether a training pass's attention multiplies in bfloat16 (fast::attention_forward_bf16): with
  // bf16 layers, the probabilities kept and T where it pays. Evaluation keeps fp32 tiles, whose
  // memory is linear in T.
  bool bf16_attention(bool probabilities_kept, std::size_t T) const {
    return precision_ == Precision::bf16 && probabilities_kept && fast::bf16_attention_pays(Heads, T);
  }

  // Where a bf16 training pass keeps the GELU's output, rounded, as mlp_proj's input; nullptr when
  // it keeps none (fp32 layers, or a pass with no backward), and the GELU's output is in float.
  Bf16* rounded_gelu(Activations& act, std::size_t N) const {
    return precision_ == Precision::bf16 ? act.rounded_input(N, gelu_at, 4 * Dim) : nullptr;
  }
  const Bf16* rounded_gelu(const Activations& act, std::size_t N) const {
    return precision_ == Precision::bf16 ? act.rounded_input(N, gelu_at, 4 * Dim) : nullptr;
  }

  // The same computation as forward for one new position of one sequence, at rotation position
  // `pos`: x (D) is the block's input and receives its output; keys and values (Heads, capacity,
  // head_dim) are this layer's cache rings, whose `window` holds the (rotated) keys and values the
  // new position attends to, its own last, in the slot this writes.
  void forward_step(S* x, S* keys, S* values, S* unturned_keys, std::size_t pos, const CacheWindow& window,
                    StepScratch<S>& sc, ParameterStore<S>& store) {
    const auto& p = store.values;
    auto hooks = position_.bind(store, std::max(pos + 1, window.count));
    layernorm_forward(sc.ln.data(), &sc.mean, &sc.rstd, x, p[w_.ln_1_w], p[w_.ln_1_b], 1, Dim);
    linear_forward(sc.qkv.data(), sc.ln.data(), p[w_.c_attn_w], p[w_.c_attn_b], 1, Dim, 3 * Dim);
    const std::size_t slot = window.slot(window.count - 1);
    if constexpr (decltype(hooks)::rotates_qk) {
      for (std::size_t h = 0; h < Heads; ++h) {
        const S* k = sc.qkv.data() + Dim + h * head_dim;
        std::copy(k, k + head_dim, unturned_keys + (h * window.capacity + slot) * head_dim);
      }
      for (std::size_t h = 0; h < Heads; ++h) {
        hooks.rotate(sc.qkv.data() + h * head_dim, pos);
        rotate_key(hooks, sc.qkv.data() + Dim + h * head_dim, pos);
      }
    }
    for (std::size_t h = 0; h < Heads; ++h) {
      const S* k = sc.qkv.data() + Dim + h * head_dim;
      std::copy(k, k + head_dim, keys + (h * window.capacity + slot) * head_dim);
      std::copy(k + Dim, k + Dim + head_dim, values + (h * window.capacity + slot) * head_dim);
    }
    fast::attention_step_forward(sc.atty.data(), sc.scores.data(), sc.qkv.data(), keys, values, window,
                                 Dim, Heads, hooks);
    linear_forward(sc.res1.data(), sc.atty.data(), p[w_.attn_proj_w], p[w_.attn_proj_b], 1, Dim, Dim);
    for (std::size_t i = 0; i < Dim; ++i) sc.res1[i] += x[i];
    layernorm_forward(sc.ln.data(), &sc.mean, &sc.rstd, sc.res1.data(), p[w_.ln_2_w], p[w_.ln_2_b],
                      1, Dim);
    linear_forward(sc.fch.data(), sc.ln.data(), p[w_.c_fc_w], p[w_.c_fc_b], 1, Dim, 4 * Dim);
    fast::gelu_forward(sc.fch_gelu.data(), sc.fch.data(), 4 * Dim);
    linear_forward(x, sc.fch_gelu.data(), p[w_.mlp_proj_w], p[w_.mlp_proj_b], 1, 4 * Dim, Dim);
    for (std::size_t i = 0; i < Dim; ++i) x[i] += sc.res1[i];
  }

  // Turns the cached keys of `held` again, the j-th at position first_position + j, from the
  // unturned keys kept beside them: a rolling cache moves its positions back this way, so that they
  // (and the angle tables they index) stay bounded. Exact for any rotation, a magnitude (YaRN's)
  // included. Nothing to do without rotations.
  void turn_keys_again(S* keys, const S* unturned_keys, const CacheWindow& held, std::size_t first_position,
                       ParameterStore<S>& store) {
    if constexpr (BoundHooks::rotates_qk) {
      const auto hooks = position_.bind(store, first_position + held.count);
      for (std::size_t j = 0; j < held.count; ++j)
        for (std::size_t h = 0; h < Heads; ++h) {
          const std::size_t row = (h * held.capacity + held.slot(j)) * head_dim;
          std::copy(unturned_keys + row, unturned_keys + row + head_dim, keys + row);
          rotate_key(hooks, keys + row, first_position + j);
        }
    }
  }

 private:
  // where each dropout of a block takes its mask from (DropoutMask::at)
  static constexpr std::uint64_t attention_site = 0, attention_output_site = 1, mlp_output_site = 2;

  struct Weights {
    Slot ln_1_w, ln_1_b, c_attn_w, c_attn_b, attn_proj_w, attn_proj_b;
    Slot ln_2_w, ln_2_b, c_fc_w, c_fc_b, mlp_proj_w, mlp_proj_b;
  };

  static std::string prefix(std::size_t layer) {
    return "transformer.h." + std::to_string(layer) + ".";
  }

  static Weights register_weights(ParameterTable& t, const std::string& h) {
    Weights w;
    w.ln_1_w = t.add(h + "ln_1.weight", {Dim}, Init::ones);
    w.ln_1_b = t.add(h + "ln_1.bias", {Dim}, Init::zeros);
    const TorchInit from_dim = TorchInit::linear(Dim), from_hidden = TorchInit::linear(4 * Dim);
    w.c_attn_w = t.add(h + "attn.c_attn.weight", {3 * Dim, Dim}, Init::normal, 0, from_dim);
    w.c_attn_b = t.add(h + "attn.c_attn.bias", {3 * Dim}, Init::zeros, 0, from_dim);
    w.attn_proj_w = t.add(h + "attn.c_proj.weight", {Dim, Dim}, Init::normal, 0, from_dim);
    w.attn_proj_b = t.add(h + "attn.c_proj.bias", {Dim}, Init::zeros, 0, from_dim);
    w.ln_2_w = t.add(h + "ln_2.weight", {Dim}, Init::ones);
    w.ln_2_b = t.add(h + "ln_2.bias", {Dim}, Init::zeros);
    w.c_fc_w = t.add(h + "mlp.c_fc.weight", {4 * Dim, Dim}, Init::normal, 0, from_dim);
    w.c_fc_b = t.add(h + "mlp.c_fc.bias", {4 * Dim}, Init::zeros, 0, from_dim);
    w.mlp_proj_w = t.add(h + "mlp.c_proj.weight", {Dim, 4 * Dim}, Init::normal, 0, from_hidden);
    w.mlp_proj_b = t.add(h + "mlp.c_proj.bias", {Dim}, Init::zeros, 0, from_hidden);
    return w;
  }

  Weights w_;
  PositionHooks position_;
  bool causal_;
  Precision precision_;
};

}  // namespace posenc
