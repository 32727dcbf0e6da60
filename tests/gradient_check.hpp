// Test helpers: finite-difference gradient checks in double precision and seeded random data.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include <posenc/random.hpp>

namespace posenc_test {

inline std::vector<double> random_vector(std::size_t n, std::uint64_t seed, double scale = 1.0) {
  posenc::Rng rng(seed);
  std::vector<double> v(n);
  for (double& x : v) x = rng.normal(0.0, scale);
  return v;
}

inline double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// ‖analytic − numeric‖ / max(‖analytic‖, ‖numeric‖), where numeric is the central difference of
// f() over each of the n entries of x (perturbed in place and restored).
inline double gradient_relative_error(double* x, std::size_t n, const double* analytic,
                                      const std::function<double()>& f, double h = 1e-5) {
  double diff2 = 0, a2 = 0, n2 = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double saved = x[i];
    x[i] = saved + h;
    const double up = f();
    x[i] = saved - h;
    const double down = f();
    x[i] = saved;
    const double numeric = (up - down) / (2 * h);
    diff2 += (analytic[i] - numeric) * (analytic[i] - numeric);
    a2 += analytic[i] * analytic[i];
    n2 += numeric * numeric;
  }
  const double scale = std::sqrt(std::max(a2, n2));
  return scale == 0 ? std::sqrt(diff2) : std::sqrt(diff2) / scale;
}

inline double gradient_relative_error(std::vector<double>& x, const std::vector<double>& analytic,
                                      const std::function<double()>& f, double h = 1e-5) {
  return gradient_relative_error(x.data(), x.size(), analytic.data(), f, h);
}

inline constexpr double gradient_tolerance = 1e-6;

}  // namespace posenc_test
