// Tests of train/statistics.hpp against values derived independently: closed forms and hand computation.
#include <catch2/catch.hpp>

#include <cmath>
#include <numbers>
#include <vector>

#include <posenc/study/statistics.hpp>

using namespace posenc::stats;

TEST_CASE("mean and the sample standard deviation (n − 1)") {
  // {2, 4, 4, 4, 5, 5, 7, 9}: mean 5, Σ(x − 5)² = 32, sample variance 32/7.
  const std::vector<double> x = {2, 4, 4, 4, 5, 5, 7, 9};
  CHECK(mean(x) == 5.0);
  CHECK(*sample_sd(x) == Approx(std::sqrt(32.0 / 7.0)).epsilon(1e-15));
  CHECK_FALSE(sample_sd({1.0}).has_value());
}

TEST_CASE("the t distribution's CDF matches its closed forms for 1 and 2 degrees of freedom") {
  // df = 1 is the Cauchy distribution: F(t) = 1/2 + atan(t)/π.
  // df = 2: F(t) = 1/2 + t / (2·sqrt(2 + t²)).
  for (double t : {-30.0, -3.0, -1.0, -0.2, 0.0, 0.5, 1.7, 4.0, 100.0}) {
    CHECK(student_t_cdf(t, 1) == Approx(0.5 + std::atan(t) / std::numbers::pi).epsilon(1e-12));
    CHECK(student_t_cdf(t, 2) == Approx(0.5 + t / (2 * std::sqrt(2 + t * t))).epsilon(1e-12));
  }
  // df = 4: F(t) = 1/2 + t(t² + 6) / (2(t² + 4)^{3/2}).
  for (double t : {-2.5, 0.3, 1.0, 6.0})
    CHECK(student_t_cdf(t, 4) == Approx(0.5 + t * (t * t + 6) / (2 * std::pow(t * t + 4, 1.5))).epsilon(1e-12));
}

TEST_CASE("the t CDF for a fractional df agrees with numerical integration of the density") {
  // The density c·(1 + t²/ν)^(−(ν+1)/2), c = Γ((ν+1)/2) / (sqrt(νπ) Γ(ν/2)), integrated from 0 to t
  // by Simpson's rule with 20,000 panels: F(t) = 1/2 + ∫₀ᵗ density.
  for (double nu : {3.7, 6.25, 11.5}) {
    const double c = std::exp(std::lgamma((nu + 1) / 2) - std::lgamma(nu / 2)) / std::sqrt(nu * std::numbers::pi);
    auto density = [&](double t) { return c * std::pow(1 + t * t / nu, -(nu + 1) / 2); };
    for (double t : {0.4, 1.3, 2.9}) {
      const int n = 20000;
      const double h = t / n;
      double integral = density(0) + density(t);
      for (int i = 1; i < n; ++i) integral += (i % 2 ? 4 : 2) * density(i * h);
      integral *= h / 3;
      CHECK(student_t_cdf(t, nu) == Approx(0.5 + integral).epsilon(1e-10));
    }
  }
}

TEST_CASE("t quantiles invert the CDF") {
  // df = 1: t_{0.975} = tan(0.475π) = 12.706204736174…; df = 2: t_p = (2p − 1)·sqrt(2 / (1 − (2p − 1)²)).
  CHECK(student_t_quantile(0.975, 1) == Approx(std::tan(0.475 * std::numbers::pi)).epsilon(1e-10));
  CHECK(student_t_quantile(0.975, 2) == Approx(0.95 * std::sqrt(2 / (1 - 0.95 * 0.95))).epsilon(1e-10));
  CHECK(student_t_quantile(0.5, 7) == Approx(0).margin(1e-10));
  CHECK(student_t_quantile(0.025, 2) == Approx(-student_t_quantile(0.975, 2)).epsilon(1e-10));
}

TEST_CASE("the 95% confidence interval is mean ± t_{0.975, n−1}·sd/√n") {
  // {1, 2, 3}: mean 2, sd 1, n = 3 → half-width t_{0.975,2}/√3 = 4.30265…/1.73205… (df = 2 closed form).
  const auto ci = confidence_interval({1.0, 2.0, 3.0});
  const double t = 0.95 * std::sqrt(2 / (1 - 0.95 * 0.95));
  REQUIRE(ci.has_value());
  CHECK(ci->low == Approx(2 - t / std::sqrt(3.0)).epsilon(1e-10));
  CHECK(ci->high == Approx(2 + t / std::sqrt(3.0)).epsilon(1e-10));
  CHECK_FALSE(confidence_interval({1.0}).has_value());
}

