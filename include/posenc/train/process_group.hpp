// ProcessGroup: the processes that train one model together (data parallelism), and each one's rows of a batch.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>

#include "posenc/tensor.hpp"

namespace posenc {

// What the training loop needs from a communication library, and nothing more: posenc's core
// stays free of MPI, and posenc/distributed/mpi.hpp implements this with MPI. Every process of
// the group must make the same calls in the same order.
class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // data ← the element-wise sum of every process's data, on every process
  virtual void sum(float* data, std::size_t n) = 0;
  virtual void sum(double* data, std::size_t n) = 0;
  // bytes ← rank 0's bytes, on every process
  virtual void broadcast(void* bytes, std::size_t n) = 0;

  bool is_root() const { return rank() == 0; }
  // Whether any process's `mine` is true, on every process (a vote: every process must call it).
  bool any(bool mine) {
    double count = mine ? 1.0 : 0.0;
    sum(&count, 1);
    return count > 0;
  }
  void broadcast(std::string& text) {
    std::size_t length = text.size();
    broadcast(&length, sizeof length);
    text.resize(length);
    broadcast(text.data(), length);
  }
  template <class T>
  void broadcast_value(T& value) {
    broadcast(&value, sizeof value);
  }
};

// Rows [first, second) of a global batch of `batch` rows that process `rank` of `size` computes:
// contiguous, in rank order, sizes differing by at most one.
inline std::pair<std::size_t, std::size_t> batch_shard(std::size_t batch, int rank, int size) {
  const auto r = static_cast<std::size_t>(rank), n = static_cast<std::size_t>(size);
  return {batch * r / n, batch * (r + 1) / n};
}

}  // namespace posenc
