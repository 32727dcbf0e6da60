// PositionMap, PositionedHooks: a sequence read at ordered positions instead of 0…T−1 (randomized positions).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "posenc/config.hpp"
#include "posenc/encodings/concept.hpp"
#include "posenc/kernels/dropout.hpp"
#include "posenc/random.hpp"
#include "posenc/tensor.hpp"

namespace posenc {

// Where each index of a sequence sits: index t at position positions[t], strictly increasing; no
// positions: index t at position t. Ruoss et al. (2023) train each sequence at an ordered random
// subset of a range longer than any test sequence, so that the positions a long test sequence
// reaches were seen in training; a map carries such a subset to every place a policy reads a
// position (the embedding table's row, a rotation's angle, a bias's query and key).
struct PositionMap {
  std::span<const std::size_t> positions;  // empty: the identity

  bool identity() const { return positions.empty(); }
  std::size_t at(std::size_t index) const { return identity() ? index : positions[index]; }
  // The positions a sequence of `count` indices reaches, 0 … extent − 1: the rows or angles a
  // policy must have.
  std::size_t extent(std::size_t count) const {
    if (count == 0) return 0;
    return identity() ? count : positions[count - 1] + 1;
  }
};

// Throws posenc::Error unless `positions` increase strictly and stay below `range`.
inline void check_positions(std::span<const std::size_t> positions, std::size_t range, const char* what) {
  for (std::size_t t = 0; t < positions.size(); ++t) {
    if (positions[t] >= range)
      fail(what, ": position ", positions[t], " at index ", t, " is outside the range [0, ", range, ")");
    if (t > 0 && positions[t] <= positions[t - 1])
      fail(what, ": positions must increase, but index ", t, " has ", positions[t], " after ", positions[t - 1]);
  }
}

// `count` distinct positions of [0, range), in increasing order, each subset equally likely: one
// pass of selection sampling (Knuth's Algorithm S) over the range, from a generator seeded by
// `key`, so a draw is a function of its key.
inline std::vector<std::size_t> draw_positions(std::uint64_t key, std::size_t count, std::size_t range) {
  if (count > range) fail("draw_positions: ", count, " distinct positions do not fit the range [0, ", range, ")");
  std::vector<std::size_t> positions;
  positions.reserve(count);
  Rng rng(key);
  for (std::size_t p = 0; p < range && positions.size() < count; ++p) {
    const std::size_t still_needed = count - positions.size();
    if (rng.uniform_index(range - p) < still_needed) positions.push_back(p);
  }
  return positions;
}

// The positions a pass over `tokens` (its sequences' ids, row by row) reads them at: drawn with the
// tokens as the key, so a batch is read at the same positions by every model, whatever passes
// came before, and by every process of a group that scores a shard of it.
inline std::vector<std::size_t> draw_positions_for(std::span<const TokenId> tokens, std::size_t count,
                                                   std::size_t range) {
  std::uint64_t key = DropoutMask::mix(tokens.size());
  for (const TokenId id : tokens) key = DropoutMask::mix(key ^ static_cast<std::uint64_t>(id));
  return draw_positions(key, count, range);
}

// A policy's bound hooks, read through a PositionMap: attention passes sequence indices, the hooks
// see positions. Rotations turn index t by position map.at(t)'s angle; a bias row of query index i
// over key indices j gets bias(map.at(i), map.at(j)), which the policy's own add_bias computes over
// every position the row's keys span (so any policy's bias, learned or fixed, works unchanged); its
// gradient goes back the same way. The inner hooks must be bound for
// map.extent(T) positions. With the identity map every call goes straight through: the same
// numbers, bit for bit, as the inner hooks alone.
template <class Inner, class S>
class PositionedHooks {
 public:
  static constexpr bool rotates_qk = Inner::rotates_qk;
  static constexpr bool rotates_keys_separately = Inner::rotates_keys_separately;
  static constexpr bool biases_scores = Inner::biases_scores;
  static constexpr bool has_bias_parameters = Inner::has_bias_parameters;
  static constexpr bool finishes_backward = Inner::finishes_backward;

  PositionedHooks(Inner inner, PositionMap map) : inner_(std::move(inner)), map_(map) {}

  void rotate(S* x, std::size_t index) const
    requires Inner::rotates_qk
  {
    inner_.rotate(x, map_.at(index));
  }
  void unrotate(S* g, std::size_t index) const
    requires Inner::rotates_qk
  {
    inner_.unrotate(g, map_.at(index));
  }
  void rotate_key(S* x, std::size_t index) const
    requires Inner::rotates_keys_separately
  {
    inner_.rotate_key(x, map_.at(index));
  }
  void unrotate_key(S* g, std::size_t index) const
    requires Inner::rotates_keys_separately
  {
    inner_.unrotate_key(g, map_.at(index));
  }

  // Called from several threads at once: the spread row is each thread's own.
  void add_bias(S* row, std::size_t head, std::size_t query, std::size_t first_key, std::size_t keys) const
    requires Inner::biases_scores
  {
    if (map_.identity()) return inner_.add_bias(row, head, query, first_key, keys);
    if (keys == 0) return;
    thread_local std::vector<S> spread;  // the bias at every position from the first key's to the last's
    const std::size_t first = map_.at(first_key);
    spread.assign(map_.extent(first_key + keys) - first, S(0));
    inner_.add_bias(spread.data(), head, map_.at(query), first, spread.size());
    for (std::size_t j = 0; j < keys; ++j) row[j] += spread[map_.at(first_key + j) - first];
  }
  // Rows arrive one at a time (the contract), so one spread row serves them all.
  void bias_backward(const S* drow, std::size_t head, std::size_t query, std::size_t keys)
    requires Inner::has_bias_parameters
  {
    if (map_.identity()) return inner_.bias_backward(drow, head, query, keys);
    const std::size_t span = map_.extent(keys);
    spread_gradient_.assign(span, S(0));
    for (std::size_t j = 0; j < keys; ++j) spread_gradient_[map_.at(j)] = drow[j];
    inner_.bias_backward(spread_gradient_.data(), head, map_.at(query), span);
  }
  void finish_backward()
    requires Inner::finishes_backward
  {
    inner_.finish_backward();
  }

  const Inner& inner() const { return inner_; }

 private:
  Inner inner_;
  PositionMap map_;
  std::vector<S> spread_gradient_;
};

}  // namespace posenc
