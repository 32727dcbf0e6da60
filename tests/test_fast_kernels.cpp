// Tests of kernels/fast_*.hpp: each against its reference kernel, in float and double, on one and several threads.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <cstddef>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#if defined(__linux__)
#include <sys/wait.h>
#include <unistd.h>
#endif

#include <posenc/transformer.hpp>

#include "every_policy_attention.hpp"
#include "gradient_check.hpp"
#include "thread_counts.hpp"

using namespace posenc;
using posenc_test::random_vector;
using posenc_test::ThreadCounts;

namespace {

template <class S>
std::vector<S> random_as(std::size_t n, std::uint64_t seed, double scale = 1.0) {
  const std::vector<double> d = random_vector(n, seed, scale);
  return std::vector<S>(d.begin(), d.end());
}

// max |a − b| / (1 + max |b|): the error relative to the size of the reference's values
template <class S>
double max_error(const std::vector<S>& a, const std::vector<S>& b) {
  REQUIRE(a.size() == b.size());
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(static_cast<double>(a[i]) - static_cast<double>(b[i])));
    scale = std::max(scale, std::abs(static_cast<double>(b[i])));
  }
  return diff / (1.0 + scale);
}

template <class S>
constexpr double tolerance() {
  return std::is_same_v<S, float> ? 2e-5 : 1e-12;
}

}  // namespace

TEST_CASE("simd::exp and simd::tanh stay within a few float ulp of the library functions") {
  double exp_rel = 0, tanh_abs = 0;
  for (double x = -87.0; x <= 88.0; x += 0.00731) {
    const auto f = static_cast<float>(x);
    const double e = std::exp(static_cast<double>(f));
    exp_rel = std::max(exp_rel, std::abs(static_cast<double>(simd::exp(f)) - e) / e);
  }
  for (double x = -20.0; x <= 20.0; x += 0.000917) {
    const auto f = static_cast<float>(x);
    tanh_abs = std::max(tanh_abs, std::abs(static_cast<double>(simd::tanh(f)) - std::tanh(static_cast<double>(f))));
  }
  CHECK(exp_rel < 2.5 * 5.97e-8);  // ≤ 2 ulp
  CHECK(tanh_abs < 3e-7);
  CHECK(simd::exp(-1000.0f) >= 0.0f);
  CHECK(simd::exp(-1000.0f) < 1e-37f);
  CHECK(std::isfinite(simd::exp(1000.0f)));
  CHECK(simd::tanh(-0.0f) == 0.0f);
  CHECK(simd::tanh(50.0f) == 1.0f);
  CHECK(simd::tanh(-50.0f) == -1.0f);
}

TEST_CASE("a bias of -1e4 (a mask written as a bias) gives exact zeros, never subnormal floats") {
  // Subnormal probabilities cost a microcode assist per multiply on many CPUs in every GEMM they
  // enter: a −1e4 mask trained ~4× slower than the same mask at −30 (issue 17).
  const auto subnormal = [](float x) { return x != 0.0f && std::fpclassify(x) == FP_SUBNORMAL; };
  CHECK(simd::exp(-1000.0f) == 0.0f);
  CHECK(simd::exp(-87.5f) == 0.0f);  // below e^−87.3, the smallest normal float's neighbourhood
  CHECK_FALSE(subnormal(simd::exp(-87.2f)));
  for (const std::size_t n : {5, 8, 37, 128}) {
    std::vector<float> row(n);
    for (std::size_t j = 0; j < n; ++j) row[j] = j % 3 == 0 ? 0.5f : -1e4f;
    row[1] = -86.5f;  // e^−86.5 / (number of kept entries) is subnormal unless flushed
    fast::softmax_row(row.data(), n);
    std::size_t zeros = 0;
    for (std::size_t j = 0; j < n; ++j) {
      INFO("n = " << n << ", j = " << j << ": " << row[j]);
      CHECK_FALSE(subnormal(row[j]));
      zeros += row[j] == 0.0f;
    }
    CHECK(zeros == n - (n + 2) / 3);
  }
}

TEST_CASE("softmax rows: the 4-wide and the dispatched path against a double-precision softmax") {
  for (std::size_t n :
       {std::size_t{1}, std::size_t{3}, std::size_t{8}, std::size_t{13}, std::size_t{65}, std::size_t{128}}) {
    const auto x = random_as<float>(n, 30 + n, 5.0);
    const auto d = random_as<float>(n, 60 + n);
    double zmax = -1e300, z = 0;
    for (float v : x) zmax = std::max(zmax, static_cast<double>(v));
    for (float v : x) z += std::exp(v - zmax);
    std::vector<float> expected(n), dexpected(n);
    double pd = 0;
    for (std::size_t j = 0; j < n; ++j) {
      expected[j] = static_cast<float>(std::exp(x[j] - zmax) / z);
      pd += static_cast<double>(expected[j]) * d[j];
    }
    for (std::size_t j = 0; j < n; ++j) dexpected[j] = static_cast<float>(expected[j] * (d[j] - pd));
    std::vector<float> a = x, b = x, da = d, db = d;
    const float log_norm_a = fast::detail::softmax_span<simd::f32x4>(a.data(), n);
    const float log_norm_b = fast::softmax_row(b.data(), n);
    CHECK(log_norm_a == Approx(std::log(z) + zmax).epsilon(1e-6));
    CHECK(log_norm_b == Approx(std::log(z) + zmax).epsilon(1e-6));
    CHECK(max_error(a, expected) < 1e-6);
    CHECK(max_error(b, expected) < 1e-6);
    fast::detail::softmax_backward_span<simd::f32x4>(da.data(), expected.data(), n);
    fast::softmax_row_backward(db.data(), expected.data(), n);
    CHECK(max_error(da, dexpected) < 1e-6);
    CHECK(max_error(db, dexpected) < 1e-6);
  }
}

