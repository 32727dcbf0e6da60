// posenc::Rng: the seeded generator behind initialisation and batch sampling, the same stream on every platform.
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>
#include <random>
#include <sstream>
#include <string>

#include "posenc/config.hpp"

namespace posenc {

// std::mt19937_64 is specified bit for bit; the distributions below are written out because the
// standard library's are not, and a seed must give the same model with any compiler.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : engine_(seed) {}

  std::uint64_t next() { return engine_(); }

  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

  // Uniform in [0, n), without modulo bias (rejection sampling).
  std::uint64_t uniform_index(std::uint64_t n) {
    if (n == 0) fail("Rng::uniform_index: n must be positive");
    const std::uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    std::uint64_t draw = next();
    while (draw >= limit) draw = next();
    return draw % n;
  }

  // Normal(mean, std) by the Box-Muller transform; one draw per call keeps the stream simple.
  double normal(double mean, double std) {
    const double u1 = 1.0 - uniform();  // (0, 1]: log is finite
    const double u2 = uniform();
    return mean + std * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  }

  // The engine's full state as text, so a resumed run continues the same stream.
  std::string state() const {
    std::ostringstream out;
    out << engine_;
    return out.str();
  }
  void set_state(const std::string& text) {
    std::istringstream in(text);
    in >> engine_;
    if (in.fail()) fail("Rng::set_state: the text is not a saved generator state");
  }

 private:
  std::mt19937_64 engine_;
};

}  // namespace posenc
