// Statistics for comparing runs: mean, sd, t confidence intervals, Welch's and paired t-tests, Holm's adjustment.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <numbers>
#include <optional>
#include <utility>
#include <vector>

#include "posenc/config.hpp"

namespace posenc::stats {

inline double mean(const std::vector<double>& x) {
  if (x.empty()) fail("stats::mean: no values");
  double s = 0;
  for (double v : x) s += v;
  return s / static_cast<double>(x.size());
}

// The sample standard deviation (divisor n − 1); undefined for fewer than two values.
inline std::optional<double> sample_sd(const std::vector<double>& x) {
  if (x.size() < 2) return std::nullopt;
  const double m = mean(x);
  double ss = 0;
  for (double v : x) ss += (v - m) * (v - m);
  return std::sqrt(ss / static_cast<double>(x.size() - 1));
}

// Whether a spread of sd among values of magnitude up to `scale` is only rounding: values computed
// from the same counts in another order (a mean of accuracies, a difference of two) differ in
// their last bits, and a test on that spread would report p ≈ 0 for a difference that is constant.
inline bool is_rounding_spread(double sd, double scale) {
  return sd <= 64 * std::numeric_limits<double>::epsilon() * scale;
}

inline double largest_magnitude(const std::vector<double>& x) {
  double m = 0;
  for (double v : x) m = std::max(m, std::abs(v));
  return m;
}

// The regularized incomplete beta function I_x(a, b), by its continued fraction (modified Lentz),
// using the symmetry I_x(a,b) = 1 − I_{1−x}(b,a) where the fraction converges slowly.
inline double incomplete_beta(double a, double b, double x) {
  if (!(a > 0 && b > 0)) fail("stats::incomplete_beta: a and b must be positive");
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  if (x > (a + 1) / (a + b + 2)) return 1 - incomplete_beta(b, a, 1 - x);
  const double log_front = std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) +
                           b * std::log1p(-x);
  const double tiny = 1e-300;
  double f = 1, c = 1, d = 0;
  for (int i = 0; i <= 400; ++i) {
    const int m = i / 2;
    double numerator;
    if (i == 0) {
      numerator = 1;
    } else if (i % 2 == 0) {
      numerator = (m * (b - m) * x) / ((a + 2 * m - 1) * (a + 2 * m));
    } else {
      numerator = -((a + m) * (a + b + m) * x) / ((a + 2 * m) * (a + 2 * m + 1));
    }
    d = 1 + numerator * d;
    if (std::abs(d) < tiny) d = tiny;
    d = 1 / d;
    c = 1 + numerator / c;
    if (std::abs(c) < tiny) c = tiny;
    const double cd = c * d;
    f *= cd;
    if (std::abs(1 - cd) < 1e-15) return std::exp(log_front) * (f - 1) / a;
  }
  fail("stats::incomplete_beta: no convergence for a=", a, ", b=", b, ", x=", x);
}

// P(T ≤ t) for Student's t with df degrees of freedom (df > 0, not necessarily whole).
inline double student_t_cdf(double t, double df) {
  if (!(df > 0)) fail("stats::student_t_cdf: degrees of freedom must be positive, got ", df);
  if (std::isinf(t)) return t > 0 ? 1.0 : 0.0;
  // P(T > |t|) = ½·I_{ν/(ν+t²)}(ν/2, ½) = ½·(1 − I_{t²/(ν+t²)}(½, ν/2)); the second form keeps its
  // precision for small |t|, where ν/(ν+t²) rounds to 1.
  const double t2 = t * t;
  const double tail = t2 < df ? 0.5 * (1 - incomplete_beta(0.5, df / 2, t2 / (df + t2)))
                              : 0.5 * incomplete_beta(df / 2, 0.5, df / (df + t2));
  return t >= 0 ? 1 - tail : tail;
}

// The two-sided p-value of a t statistic: P(|T| ≥ |t|).
inline double two_sided_p(double t, double df) {
  if (std::isinf(t)) return 0;
  return incomplete_beta(df / 2, 0.5, df / (df + t * t));
}