// The largest of |got − want| / (|want| + floor) over the entries, in units of S's epsilon: a
// relative error, except where want is much smaller than the terms it is the difference of (the
// formula's 1 + tanh u for very negative x, whose rounding a factor of size floor scales).
template <class S>
double max_error_in_eps(const std::vector<S>& got, const std::vector<long double>& want,
                        const std::vector<long double>& floor) {
  REQUIRE(got.size() == want.size());
  long double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::abs(static_cast<long double>(got[i]) - want[i]) / (std::abs(want[i]) + floor[i]));
  return static_cast<double>(worst / std::numeric_limits<S>::epsilon());
}

TEMPLATE_TEST_CASE("GELU, reference and fast, forward and backward, is PyTorch's tanh GELU to a few ulp", "", float,
                   double) {
  using S = TestType;
  // PyTorch's gelu(x, approximate="tanh") and its derivative at a few points (Python, in double,
  // from the formula with √(2/π) computed from π): a pinned check of the formula and its constants
  const std::vector<double> points = {-3.0, -1.0, 0.5, 1.0, 2.0};
  const std::vector<long double> pinned = {-0.0036373920817729943, -0.15880800939172324, 0.34571400982514394,
                                           0.8411919906082768, 1.954597694087775};
  const std::vector<long double> pinned_grad = {-0.011584166630969516, -0.08296408384578255, 0.8673699035346424,
                                                1.0829640838457826, 1.0860992566236183};
  // and on 4099 points of [−6, 6], the same formula in long double
  std::vector<double> xs = points;
  for (std::size_t i = 0; i < 4099; ++i) xs.push_back(-6.0 + 12.0 * static_cast<double>(i) / 4098.0 + 1e-7);
  const long double k = std::sqrt(2.0L / std::numbers::pi_v<long double>), a = 0.044715L;
  std::vector<long double> want(xs.size()), want_grad(xs.size());
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const long double x = static_cast<S>(xs[i]);  // the input the kernels see
    const long double t = std::tanh(k * (x + a * x * x * x));
    want[i] = i < pinned.size() ? pinned[i] : 0.5L * x * (1 + t);
    want_grad[i] = i < pinned.size() ? pinned_grad[i]
                                     : 0.5L * (1 + t) + 0.5L * x * (1 - t * t) * k * (1 + 3 * a * x * x);
  }
  const std::vector<S> x(xs.begin(), xs.end()), ones(xs.size(), S(1));
  std::vector<long double> floor(xs.size()), grad_floor(xs.size());
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const long double ax = std::abs(static_cast<long double>(x[i]));
    floor[i] = ax / 2;                                   // ½x·(1 + tanh u)
    grad_floor[i] = (1 + ax * (1 + 3 * a * ax * ax)) / 2;  // ½(1 + tanh u) + ½x·(1 − tanh² u)·k·(1 + 3a·x²)
  }
  // 16 ulp: √(2/π) off by 0.09% moves gelu(1) by 2e-4, over 1,000 float ulp in this measure (a
  // tolerance relative to the largest output let it pass)
  const double tolerance = 16;
  std::vector<S> y(x.size()), dx(x.size());
  gelu_forward(y.data(), x.data(), x.size());
  CHECK(max_error_in_eps(y, want, floor) < tolerance);
  gelu_backward(dx.data(), x.data(), ones.data(), x.size());
  CHECK(max_error_in_eps(dx, want_grad, grad_floor) < tolerance);
  fast::gelu_forward(y.data(), x.data(), x.size());
  CHECK(max_error_in_eps(y, want, floor) < tolerance);
  fast::gelu_backward(dx.data(), x.data(), ones.data(), x.size(), true);
  CHECK(max_error_in_eps(dx, want_grad, grad_floor) < tolerance);
  if constexpr (std::is_same_v<S, float>) {  // the 4-wide path, which CPUs without AVX2 take
    fast::detail::gelu_forward_span<simd::f32x4>(y.data(), x.data(), x.size());
    CHECK(max_error_in_eps(y, want, floor) < tolerance);
    fast::detail::gelu_backward_span<simd::f32x4>(dx.data(), x.data(), ones.data(), x.size(), true);
    CHECK(max_error_in_eps(dx, want_grad, grad_floor) < tolerance);
  }
}

