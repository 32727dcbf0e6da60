// KVCache<S>: every layer's keys and values of a sequence's last positions, so a generated token costs one position.
#pragma once

#include <concepts>
#include <cstddef>
#include <vector>

#include "posenc/model/decoder_block.hpp"

namespace posenc {

template <std::floating_point S>
class KVCache {
 public:
  KVCache(std::size_t layers, std::size_t capacity, std::size_t dim)
      : capacity_(capacity), dim_(dim), keys_(layers * capacity * dim), values_(layers * capacity * dim),
        unturned_keys_(layers * capacity * dim) {
    scratch_.resize(dim, capacity);
    x_.resize(dim);
  }

  std::size_t length() const { return length_; }      // positions held
  std::size_t capacity() const { return capacity_; }  // the most positions it can hold
  bool full() const { return length_ == capacity_; }
  // The position the next token takes: length() until the first eviction; after it, positions
  // go on counting (rotated keys stay valid) until a rebase moves them back by the capacity.
  std::size_t next_position() const { return next_position_; }
  // Positions evicted so far: the sequence's first held token is token number evicted().
  std::size_t evicted() const { return evicted_; }
  void clear() { length_ = first_ = next_position_ = evicted_ = 0; }

  // layer l's keys and values, (Heads, capacity, head_dim): per head a ring (window() says where
  // each position is) of consecutive rows, which attention reads as matrices
  S* keys(std::size_t layer) { return keys_.data() + layer * capacity_ * dim_; }
  S* values(std::size_t layer) { return values_.data() + layer * capacity_ * dim_; }
  // the keys before the encoding turned them, for a rebase to turn them at new positions
  S* unturned_keys(std::size_t layer) { return unturned_keys_.data() + layer * capacity_ * dim_; }
  // The held positions; with_next: and the next one (where forward_step writes before attending).
  CacheWindow window(bool with_next = false) const { return {first_, length_ + (with_next ? 1 : 0), capacity_}; }
  StepScratch<S>& scratch() { return scratch_; }
  std::vector<S>& residual() { return x_; }

  // The model's bookkeeping around a step: drop the oldest position (when full), record the new one.
  void evict_oldest() {
    first_ = first_ + 1 == capacity_ ? 0 : first_ + 1;
    --length_;
    ++evicted_;
  }
  void advance() {
    ++length_;
    ++next_position_;
  }
  // Every held position moved back by `delta`; the model then turns the held keys again there.
  void rebase(std::size_t delta) { next_position_ -= delta; }

 private:
  std::size_t capacity_, dim_;
  std::size_t length_ = 0, first_ = 0, next_position_ = 0, evicted_ = 0;
  std::vector<S> keys_, values_, unturned_keys_;  // (layers, heads, capacity, head_dim)
  StepScratch<S> scratch_;
  std::vector<S> x_;              // (D) the residual stream of the current position
};

}  // namespace posenc
