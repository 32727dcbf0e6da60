// The positional-encoding contract: what a policy provides, what attention calls, and a check naming what is missing.
#pragma once

#include <cmath>
#include <concepts>
#include <cstddef>
#include <limits>
#include <string_view>
#include <type_traits>
#include <utility>

#include "posenc/parameters.hpp"

namespace posenc {

// ── The policy ──────────────────────────────────────────────────────────────────────────────
// A policy P is a class with
//   P::name                                   its runtime name, e.g. "rope"
//   P::summary                                one line for `--list-posenc`: what it is, whose it is
//   P::template Embedding<S, Dim>             the signal added to the token embeddings
//   P::template Attention<S, Heads, HeadDim>  the hooks inside each layer's attention
//
// Embedding<S, Dim>, built once per model:
//   Embedding(ParameterTable&, std::size_t context)  registers its parameters (if any)
//   std::size_t max_positions() const                longest sequence it can encode
//   const S* positions(const ParameterStore<S>&, std::size_t T)   a (≥T, Dim) table, or nullptr
//   S* position_grads(ParameterStore<S>&) const       where that table's gradient goes, or nullptr
//
// Attention<S, Heads, HeadDim>, built once per layer:
//   Attention(ParameterTable&, std::string_view layer_prefix, std::size_t context)
//   Hooks bind(ParameterStore<S>&, std::size_t T)    the hooks for a sequence of T positions
//
// ── The hooks ───────────────────────────────────────────────────────────────────────────────
// Five flags say what attention calls. Derive the hooks from NoAttentionHooks or a helper base
// below and turn on what they do: a flag that is on needs its members, and a member needs its
// flag, so a misspelled or undeclared hook is a compile error instead of a call never made.
//   rotates_qk               void rotate(S* vec, std::size_t position) const     q or k of one head, in place
//                            void unrotate(S* grad, std::size_t position) const  the transpose of rotate
//   rotates_keys_separately  (with rotates_qk) rotate_key / unrotate_key, the same signatures, for
//                            keys transformed differently from queries (xPos)
//   biases_scores            void add_bias(S* row, std::size_t head, std::size_t query, std::size_t first_key,
//                            std::size_t keys) const: adds bias(head, query, first_key + j) to row[j]
//                            for j = 0..keys−1 (a tile's keys; first_key + keys ≤ query + 1 under
//                            the causal mask, ≤ T without it); safe to call from several threads at once
//   has_bias_parameters      (with biases_scores) void bias_backward(const S* drow, std::size_t head,
//                            std::size_t query, std::size_t keys): adds the row's gradient into the
//                            bias parameters' gradients; rows arrive one at a time, in a fixed order
//   finishes_backward        (with has_bias_parameters) void finish_backward(), called once after
//                            every row, for hooks that gather the rows' gradients first (FIRE); it
//                            leaves nothing gathered, so the same hooks serve another backward
struct NoAttentionHooks {
  static constexpr bool rotates_qk = false;
  static constexpr bool rotates_keys_separately = false;
  static constexpr bool biases_scores = false;
  static constexpr bool has_bias_parameters = false;
  static constexpr bool finishes_backward = false;
};
// Hooks that rotate q and k (RoPE and its kin).
struct RotaryHooks : NoAttentionHooks {
  static constexpr bool rotates_qk = true;
};
// Hooks that add a fixed bias to the scores (ALiBi).
struct FixedBiasHooks : NoAttentionHooks {
  static constexpr bool biases_scores = true;
};
// Hooks that add a bias with trainable parameters (T5, Kerple, FIRE).
struct TrainableBiasHooks : FixedBiasHooks {
  static constexpr bool has_bias_parameters = true;
};

// |query − key|, the distance every relative policy's bias is a function of.
constexpr std::size_t relative_distance(std::size_t query, std::size_t key) {
  return query >= key ? query - key : key - query;
}

namespace detail {

// Each requirement below is one `if constexpr`: with Report, a broken one stops the build with its
// own message (a static_assert names what is missing, which a concept's diagnostic does not
// without -fconcepts-diagnostics-depth); without, the function only answers whether all hold.
template <bool Report, class H, class S>
consteval bool attention_hooks_contract() {
  if constexpr (!requires {
                  { H::rotates_qk } -> std::convertible_to<bool>;
                  { H::rotates_keys_separately } -> std::convertible_to<bool>;
                  { H::biases_scores } -> std::convertible_to<bool>;
                  { H::has_bias_parameters } -> std::convertible_to<bool>;
                  { H::finishes_backward } -> std::convertible_to<bool>;
                }) {
    static_assert(!Report,
                  "posenc hooks: the hooks lack the flags rotates_qk, rotates_keys_separately, biases_scores, "
                  "has_bias_parameters and finishes_backward; derive them from posenc::NoAttentionHooks, "
                  "RotaryHooks, FixedBiasHooks or TrainableBiasHooks");
    return false;
  } else {
    constexpr bool has_rotate = requires(const H h, S* v, std::size_t p) { h.rotate(v, p); };
    constexpr bool has_unrotate = requires(const H h, S* v, std::size_t p) { h.unrotate(v, p); };
    constexpr bool has_rotate_key = requires(const H h, S* v, std::size_t p) { h.rotate_key(v, p); };
    constexpr bool has_unrotate_key = requires(const H h, S* v, std::size_t p) { h.unrotate_key(v, p); };
    constexpr bool has_add_bias = requires(const H h, S* row, std::size_t n) { h.add_bias(row, n, n, n, n); };
    constexpr bool has_bias_backward = requires(H h, const S* row, std::size_t n) { h.bias_backward(row, n, n, n); };
    constexpr bool has_finish_backward = requires(H h) { h.finish_backward(); };
    bool ok = true;
    if constexpr (H::rotates_qk && !(has_rotate && has_unrotate)) {
      static_assert(!Report, "posenc hooks: rotates_qk is on, so the hooks need `void rotate(S*, std::size_t) const` "
                             "and `void unrotate(S*, std::size_t) const`");
      ok = false;
    }
    if constexpr (!H::rotates_qk && (has_rotate || has_unrotate)) {
      static_assert(!Report, "posenc hooks: the hooks define rotate or unrotate, but rotates_qk is off, so attention "
                             "would never call them; derive the hooks from posenc::RotaryHooks");
      ok = false;
    }
    if constexpr (H::rotates_keys_separately && !(H::rotates_qk && has_rotate_key && has_unrotate_key)) {
      static_assert(!Report, "posenc hooks: rotates_keys_separately is on, so the hooks need rotates_qk and "
                             "`void rotate_key(S*, std::size_t) const` and `void unrotate_key(S*, std::size_t) const`");
      ok = false;
    }
    if constexpr (!H::rotates_keys_separately && (has_rotate_key || has_unrotate_key)) {
      static_assert(!Report, "posenc hooks: the hooks define rotate_key or unrotate_key, but rotates_keys_separately "
                             "is off, so keys would be turned by rotate instead");
      ok = false;
    }
    if constexpr (H::biases_scores && !has_add_bias) {
      static_assert(!Report, "posenc hooks: biases_scores is on, so the hooks need "
                             "`void add_bias(S* row, std::size_t head, std::size_t query, std::size_t first_key, "
                             "std::size_t keys) const`");
      ok = false;
    }
    if constexpr (!H::biases_scores && has_add_bias) {
      static_assert(!Report, "posenc hooks: the hooks define add_bias, but biases_scores is off, so attention would "
                             "never call it; derive the hooks from posenc::FixedBiasHooks");
      ok = false;
    }
    if constexpr (H::has_bias_parameters && !(H::biases_scores && has_bias_backward)) {
      static_assert(!Report,
                    "posenc hooks: has_bias_parameters is on, so the hooks need biases_scores and "
                    "`void bias_backward(const S* drow, std::size_t head, std::size_t query, std::size_t keys)`");
      ok = false;
    }
    if constexpr (!H::has_bias_parameters && has_bias_backward) {
      static_assert(!Report, "posenc hooks: the hooks define bias_backward, but has_bias_parameters is off, so the "
                             "bias parameters would get no gradient; derive the hooks from posenc::TrainableBiasHooks");
      ok = false;
    }
    if constexpr (H::finishes_backward && !(H::has_bias_parameters && has_finish_backward)) {
      static_assert(!Report, "posenc hooks: finishes_backward is on, so the hooks need has_bias_parameters and "
                             "`void finish_backward()`");
      ok = false;
    }
    if constexpr (!H::finishes_backward && has_finish_backward) {
      static_assert(!Report, "posenc hooks: the hooks define finish_backward, but finishes_backward is off, so "
                             "attention would never call it and the gathered gradients would be lost");
      ok = false;
    }
    return ok;
  }
}

template <bool Report, class P, class S, std::size_t Dim, std::size_t Heads>
consteval bool encoding_contract() {
  if constexpr (!requires { { P::name } -> std::convertible_to<std::string_view>; }) {
    static_assert(!Report, "posenc policy: the policy lacks `static constexpr std::string_view name`");
    return false;
  } else if constexpr (!requires { { P::summary } -> std::convertible_to<std::string_view>; }) {
    static_assert(!Report, "posenc policy: the policy lacks `static constexpr std::string_view summary`, the "
                           "line --list-posenc shows");
    return false;
  } else if constexpr (!requires { typename P::template Embedding<S, Dim>; }) {
    static_assert(!Report, "posenc policy: the policy lacks `template <std::floating_point S, std::size_t Dim> "
                           "Embedding` (posenc::NoPositionSignal when it adds nothing to the embeddings)");
    return false;
  } else if constexpr (!requires { typename P::template Attention<S, Heads, Dim / Heads>; }) {
    static_assert(!Report,
                  "posenc policy: the policy lacks `template <std::floating_point S, std::size_t Heads, "
                  "std::size_t HeadDim> Attention` (posenc::NoAttentionSignal when it leaves attention alone)");
    return false;
  } else {
    using E = typename P::template Embedding<S, Dim>;
    using A = typename P::template Attention<S, Heads, Dim / Heads>;
    bool ok = true;
    if constexpr (!std::constructible_from<E, ParameterTable&, std::size_t>) {
      static_assert(!Report, "posenc policy: Embedding needs a constructor (ParameterTable&, std::size_t context)");
      ok = false;
    }
    if constexpr (!requires(const E e) { { e.max_positions() } -> std::same_as<std::size_t>; }) {
      static_assert(!Report, "posenc policy: Embedding needs `std::size_t max_positions() const`");
      ok = false;
    }
    if constexpr (!requires(E e, const ParameterStore<S>& store, std::size_t T) {
                    { e.positions(store, T) } -> std::same_as<const S*>;
                  }) {
      static_assert(!Report,
                    "posenc policy: Embedding needs `const S* positions(const ParameterStore<S>&, std::size_t T)`");
      ok = false;
    }
    if constexpr (!requires(const E e, ParameterStore<S>& store) { { e.position_grads(store) } -> std::same_as<S*>; }) {
      static_assert(!Report, "posenc policy: Embedding needs `S* position_grads(ParameterStore<S>&) const`");
      ok = false;
    }
    if constexpr (!std::constructible_from<A, ParameterTable&, std::string_view, std::size_t>) {
      static_assert(!Report, "posenc policy: Attention needs a constructor (ParameterTable&, std::string_view "
                             "layer_prefix, std::size_t context)");
      ok = false;
    }
    if constexpr (!requires(A a, ParameterStore<S>& store, std::size_t T) { a.bind(store, T); }) {
      static_assert(!Report, "posenc policy: Attention needs `Hooks bind(ParameterStore<S>&, std::size_t T)`");
      return false;
    } else {
      using Hooks = std::remove_cvref_t<decltype(std::declval<A&>().bind(std::declval<ParameterStore<S>&>(), 0))>;
      return attention_hooks_contract<Report, Hooks, S>() && ok;
    }
  }
}

}  // namespace detail

// A policy in name and shape: a name, a summary and the two member templates. Whether their
// members are right depends on the shape; PositionalEncodingFor checks them at one.
template <class P>
concept PositionalEncoding = requires {
  { P::name } -> std::convertible_to<std::string_view>;
  { P::summary } -> std::convertible_to<std::string_view>;
  typename P::template Embedding<float, 1>;
  typename P::template Attention<float, 1, 1>;
};

// P meets the whole contract for a model of width Dim with Heads heads and scalar S.
template <class P, class S, std::size_t Dim, std::size_t Heads>
concept PositionalEncodingFor = detail::encoding_contract<false, P, S, Dim, Heads>();

// For a static_assert where a policy is used: stops the build with a message naming the first
// requirement P misses at this shape (DecoderBlock and CharTransformer assert it).
template <class P, class S, std::size_t Dim, std::size_t Heads>
inline constexpr bool check_positional_encoding = detail::encoding_contract<true, P, S, Dim, Heads>();

// softplus keeps a learned scalar positive (Kerple's r1 and r2, FIRE's c and L); sigmoid is its
// derivative, the factor a gradient picks up on the way back to the stored parameter.
template <std::floating_point S>
S softplus(S x) {
  return x > S(20) ? x : std::log1p(std::exp(x));
}
template <std::floating_point S>
S sigmoid(S x) {
  return S(1) / (S(1) + std::exp(-x));
}

// The embedding side of a policy that adds nothing to the token embeddings.
template <std::floating_point S, std::size_t Dim>
class NoPositionSignal {
 public:
  NoPositionSignal(ParameterTable&, std::size_t) {}
  std::size_t max_positions() const { return std::numeric_limits<std::size_t>::max(); }
  const S* positions(const ParameterStore<S>&, std::size_t) { return nullptr; }
  S* position_grads(ParameterStore<S>&) const { return nullptr; }
};

// The attention side of a policy that leaves attention alone.
template <std::floating_point S, std::size_t Heads, std::size_t HeadDim>
class NoAttentionSignal {
 public:
  NoAttentionSignal(ParameterTable&, std::string_view, std::size_t) {}
  NoAttentionHooks bind(ParameterStore<S>&, std::size_t) { return {}; }
};

}  // namespace posenc