TEST_CASE("GELU's 16-wide path gives the 8-wide path's bits") {
  if (!simd::cpu_has_avx512f()) {
    WARN("this CPU has no AVX-512F: the 16-wide path is not run here");
    return;
  }
  const std::size_t n = 4096 + 13;  // a tail the 16-wide loop leaves to the 4-wide one
  const auto x = random_as<float>(n, 21, 4.0), dy = random_as<float>(n, 22);
  std::vector<float> y8(n), y16(n), dx8 = random_as<float>(n, 23), dx16 = dx8;
  fast::detail::gelu_forward_avx2(y8.data(), x.data(), n);
  fast::detail::gelu_forward_avx512(y16.data(), x.data(), n);
  CHECK(y16 == y8);
  for (const bool overwrite : {false, true}) {
    fast::detail::gelu_backward_avx2(dx8.data(), x.data(), dy.data(), n, overwrite);
    fast::detail::gelu_backward_avx512(dx16.data(), x.data(), dy.data(), n, overwrite);
    CHECK(dx16 == dx8);
  }
}

TEST_CASE("the residual add adds every element once, at every thread count") {
  const ThreadCounts restore;
  for (const std::size_t n : {std::size_t{5}, (std::size_t{1} << 16) + 77}) {  // serial, and split with a tail
    const auto x = random_as<float>(n, 31), y = random_as<float>(n, 32);
    std::vector<float> want = x;
    for (std::size_t i = 0; i < n; ++i) want[i] += y[i];
    for (const int threads : {1, 2, 3}) {
      set_num_threads(threads);
      std::vector<float> got = x;
      fast::add_into(got.data(), y.data(), n);
      CHECK(got == want);
    }
  }
}

