// The PositionalEncoding concept: what a policy class must provide to plug into DecoderBlock and CharTransformer.
#pragma once

#include <cmath>
#include <concepts>
#include <cstddef>
#include <limits>
#include <string_view>

#include "posenc/kernels/attention.hpp"
#include "posenc/model/parameters.hpp"

namespace posenc {

// A policy P is a class with
//   P::name                                       its runtime name, e.g. "rope"
//   P::template Embedding<S, Dim>                 the signal added to the token embeddings
//   P::template Attention<S, Heads, HeadDim>      the hooks inside each layer's attention
//
// Embedding<S, Dim>, built once per model:
//   Embedding(ParameterTable&, std::size_t context)  registers its parameters (if any)
//   std::size_t max_positions() const                longest sequence it can encode
//   const S* positions(const ParameterStore<S>&, std::size_t T)   a (≥T, Dim) table, or nullptr
//   S* position_grads(ParameterStore<S>&) const       where that table's gradient goes, or nullptr
//
// Attention<S, Heads, HeadDim>, built once per layer:
//   Attention(ParameterTable&, std::string_view layer_prefix, std::size_t context)
//   hooks bind(ParameterStore<S>&, std::size_t T)    the hooks for a sequence of T positions, an
//                                                    object with the flags of NoAttentionHooks
namespace detail {

template <class E, class S>
concept EmbeddingHook =
    std::constructible_from<E, ParameterTable&, std::size_t> &&
    requires(E e, const E ce, ParameterStore<S>& store, const ParameterStore<S>& cstore,
             std::size_t n) {
      { ce.max_positions() } -> std::same_as<std::size_t>;
      { e.positions(cstore, n) } -> std::same_as<const S*>;
      { ce.position_grads(store) } -> std::same_as<S*>;
    };

template <class Hooks, class S>
concept BoundAttentionHooks =
    requires {
      { Hooks::rotates_qk } -> std::convertible_to<bool>;
      { Hooks::biases_scores } -> std::convertible_to<bool>;
      { Hooks::has_bias_parameters } -> std::convertible_to<bool>;
    } &&
    (!Hooks::rotates_qk || requires(const Hooks h, S* vec, std::size_t pos) {
      h.rotate(vec, pos);
      h.unrotate(vec, pos);
    }) &&
    (!Hooks::biases_scores || requires(const Hooks h, S* row, std::size_t n) {
      h.add_bias(row, n, n, n);
    }) &&
    (!Hooks::has_bias_parameters || requires(Hooks h, const S* row, std::size_t n) {
      h.bias_backward(row, n, n, n);
    });

template <class A, class S>
concept AttentionHook =
    std::constructible_from<A, ParameterTable&, std::string_view, std::size_t> &&
    requires(A a, ParameterStore<S>& store, std::size_t n) {
      { a.bind(store, n) } -> BoundAttentionHooks<S>;
    };

}  // namespace detail

template <class P>
concept PositionalEncoding =
    requires {
      { P::name } -> std::convertible_to<std::string_view>;
    } &&
    detail::EmbeddingHook<typename P::template Embedding<double, 8>, double> &&
    detail::AttentionHook<typename P::template Attention<double, 2, 4>, double>;

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
