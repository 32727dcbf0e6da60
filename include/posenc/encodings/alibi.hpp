// ALiBi and ALiBiSingleSlope: a linear distance penalty −m_h·(i − j) on the attention scores of each head.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <string_view>
#include <vector>

#include "posenc/encodings/concept.hpp"

namespace posenc {

// Press et al.'s slopes: for H a power of two, m_h = 2^(−8(h+1)/H); otherwise the slopes of the
// largest power of two P below H, then every other slope of 2P for the remaining heads.
inline std::vector<double> alibi_slopes(std::size_t heads) {
  auto power_of_two_slopes = [](std::size_t n) {
    std::vector<double> slopes(n);
    for (std::size_t h = 0; h < n; ++h)
      slopes[h] = std::pow(2.0, -8.0 * static_cast<double>(h + 1) / static_cast<double>(n));
    return slopes;
  };
  if (heads == 0) return {};
  std::size_t p = 1;
  while (p * 2 <= heads) p *= 2;
  std::vector<double> slopes = power_of_two_slopes(p);
  if (p == heads) return slopes;
  const std::vector<double> extra = alibi_slopes(2 * p);
  for (std::size_t i = 0; slopes.size() < heads; i += 2) slopes.push_back(extra[i]);
  return slopes;
}

// The study's simplified variant: one slope, 2^(−8/H), for every head.
inline std::vector<double> alibi_single_slopes(std::size_t heads) {
  return std::vector<double>(heads, std::pow(2.0, -8.0 / static_cast<double>(heads)));
}

// The attention hooks shared by both variants; SlopeRule picks the slopes.
template <std::floating_point S, std::size_t Heads, std::vector<double> (*SlopeRule)(std::size_t)>
class LinearDistanceBias {
 public:
  LinearDistanceBias(ParameterTable&, std::string_view, std::size_t) {
    const std::vector<double> slopes = SlopeRule(Heads);
    for (std::size_t h = 0; h < Heads; ++h) slopes_[h] = static_cast<S>(slopes[h]);
  }

  struct Hooks : FixedBiasHooks {
    const std::array<S, Heads>* slopes;

    // row[j] += −m_h·|i − key| for query i and key = first_key + j: −m_h·(i − key) under the causal
    // mask, where key ≤ i
    void add_bias(S* row, std::size_t head, std::size_t query, std::size_t first_key, std::size_t keys) const {
      const S m = (*slopes)[head];
      for (std::size_t j = 0; j < keys; ++j)
        row[j] -= m * static_cast<S>(relative_distance(query, first_key + j));
    }
  };

  Hooks bind(ParameterStore<S>&, std::size_t) const { return Hooks{{}, &slopes_}; }
  const std::array<S, Heads>& slopes() const { return slopes_; }

 private:
  std::array<S, Heads> slopes_{};
};

struct ALiBi {
  static constexpr std::string_view name = "alibi";
  static constexpr std::string_view summary =
      "a linear distance penalty on the scores, one slope per head (Press et al. 2022)";
  template <std::floating_point S, std::size_t Dim>
  using Embedding = NoPositionSignal<S, Dim>;
  template <std::floating_point S, std::size_t Heads, std::size_t HeadDim>
  using Attention = LinearDistanceBias<S, Heads, alibi_slopes>;
};

struct ALiBiSingleSlope {
  static constexpr std::string_view name = "alibi-single";
  static constexpr std::string_view summary =
      "ALiBi with one slope, 2^(-8/H), for every head (the published study's variant)";
  template <std::floating_point S, std::size_t Dim>
  using Embedding = NoPositionSignal<S, Dim>;
  template <std::floating_point S, std::size_t Heads, std::size_t HeadDim>
  using Attention = LinearDistanceBias<S, Heads, alibi_single_slopes>;
};

}  // namespace posenc