TEMPLATE_TEST_CASE("fast row kernels match the reference kernels", "", float, double) {
  using S = TestType;
  ThreadCounts restore;
  for (int threads : {1, 3}) {
    set_num_threads(threads);
    DYNAMIC_SECTION("threads " << threads) {
      const std::size_t N = 37, C = 19, OC = 13;  // odd sizes: partial chunks and simd tails
      SECTION("linear") {
        const auto inp = random_as<S>(N * C, 1), w = random_as<S>(OC * C, 2), b = random_as<S>(OC, 3);
        const auto dout = random_as<S>(N * OC, 4);
        for (bool with_bias : {true, false}) {
          const S* bias = with_bias ? b.data() : nullptr;
          std::vector<S> ref(N * OC), got(N * OC);
          linear_forward(ref.data(), inp.data(), w.data(), bias, N, C, OC);
          fast::linear_forward(got.data(), inp.data(), w.data(), bias, N, C, OC);
          CHECK(max_error(got, ref) < tolerance<S>());
          // gradients are added into non-zero buffers
          auto dinp_ref = random_as<S>(N * C, 5), dw_ref = random_as<S>(OC * C, 6), db_ref = random_as<S>(OC, 7);
          auto dinp = dinp_ref, dw = dw_ref, db = db_ref;
          linear_backward(dinp_ref.data(), dw_ref.data(), with_bias ? db_ref.data() : nullptr, dout.data(), inp.data(),
                          w.data(), N, C, OC);
          fast::linear_backward(dinp.data(), dw.data(), with_bias ? db.data() : nullptr, dout.data(), inp.data(),
                                w.data(), N, C, OC);
          CHECK(max_error(dinp, dinp_ref) < tolerance<S>());
          CHECK(max_error(dw, dw_ref) < tolerance<S>());
          CHECK(max_error(db, db_ref) < tolerance<S>());
          // overwrite_dinp: garbage in dinp is replaced by the gradient alone
          std::vector<S> fresh(N * C, S(0)), over(N * C, S(1e30)), dw2(OC * C), db2(OC);
          linear_backward(fresh.data(), dw2.data(), static_cast<S*>(nullptr), dout.data(), inp.data(), w.data(), N, C,
                          OC);
          fast::linear_backward(over.data(), dw2.data(), static_cast<S*>(nullptr), dout.data(), inp.data(), w.data(), N,
                                C, OC, true);
          CHECK(max_error(over, fresh) < tolerance<S>());
        }
      }
      SECTION("layernorm") {
        const auto x = random_as<S>(N * C, 8, 3.0), w = random_as<S>(C, 9), b = random_as<S>(C, 10);
        const auto dy = random_as<S>(N * C, 11);
        std::vector<S> y_ref(N * C), y(N * C), m_ref(N), m(N), r_ref(N), r(N);
        layernorm_forward(y_ref.data(), m_ref.data(), r_ref.data(), x.data(), w.data(), b.data(), N, C);
        fast::layernorm_forward(y.data(), m.data(), r.data(), x.data(), w.data(), b.data(), N, C);
        CHECK(max_error(y, y_ref) < tolerance<S>());
        CHECK(max_error(m, m_ref) < tolerance<S>());
        CHECK(max_error(r, r_ref) < tolerance<S>());
        auto dx_ref = random_as<S>(N * C, 12), dw_ref = random_as<S>(C, 13), db_ref = random_as<S>(C, 14);
        auto dx = dx_ref, dw = dw_ref, db = db_ref;
        layernorm_backward(dx_ref.data(), dw_ref.data(), db_ref.data(), dy.data(), x.data(), w.data(), m_ref.data(),
                           r_ref.data(), N, C);
        fast::layernorm_backward(dx.data(), dw.data(), db.data(), dy.data(), x.data(), w.data(), m_ref.data(),
                                 r_ref.data(), N, C);
        CHECK(max_error(dx, dx_ref) < tolerance<S>());
        CHECK(max_error(dw, dw_ref) < tolerance<S>());
        CHECK(max_error(db, db_ref) < tolerance<S>());
      }
      SECTION("gelu") {
        const std::size_t n = 4 * 4096 + 3;  // above the serial threshold, with a tail
        const auto x = random_as<S>(n, 15, 3.0), dy = random_as<S>(n, 16);
        std::vector<S> y_ref(n), y(n);
        gelu_forward(y_ref.data(), x.data(), n);
        fast::gelu_forward(y.data(), x.data(), n);
        CHECK(max_error(y, y_ref) < tolerance<S>());
        auto dx_ref = random_as<S>(n, 17), dx = dx_ref;
        gelu_backward(dx_ref.data(), x.data(), dy.data(), n);
        fast::gelu_backward(dx.data(), x.data(), dy.data(), n);
        CHECK(max_error(dx, dx_ref) < tolerance<S>());
        std::vector<S> fresh(n, S(0)), over(n, S(-1e30));
        gelu_backward(fresh.data(), x.data(), dy.data(), n);
        fast::gelu_backward(over.data(), x.data(), dy.data(), n, true);
        CHECK(max_error(over, fresh) < tolerance<S>());
        std::vector<S> in_place = dy;  // dinp == dout, as the decoder block calls it
        fast::gelu_backward(in_place.data(), x.data(), in_place.data(), n, true);
        CHECK(max_error(in_place, fresh) < tolerance<S>());
        if constexpr (std::is_same_v<S, float>) {
          // the 4-wide path, which CPUs without AVX2 take (this one may take the 8-wide path above)
          std::vector<float> y4(n), dx4 = random_as<float>(n, 17), dx4_ref = dx4;
          fast::detail::gelu_forward_span<simd::f32x4>(y4.data(), x.data(), n);
          CHECK(max_error(y4, y_ref) < tolerance<S>());
          fast::detail::gelu_backward_span<simd::f32x4>(dx4.data(), x.data(), dy.data(), n, false);
          gelu_backward(dx4_ref.data(), x.data(), dy.data(), n);
          CHECK(max_error(dx4, dx4_ref) < tolerance<S>());
        }
      }
      SECTION("cross-entropy") {
        const std::size_t rows = 131, V = 65;
        const auto logits = random_as<S>(rows * V, 18, 4.0);
        std::vector<TokenId> targets(rows);
        for (std::size_t i = 0; i < rows; ++i) targets[i] = static_cast<TokenId>((i * 29) % V);
        std::vector<S> p_ref(rows * V), p(rows * V), scratch(max_parallel_threads() * V);
        const S loss_ref = cross_entropy_forward(p_ref.data(), logits.data(), targets.data(), rows, V);
        const S loss = fast::cross_entropy_forward(p.data(), logits.data(), targets.data(), rows, V);
        const S loss_only =
            fast::cross_entropy_forward<S>(nullptr, logits.data(), targets.data(), rows, V, scratch.data());
        CHECK(loss == Approx(loss_ref).epsilon(tolerance<S>()));
        CHECK(loss_only == loss);
        CHECK(max_error(p, p_ref) < tolerance<S>());
        auto d_ref = random_as<S>(rows * V, 19), d = d_ref;
        cross_entropy_backward(d_ref.data(), p_ref.data(), targets.data(), rows, V, S(0.7));
        fast::cross_entropy_backward(d.data(), p_ref.data(), targets.data(), rows, V, S(0.7));
        CHECK(max_error(d, d_ref) < tolerance<S>());
        targets[77] = static_cast<TokenId>(V);
        CHECK_THROWS_WITH(fast::cross_entropy_forward(p.data(), logits.data(), targets.data(), rows, V),
                          Catch::Contains("target id 65") && Catch::Contains("row 77"));
      }
    }
  }
}

