// KVCache<S>: every layer's keys and values of one sequence, so each generated token costs one position.
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
      : layers_(layers), capacity_(capacity), dim_(dim),
        keys_(layers * capacity * dim), values_(layers * capacity * dim) {
    scratch_.resize(dim, capacity);
    x_.resize(dim);
  }

  std::size_t length() const { return length_; }      // positions cached so far
  std::size_t capacity() const { return capacity_; }  // the most positions it can hold
  bool full() const { return length_ == capacity_; }
  void clear() { length_ = 0; }

  // layer l's (capacity, D) keys and values
  S* keys(std::size_t layer) { return keys_.data() + layer * capacity_ * dim_; }
  S* values(std::size_t layer) { return values_.data() + layer * capacity_ * dim_; }
  StepScratch<S>& scratch() { return scratch_; }
  std::vector<S>& residual() { return x_; }
  void advance() { ++length_; }

 private:
  std::size_t layers_, capacity_, dim_;
  std::size_t length_ = 0;
  std::vector<S> keys_, values_;  // (layers, capacity, D)
  StepScratch<S> scratch_;
  std::vector<S> x_;              // (D) the residual stream of the current position
};

}  // namespace posenc
