// Test helpers: finite-difference gradient checks in double precision and seeded random data.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <posenc/parameters.hpp>
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

// The central difference of f() over each of the n entries of x (perturbed in place and restored).
inline std::vector<double> numeric_gradient(double* x, std::size_t n, const std::function<double()>& f,
                                            double h = 1e-5) {
  std::vector<double> numeric(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double saved = x[i];
    x[i] = saved + h;
    const double up = f();
    x[i] = saved - h;
    const double down = f();
    x[i] = saved;
    numeric[i] = (up - down) / (2 * h);
  }
  return numeric;
}

// How an analytic gradient compares with a numeric one over n entries: the relative error
// ‖analytic − numeric‖ / max(‖analytic‖, ‖numeric‖) (‖analytic − numeric‖ when both are 0) and the
// two norms.
struct GradientComparison {
  double error = 0;
  double analytic_norm = 0;
  double numeric_norm = 0;
};

inline GradientComparison compare_gradients(const double* analytic, const double* numeric, std::size_t n) {
  double diff2 = 0, a2 = 0, n2 = 0;
  for (std::size_t i = 0; i < n; ++i) {
    diff2 += (analytic[i] - numeric[i]) * (analytic[i] - numeric[i]);
    a2 += analytic[i] * analytic[i];
    n2 += numeric[i] * numeric[i];
  }
  const double scale = std::sqrt(std::max(a2, n2));
  return {scale == 0 ? std::sqrt(diff2) : std::sqrt(diff2) / scale, std::sqrt(a2), std::sqrt(n2)};
}

inline double relative_error(const double* analytic, const double* numeric, std::size_t n) {
  return compare_gradients(analytic, numeric, n).error;
}

inline double gradient_relative_error(double* x, std::size_t n, const double* analytic,
                                      const std::function<double()>& f, double h = 1e-5) {
  return relative_error(analytic, numeric_gradient(x, n, f, h).data(), n);
}

// One named tensor's check: its relative error, and its gradient's norm (0 for a tensor the loss
// does not reach, which a test should expect only where it says why).
struct TensorGradientCheck {
  std::string name;
  double error = 0;
  double norm = 0;          // ‖analytic‖
  double numeric_norm = 0;  // ‖numeric‖
};

// The relative error of every tensor of a flat parameter buffer on its own, so a small wrong
// gradient of one tensor cannot hide in a model-wide norm dominated by the large ones.
inline std::vector<TensorGradientCheck> gradient_check_per_tensor(const posenc::ParameterTable& table,
                                                                  double* values, const double* analytic,
                                                                  const std::function<double()>& f,
                                                                  double h = 1e-5) {
  const std::vector<double> numeric = numeric_gradient(values, table.total_size(), f, h);
  std::vector<TensorGradientCheck> checks;
  for (const posenc::ParameterInfo& e : table.entries()) {
    const GradientComparison c =
        compare_gradients(analytic + e.slot.offset, numeric.data() + e.slot.offset, e.slot.size);
    checks.push_back({e.name, c.error, c.analytic_norm, c.numeric_norm});
  }
  return checks;
}

inline double gradient_relative_error(std::vector<double>& x, const std::vector<double>& analytic,
                                      const std::function<double()>& f, double h = 1e-5) {
  return gradient_relative_error(x.data(), x.size(), analytic.data(), f, h);
}

inline constexpr double gradient_tolerance = 1e-6;

}  // namespace posenc_test