namespace {

// Each query's log-normaliser log Σ_j exp(s_ij) from the rotated q and k in qkv, computed directly.
template <class S, class Hooks>
std::vector<double> direct_log_normalisers(const std::vector<S>& qkv, const Hooks& hooks, std::size_t B,
                                           std::size_t T, std::size_t C, std::size_t H, bool causal) {
  const std::size_t hd = C / H;
  std::vector<double> lse(B * H * T);
  std::vector<S> row(T);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t i = 0; i < T; ++i) {
        const std::size_t n = causal ? i + 1 : T;
        const S* q = qkv.data() + (b * T + i) * 3 * C + h * hd;
        for (std::size_t j = 0; j < n; ++j) {
          const S* k = qkv.data() + (b * T + j) * 3 * C + C + h * hd;
          S dot = 0;
          for (std::size_t d = 0; d < hd; ++d) dot += q[d] * k[d];
          row[j] = dot / std::sqrt(static_cast<S>(hd));
        }
        if constexpr (Hooks::biases_scores) hooks.add_bias(row.data(), h, i, 0, n);
        const double m = static_cast<double>(*std::max_element(row.data(), row.data() + n));
        double sum = 0;
        for (std::size_t j = 0; j < n; ++j) sum += std::exp(static_cast<double>(row[j]) - m);
        lse[(b * H + h) * T + i] = m + std::log(sum);
      }
  return lse;
}

template <class S, class Hooks>
void check_fast_attention(Hooks hooks, std::span<S> grads, std::size_t T, bool causal) {
  const std::size_t B = 2, H = 2, C = 8;
  const auto qkv = random_as<S>(B * T * 3 * C, 20);
  const auto dout = random_as<S>(B * T * C, 21);
  std::vector<S> qkv_ref = qkv, qkv_fast = qkv, qkv_kept = qkv;
  std::vector<S> out_ref(B * T * C), out(B * T * C, S(-7)), att_ref(B * H * T * T), lse(B * H * T, S(-7));
  attention_forward(out_ref.data(), att_ref.data(), qkv_ref.data(), B, T, C, H, hooks, causal);
  fast::attention_forward(out.data(), lse.data(), static_cast<S*>(nullptr), qkv_fast.data(), B, T, C, H, hooks,
                          causal);
  CHECK(max_error(out, out_ref) < tolerance<S>());
  CHECK(max_error(qkv_fast, qkv_ref) < tolerance<S>());  // q and k rotated in place alike
  // keeping the probabilities: the same output, and the reference's softmax at and below the diagonal
  std::vector<S> out_kept(B * T * C), lse_kept(B * H * T), att(B * H * T * T, S(-7));
  fast::attention_forward(out_kept.data(), lse_kept.data(), att.data(), qkv_kept.data(), B, T, C, H, hooks, causal);
  CHECK(max_error(out_kept, out_ref) < tolerance<S>());
  CHECK(max_error(lse_kept, lse) < tolerance<S>());
  double att_err = 0;
  for (std::size_t bh = 0; bh < B * H; ++bh)
    for (std::size_t i = 0; i < T; ++i)
      for (std::size_t j = 0; j < (causal ? i + 1 : T); ++j)
        att_err =
            std::max(att_err, std::abs(static_cast<double>(att[(bh * T + i) * T + j] - att_ref[(bh * T + i) * T + j])));
  CHECK(att_err < tolerance<S>());
  const std::vector<double> lse_direct = direct_log_normalisers(qkv_ref, hooks, B, T, C, H, causal);
  double lse_err = 0;
  for (std::size_t e = 0; e < lse.size(); ++e)
    lse_err = std::max(lse_err, std::abs(static_cast<double>(lse[e]) - lse_direct[e]));
  CHECK(lse_err < tolerance<S>());
  // without a backward to follow no log-normaliser is kept, and the output is the same
  std::vector<S> qkv_again = qkv, out_alone(B * T * C);
  fast::attention_forward(out_alone.data(), static_cast<S*>(nullptr), static_cast<S*>(nullptr), qkv_again.data(), B, T,
                          C, H, hooks, causal);
  CHECK(out_alone == out);
  if (causal) {
    // the last query of sequence 0 against its keys and values held in a ring that wraps (the
    // oldest in slot 3): both step kernels give that row of the full forward
    const CacheWindow window{3 % T, T, T};
    std::vector<S> keys(T * C), values(T * C), scores(T), step_ref(C), step(C);
    const std::size_t hd = C / H;
    for (std::size_t j = 0; j < T; ++j)
      for (std::size_t h = 0; h < H; ++h) {
        const auto k = qkv_ref.begin() + static_cast<std::ptrdiff_t>(j * 3 * C + C + h * hd);
        std::copy_n(k, hd, keys.begin() + (h * T + window.slot(j)) * hd);
        std::copy_n(k + C, hd, values.begin() + (h * T + window.slot(j)) * hd);
      }
    const S* q = qkv_ref.data() + (T - 1) * 3 * C;
    attention_step_forward(step_ref.data(), scores.data(), q, keys.data(), values.data(), window, C, H, hooks);
    fast::attention_step_forward(step.data(), scores.data(), q, keys.data(), values.data(), window, C, H, hooks);
    const std::vector<S> last_row(out_ref.begin() + static_cast<std::ptrdiff_t>((T - 1) * C),
                                  out_ref.begin() + static_cast<std::ptrdiff_t>(T * C));
    CHECK(max_error(step_ref, last_row) < tolerance<S>());
    CHECK(max_error(step, last_row) < tolerance<S>());
  }
  // backward adds into a non-zero dqkv, and into the bias parameters' gradients (in `grads`)
  const auto dqkv_start = random_as<S>(qkv.size(), 22);
  auto dqkv_ref = dqkv_start;
  const std::vector<S> grads_before(grads.begin(), grads.end());
  attention_backward(dqkv_ref.data(), dout.data(), qkv_ref.data(), att_ref.data(), B, T, C, H,
                     hooks, causal);
  const std::vector<S> grads_ref(grads.begin(), grads.end());
  std::vector<S> fresh(qkv.size(), S(0));
  attention_backward(fresh.data(), dout.data(), qkv_ref.data(), att_ref.data(), B, T, C, H, hooks,
                     causal);
  // from the log-normalisers (each tile's probabilities recomputed), and from the kept probabilities
  for (const bool kept : {false, true}) {
    INFO("probabilities kept: " << kept);
    const S* probabilities = kept ? att.data() : nullptr;
    std::vector<S> scratch(fast::attention_scratch_size<Hooks, S>(T, C, H, max_parallel_threads(), kept));
    auto dqkv = dqkv_start;
    std::copy(grads_before.begin(), grads_before.end(), grads.begin());
    fast::attention_backward(dqkv.data(), scratch.data(), dout.data(), qkv_fast.data(), out.data(), lse.data(),
                             probabilities, B, T, C, H, hooks, causal);
    CHECK(max_error(dqkv, dqkv_ref) < tolerance<S>());
    CHECK(max_error(std::vector<S>(grads.begin(), grads.end()), grads_ref) < tolerance<S>());
    if constexpr (Hooks::has_bias_parameters) CHECK(max_error(grads_ref, grads_before) > 0.01);  // they were reached
    // overwrite: garbage in dqkv is replaced by the gradient alone
    std::vector<S> over(qkv.size(), S(1e30));
    fast::attention_backward(over.data(), scratch.data(), dout.data(), qkv_fast.data(), out.data(), lse.data(),
                             probabilities, B, T, C, H, hooks, causal, true);
    CHECK(max_error(over, fresh) < tolerance<S>());
  }
}