TEST_CASE("the paired t-test by hand, with closed-form p-values") {
  // Differences {1, 3}: mean 2, sd √2, se 1, t = 2 with df = 1; p = 1 − 2·atan(2)/π (Cauchy).
  const auto one = paired_t_test({2.0, 5.0}, {1.0, 2.0});
  REQUIRE(one.has_value());
  CHECK(one->t == Approx(2.0).epsilon(1e-14));
  CHECK(one->df == 1.0);
  CHECK(one->p == Approx(1 - 2 * std::atan(2.0) / std::numbers::pi).epsilon(1e-12));
  // Differences {1, 2, 6}: mean 3, sd √7, t = 3/(√7/√3) with df = 2; p = 1 − t/sqrt(2 + t²).
  const auto two = paired_t_test({1.0, 2.0, 6.0}, {0.0, 0.0, 0.0});
  const double t = 3 / (std::sqrt(7.0) / std::sqrt(3.0));
  REQUIRE(two.has_value());
  CHECK(two->t == Approx(t).epsilon(1e-14));
  CHECK(two->p == Approx(1 - t / std::sqrt(2 + t * t)).epsilon(1e-12));
  // Constant differences or one pair: no test.
  CHECK_FALSE(paired_t_test({1.0, 2.0}, {0.0, 1.0}).has_value());
  CHECK_FALSE(paired_t_test({1.0}, {0.0}).has_value());
  // Differences equal but for rounding (0.1 + 0.2 is 0.30000000000000004): no test either, not p ≈ 0.
  CHECK_FALSE(paired_t_test({0.1 + 0.2, 0.3, 0.3}, {0.0, 0.0, 0.0}).has_value());
  // A real spread far below the values' size still counts.
  CHECK(paired_t_test({1.0, 1.0 + 1e-9, 1.0 - 1e-9}, {0.0, 0.0, 0.0}).has_value());
  CHECK_THROWS_WITH(paired_t_test({1.0, 2.0}, {1.0}), Catch::Contains("pairs need equal counts"));
}

TEST_CASE("Welch's t-test by hand") {
  // a = {1, 2, 3}: mean 2, variance 1; b = {4, 5, 6, 7}: mean 5.5, variance 5/3.
  // se² = 1/3 + (5/3)/4 = 3/4, t = −3.5/√0.75;
  // df = 0.75² / ((1/3)²/2 + (5/12)²/3) = 0.5625 / (1/18 + 25/432) = 0.5625 / (49/432) = 243/49.
  const auto w = welch_t_test({1.0, 2.0, 3.0}, {4.0, 5.0, 6.0, 7.0});
  REQUIRE(w.has_value());
  CHECK(w->t == Approx(-3.5 / std::sqrt(0.75)).epsilon(1e-14));
  CHECK(w->df == Approx(243.0 / 49.0).epsilon(1e-14));
  CHECK(w->p == Approx(2 * student_t_cdf(w->t, w->df)).epsilon(1e-12));
  // Equal variances and sizes: Welch's df is 2(n − 1) and t is the pooled t.
  // a = {1, 2, 3}, b = {2, 3, 4}: t = −1/√(2/3), df = 4; F(t) for df = 4 in closed form (see above).
  const auto e = welch_t_test({1.0, 2.0, 3.0}, {2.0, 3.0, 4.0});
  const double t = -1 / std::sqrt(2.0 / 3.0);
  REQUIRE(e.has_value());
  CHECK(e->df == Approx(4.0).epsilon(1e-14));
  CHECK(e->p == Approx(2 * (0.5 + t * (t * t + 6) / (2 * std::pow(t * t + 4, 1.5)))).epsilon(1e-12));
  CHECK_FALSE(welch_t_test({1.0, 1.0}, {2.0, 2.0}).has_value());
  CHECK_FALSE(welch_t_test({0.1 + 0.2, 0.3}, {0.5, 0.5}).has_value());
}