// The t with P(T ≤ t) = p, by bisection on the exact CDF (to about 1e-12).
inline double student_t_quantile(double p, double df) {
  if (!(p > 0 && p < 1)) fail("stats::student_t_quantile: p must lie in (0, 1), got ", p);
  double lo = -1, hi = 1;
  while (student_t_cdf(lo, df) > p) lo *= 2;
  while (student_t_cdf(hi, df) < p) hi *= 2;
  for (int i = 0; i < 200 && hi - lo > 1e-12 * std::max(1.0, std::abs(lo)); ++i) {
    const double mid = 0.5 * (lo + hi);
    (student_t_cdf(mid, df) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

struct Interval {
  double low = 0, high = 0;
};

// mean ± t_{(1+level)/2, n−1} · sd/√n; undefined for fewer than two values.
inline std::optional<Interval> confidence_interval(const std::vector<double>& x, double level = 0.95) {
  const auto sd = sample_sd(x);
  if (!sd) return std::nullopt;
  const double n = static_cast<double>(x.size());
  const double half = student_t_quantile(0.5 + level / 2, n - 1) * *sd / std::sqrt(n);
  const double m = mean(x);
  return Interval{m - half, m + half};
}

struct TTest {
  double t = 0;   // the statistic, positive when the first sample's mean is larger
  double df = 0;  // degrees of freedom (Welch–Satterthwaite for Welch's test)
  double p = 1;   // two-sided p-value from the exact t distribution
};

// Welch's unequal-variance t-test of mean(a) − mean(b); undefined with fewer than two values in
// either sample or when both are constant (to rounding).
inline std::optional<TTest> welch_t_test(const std::vector<double>& a, const std::vector<double>& b) {
  const auto sa = sample_sd(a), sb = sample_sd(b);
  if (!sa || !sb) return std::nullopt;
  if (is_rounding_spread(*sa, largest_magnitude(a)) && is_rounding_spread(*sb, largest_magnitude(b)))
    return std::nullopt;
  const double va = *sa * *sa / static_cast<double>(a.size());
  const double vb = *sb * *sb / static_cast<double>(b.size());
  if (va + vb == 0) return std::nullopt;
  const double t = (mean(a) - mean(b)) / std::sqrt(va + vb);
  const double df = (va + vb) * (va + vb) /
                    (va * va / static_cast<double>(a.size() - 1) + vb * vb / static_cast<double>(b.size() - 1));
  return TTest{t, df, two_sided_p(t, df)};
}

// The paired t-test of the differences a_i − b_i (pairs matched by index, e.g. by seed);
// undefined for fewer than two pairs or when every difference is the same (to rounding).
inline std::optional<TTest> paired_t_test(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size())
    fail("stats::paired_t_test: the samples have ", a.size(), " and ", b.size(), " values; pairs need equal counts");
  std::vector<double> d(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) d[i] = a[i] - b[i];
  const auto sd = sample_sd(d);
  if (!sd || is_rounding_spread(*sd, std::max(largest_magnitude(a), largest_magnitude(b)))) return std::nullopt;
  const double n = static_cast<double>(d.size());
  const double t = mean(d) / (*sd / std::sqrt(n));
  return TTest{t, n - 1, two_sided_p(t, n - 1)};
}

// The values of a and of b at the keys (e.g. seeds) both have, in a's order: a paired test's pairs.
template <class Key>
std::pair<std::vector<double>, std::vector<double>> shared_pairs(const std::vector<Key>& keys_a,
                                                                 const std::vector<double>& a,
                                                                 const std::vector<Key>& keys_b,
                                                                 const std::vector<double>& b) {
  std::pair<std::vector<double>, std::vector<double>> pairs;
  for (std::size_t x = 0; x < keys_a.size(); ++x)
    for (std::size_t y = 0; y < keys_b.size(); ++y)
      if (keys_a[x] == keys_b[y]) {
        pairs.first.push_back(a[x]);
        pairs.second.push_back(b[y]);
      }
  return pairs;
}

// Holm's step-down adjustment of a family of p-values (missing values stay missing).
inline std::vector<std::optional<double>> holm(const std::vector<std::optional<double>>& p) {
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < p.size(); ++i)
    if (p[i]) order.push_back(i);
  std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return *p[x] < *p[y]; });
  std::vector<std::optional<double>> adjusted(p.size());
  double running = 0;
  for (std::size_t k = 0; k < order.size(); ++k) {
    running = std::max(running, std::min(1.0, static_cast<double>(order.size() - k) * *p[order[k]]));
    adjusted[order[k]] = running;
  }
  return adjusted;
}

}  // namespace posenc::stats