// check_fast_attention for every policy of the registry: their hooks bound to one store whose
// parameters are moved off their start (so no bias is uniform) and whose gradients start non-zero.
template <class S>
void check_fast_attention_every_policy(std::size_t T, bool causal) {
  posenc_test::for_each_policy_attention<S>(T, [&](const std::string&, auto hooks, std::span<S> grads) {
    check_fast_attention<S>(hooks, grads, T, causal);
  });
}

}  // namespace

TEST_CASE("with attention dropout, the tiles and the kept probabilities drop the same entries") {
  // T spans two key tiles, so the tiles' masks start at key 256; ALiBi biases the scores and RoPE
  // turns q and k, the two ways a policy enters attention
  const std::size_t B = 2, H = 2, C = 8, T = fast::attention_key_block + 70;
  const auto qkv = random_as<double>(B * T * 3 * C, 40);
  const auto dout = random_as<double>(B * T * C, 41);
  const fast::AttentionDropout dropout{DropoutMask{.key = 9, .p = 0.3}, 5};
  auto table = std::make_shared<ParameterTable>();
  ALiBi::Attention<double, H, C / H> alibi(*table, "", T);
  RoPE::Attention<double, H, C / H> rope(*table, "", T);
  ParameterStore<double> store(table);
  const auto check = [&](auto hooks) {
    std::vector<double> out_kept(B * T * C), out_tiled(B * T * C), lse(B * H * T), att(B * H * T * T);
    std::vector<double> qkv_kept = qkv, qkv_tiled = qkv;
    fast::attention_forward(out_kept.data(), lse.data(), att.data(), qkv_kept.data(), B, T, C, H, hooks, true,
                            dropout);
    fast::attention_forward(out_tiled.data(), lse.data(), static_cast<double*>(nullptr), qkv_tiled.data(), B, T, C,
                            H, hooks, true, dropout);
    CHECK(max_error(out_tiled, out_kept) < 1e-12);
    std::vector<double> none(B * T * C), qkv_none = qkv;  // and the mask drops something
    fast::attention_forward(none.data(), static_cast<double*>(nullptr), static_cast<double*>(nullptr),
                            qkv_none.data(), B, T, C, H, hooks, true);
    CHECK(max_error(none, out_kept) > 0.01);
    std::vector<double> d_kept(qkv.size()), d_tiled(qkv.size());
    using Hooks = decltype(hooks);
    std::vector<double> scratch(fast::attention_scratch_size<Hooks, double>(T, C, H, max_parallel_threads(), true));
    fast::attention_backward(d_kept.data(), scratch.data(), dout.data(), qkv_kept.data(), out_kept.data(), lse.data(),
                             att.data(), B, T, C, H, hooks, true, true, dropout);
    fast::attention_backward(d_tiled.data(), scratch.data(), dout.data(), qkv_tiled.data(), out_tiled.data(),
                             lse.data(), static_cast<const double*>(nullptr), B, T, C, H, hooks, true, true, dropout);
    CHECK(max_error(d_tiled, d_kept) < 1e-12);
  };
  check(alibi.bind(store, T));
  check(rope.bind(store, T));
}

TEMPLATE_TEST_CASE("fast attention matches the reference kernel for every kind of hook", "", float, double) {
  ThreadCounts restore;
  // T = 5 is inside one tile; the next spans three query blocks and one key tile; the longest two
  // key tiles, the last ones partial, so a query's running maximum moves between tiles. FIRE's
  // threshold (a quarter of T) puts queries on both of its sides.
  for (std::size_t T : {std::size_t{5}, 2 * fast::attention_block + 6, fast::attention_key_block + 70})
    for (bool causal : {true, false})
      for (int threads : {1, 3}) {
        set_num_threads(threads);
        DYNAMIC_SECTION("T " << T << ", causal " << causal << ", threads " << threads) {
          check_fast_attention_every_policy<TestType>(T, causal);
        }
      }
}

TEST_CASE("the thread count follows set_num_threads and rejects nonsense") {
  ThreadCounts restore;
  set_num_threads(3);
  CHECK(num_threads() == 3);
  CHECK(max_parallel_threads() == 3);
  set_num_threads(1);
  CHECK(max_parallel_threads() == 1);
  CHECK_THROWS_WITH(set_num_threads(0), Catch::Contains("at least 1"));
}

TEST_CASE("the default thread count is the number of cores the process may run on") {
  CHECK(available_cores() >= 1);
#if defined(__linux__)
  // A thread bound to one core (as taskset or mpirun's --bind-to core would bind the process)
  // sees one core.
  int seen = 0;
  std::thread bound([&] {
    cpu_set_t allowed, one;
    REQUIRE(sched_getaffinity(0, sizeof allowed, &allowed) == 0);
    int first = 0;
    while (!CPU_ISSET(first, &allowed)) ++first;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    REQUIRE(sched_setaffinity(0, sizeof one, &one) == 0);
    seen = available_cores();
  });
  bound.join();
  CHECK(seen == 1);
#endif
}

TEST_CASE("the adaptive thread count takes the free cores, a core more than half busy counting as taken") {
  CHECK(threads_for_free_cores(2.0, 2) == 2);
  CHECK(threads_for_free_cores(1.6, 2) == 2);
  CHECK(threads_for_free_cores(1.4, 2) == 1);  // another process 60% on one of two cores
  CHECK(threads_for_free_cores(1.0, 2) == 1);
  CHECK(threads_for_free_cores(0.2, 2) == 1);  // never fewer than one
  CHECK(threads_for_free_cores(7.9, 4) == 4);  // never more than the ceiling
  CHECK(threads_for_free_cores(-3.0, 4) == 1);
}

TEST_CASE("/proc/stat's busy time is summed over the CPUs this process may use") {
  const std::string stat =
      "cpu  900 0 300 5000 20 0 10 0 0 0\n"
      "cpu0 100 5 50 2000 10 1 2 3 0 0\n"
      "cpu1 800 0 250 3000 10 0 8 0 0 0\n"
      "cpu10 7 0 0 0 0 0 0 0 0 0\n"
      "intr 12345 0 0\n";
  CHECK(detail::busy_ticks(stat, {0}) == Approx(100 + 5 + 50 + 1 + 2 + 3));  // idle and iowait excluded
  CHECK(detail::busy_ticks(stat, {0, 1}) == Approx(161 + 1058));
  CHECK(detail::busy_ticks(stat, {10}) == Approx(7));                        // cpu10 is not cpu1
  CHECK_FALSE(detail::busy_ticks(stat, {2}).has_value());                    // a CPU that is not listed
  CHECK_FALSE(detail::busy_ticks("cpu0 1 2 3\n", {0}).has_value());         // too few fields
}

TEST_CASE("a fixed thread count is never adapted, and POSENC_NUM_THREADS fixes an adaptive one") {
  ThreadCounts restore;
  set_num_threads(2);
  CHECK_FALSE(adaptive_thread_ceiling().has_value());
  CHECK_FALSE(adapt_num_threads(std::chrono::milliseconds(0)));
  CHECK(num_threads() == 2);
  // the test runner sets POSENC_NUM_THREADS=1 (tests/CMakeLists.txt)
  if (const char* env = std::getenv(threads_env_var); env != nullptr && std::string(env) == "1") {
    set_adaptive_num_threads(3);
    CHECK(num_threads() == 1);
    CHECK_FALSE(adaptive_thread_ceiling().has_value());
  }
}

#if defined(__linux__)
TEST_CASE("the adaptive thread count drops while another process keeps a core busy") {
  const int cores = available_cores();
  if (cores < 2) return;  // one core: nothing to adapt
  ThreadCounts restore;
  struct RestoreEnvironment {
    std::optional<std::string> saved;
    RestoreEnvironment() {
      if (const char* env = std::getenv(threads_env_var)) saved = env;
      unsetenv(threads_env_var);
    }
    ~RestoreEnvironment() {
      if (saved) setenv(threads_env_var, saved->c_str(), 1);
    }
  } environment;
  set_adaptive_num_threads(cores);
  REQUIRE(adaptive_thread_ceiling() == cores);
  REQUIRE(num_threads() == cores);
  const pid_t busy = fork();
  REQUIRE(busy >= 0);
  if (busy == 0) {  // the neighbour: spins for at most 5 s
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < end) {
    }
    _exit(0);
  }
  adapt_num_threads(std::chrono::milliseconds(0));  // the first sample
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  const bool measured = adapt_num_threads(std::chrono::milliseconds(0));
  kill(busy, SIGKILL);
  waitpid(busy, nullptr, 0);
  CHECK(measured);
  // at least the neighbour's core is taken (ctest may run another test on a second one)
  CHECK(num_threads() <= cores - 1);
  CHECK(num_threads() >= 1);
}
#endif

TEST_CASE("kernels called from another std::thread use posenc's thread count, not OpenMP's default") {
  // study --jobs N runs models in N std::threads; OpenMP gives each new thread its default team
  // size (every core), so the count must come from posenc's process-wide setting.
  ThreadCounts restore;
  set_num_threads(1);
  std::size_t seen_max = 0, seen_team = 0;
  std::thread worker([&] {
    seen_max = max_parallel_threads();
    parallel_for_chunks(1000, [&](std::size_t, std::size_t) { seen_team = parallel_team_size(); });
  });
  worker.join();
  CHECK(seen_max == 1);
  CHECK(seen_team == 1);
}

TEST_CASE("a training step gives the same loss on one thread and on several") {
  ThreadCounts restore;
  std::vector<float> losses;
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    CharTransformer<RoPE, 2, 16, 2> model(11, 40);
    auto optimizer = AdamW(model);
    Tokens x({3, 40}), y({3, 40});
    for (std::size_t i = 0; i < x.size(); ++i) {
      x.data()[i] = static_cast<TokenId>((i * 7) % 11);
      y.data()[i] = static_cast<TokenId>((i * 5 + 1) % 11);
    }
    float loss = 0;
    for (int s = 0; s < 3; ++s) loss = train_step(model, x, y, optimizer);
    losses.push_back(loss);
  }
  CHECK(losses[0] == Approx(losses[1]).epsilon(1e-5));
}

TEST_CASE("a batch processed in chunks gives the whole batch's loss and gradients") {
  const std::size_t B = 5, T = 6, V = 7;
  Tokens x({B, T}), y({B, T});
  for (std::size_t i = 0; i < x.size(); ++i) {
    x.data()[i] = static_cast<TokenId>((i * 3) % V);
    y.data()[i] = static_cast<TokenId>((i * 5 + 2) % V);
  }
  using Model = CharTransformer<ALiBi, 2, 8, 2, double>;
  Model whole(ModelConfig{.vocab_size = V, .context = T, .chunk = 0});
  whole.zero_grad();
  const double loss = whole.loss(x, y);
  whole.backward();
  for (std::size_t chunk : {std::size_t{1}, std::size_t{2}, std::size_t{4}}) {
    DYNAMIC_SECTION("chunk " << chunk) {
      Model chunked(ModelConfig{.vocab_size = V, .context = T, .chunk = chunk});
      chunked.zero_grad();
      CHECK(chunked.loss(x, y) == Approx(loss).epsilon(1e-13));
      chunked.backward();  // recomputes every chunk
      const auto& g = chunked.gradients();
      const auto& ref = whole.gradients();
      double err = 0, scale = 0;
      for (std::size_t i = 0; i < g.size(); ++i) {
        err = std::max(err, std::abs(g.data()[i] - ref.data()[i]));
        scale = std::max(scale, std::abs(ref.data()[i]));
      }
      CHECK(scale > 0);
      CHECK(err <= 1e-12 * scale);
      // train_step runs each chunk's forward and backward together: the same step
      Model a(ModelConfig{.vocab_size = V, .context = T, .chunk = chunk});
      Model b(ModelConfig{.vocab_size = V, .context = T, .chunk = 0});
      auto oa = AdamW(a), ob = AdamW(b);
      CHECK(train_step(a, x, y, oa) == Approx(train_step(b, x, y, ob)).epsilon(1e-13));
      CHECK(train_step(a, x, y, oa) == Approx(train_step(b, x, y, ob)).epsilon(1e-12));
      // logits of forward() cover the whole batch
      const auto la = a.forward(x);
      const auto lb = b.forward(x);
      for (std::size_t bb = 0; bb < B; ++bb)
        for (std::size_t v = 0; v < V; ++v) REQUIRE(la(bb, T - 1, v) == Approx(lb(bb, T - 1, v)).epsilon(1e-12));
    }
  }
}
