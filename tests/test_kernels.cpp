// Tests of kernels/: each forward against a direct computation, each backward against finite differences.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

#include <posenc/transformer.hpp>

#include "gradient_check.hpp"

using namespace posenc;
using posenc_test::dot;
using posenc_test::gradient_relative_error;
using posenc_test::gradient_tolerance;
using posenc_test::random_vector;
using Vec = std::vector<double>;

TEST_CASE("linear_forward matches a direct sum and linear_backward matches finite differences") {
  const std::size_t N = 5, C = 4, OC = 3;
  Vec inp = random_vector(N * C, 1), w = random_vector(OC * C, 2), b = random_vector(OC, 3);
  const Vec up = random_vector(N * OC, 4);
  Vec out(N * OC);
  linear_forward(out.data(), inp.data(), w.data(), b.data(), N, C, OC);
  for (std::size_t n = 0; n < N; ++n)
    for (std::size_t o = 0; o < OC; ++o) {
      double expected = b[o];
      for (std::size_t c = 0; c < C; ++c) expected += inp[n * C + c] * w[o * C + c];
      REQUIRE(out[n * OC + o] == Approx(expected).epsilon(1e-13));
    }
  Vec dinp(N * C, 0), dw(OC * C, 0), db(OC, 0);
  linear_backward(dinp.data(), dw.data(), db.data(), up.data(), inp.data(), w.data(), N, C, OC);
  auto f = [&] {
    linear_forward(out.data(), inp.data(), w.data(), b.data(), N, C, OC);
    return dot(out, up);
  };
  CHECK(gradient_relative_error(inp, dinp, f) < gradient_tolerance);
  CHECK(gradient_relative_error(w, dw, f) < gradient_tolerance);
  CHECK(gradient_relative_error(b, db, f) < gradient_tolerance);

  SECTION("backward adds into the gradients it is given") {
    Vec dinp2 = dinp, dw2 = dw, db2 = db;
    linear_backward(dinp2.data(), dw2.data(), db2.data(), up.data(), inp.data(), w.data(), N, C, OC);
    for (std::size_t i = 0; i < dw.size(); ++i) REQUIRE(dw2[i] == Approx(2 * dw[i]));
    for (std::size_t i = 0; i < dinp.size(); ++i) REQUIRE(dinp2[i] == Approx(2 * dinp[i]));
    for (std::size_t i = 0; i < db.size(); ++i) REQUIRE(db2[i] == Approx(2 * db[i]));
  }
}

TEST_CASE("layernorm_forward normalises each row and layernorm_backward matches finite differences") {
  const std::size_t N = 4, C = 6;
  Vec inp = random_vector(N * C, 5, 2.0), w = random_vector(C, 6), b = random_vector(C, 7);
  for (double& x : w) x += 1.0;
  const Vec up = random_vector(N * C, 8);
  Vec out(N * C), mean(N), rstd(N);
  Vec ones(C, 1.0), zeros(C, 0.0);
  layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), ones.data(), zeros.data(), N, C);
  for (std::size_t n = 0; n < N; ++n) {
    double m = 0, v = 0;
    for (std::size_t c = 0; c < C; ++c) m += out[n * C + c] / C;
    for (std::size_t c = 0; c < C; ++c) v += (out[n * C + c] - m) * (out[n * C + c] - m) / C;
    CHECK(m == Approx(0).margin(1e-12));
    CHECK(v == Approx(1).epsilon(1e-4));  // eps = 1e-5 in the denominator keeps it just below 1
  }
  Vec dinp(N * C, 0), dw(C, 0), db(C, 0);
  layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), w.data(), b.data(), N, C);
  layernorm_backward(dinp.data(), dw.data(), db.data(), up.data(), inp.data(), w.data(), mean.data(),
                     rstd.data(), N, C);
  auto f = [&] {
    layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), w.data(), b.data(), N, C);
    return dot(out, up);
  };
  CHECK(gradient_relative_error(inp, dinp, f) < gradient_tolerance);
  CHECK(gradient_relative_error(w, dw, f) < gradient_tolerance);
  CHECK(gradient_relative_error(b, db, f) < gradient_tolerance);
}

TEST_CASE("gelu_forward is the tanh approximation and gelu_backward matches finite differences") {
  // PyTorch: torch.nn.functional.gelu(torch.tensor([1.0, -0.5], dtype=torch.float64), approximate="tanh")
  Vec x = {1.0, -0.5};
  Vec y(2);
  gelu_forward(y.data(), x.data(), 2);
  CHECK(y[0] == Approx(0.8411919906082768).epsilon(1e-14));
  CHECK(y[1] == Approx(-0.15428599017485606).epsilon(1e-14));

  const std::size_t N = 12;
  Vec inp = random_vector(N, 9, 2.0);
  const Vec up = random_vector(N, 10);
  Vec out(N), dinp(N, 0);
  gelu_backward(dinp.data(), inp.data(), up.data(), N);
  auto f = [&] {
    gelu_forward(out.data(), inp.data(), N);
    return dot(out, up);
  };
  CHECK(gradient_relative_error(inp, dinp, f) < gradient_tolerance);
}

TEST_CASE("embedding_forward looks up tokens and positions, and embedding_backward matches finite differences") {
  const std::size_t B = 2, T = 3, C = 4, V = 5;
  const std::vector<TokenId> tokens = {4, 0, 4, 1, 2, 3};
  Vec wte = random_vector(V * C, 11), wpe = random_vector(T * C, 12);
  const Vec up = random_vector(B * T * C, 13);
  Vec out(B * T * C);
  embedding_forward(out.data(), tokens.data(), wte.data(), wpe.data(), B, T, C, V);
  CHECK(out[(1 * T + 2) * C + 1] == wte[3 * C + 1] + wpe[2 * C + 1]);
  Vec dwte(V * C, 0), dwpe(T * C, 0);
  embedding_backward(dwte.data(), dwpe.data(), up.data(), tokens.data(), B, T, C);
  auto f = [&] {
    embedding_forward(out.data(), tokens.data(), wte.data(), wpe.data(), B, T, C, V);
    return dot(out, up);
  };
  CHECK(gradient_relative_error(wte, dwte, f) < gradient_tolerance);
  CHECK(gradient_relative_error(wpe, dwpe, f) < gradient_tolerance);

  const std::vector<TokenId> bad = {0, 1, 5, 0, 0, 0};
  CHECK_THROWS_WITH(embedding_forward(out.data(), bad.data(), wte.data(), wpe.data(), B, T, C, V),
                    Catch::Contains("token id 5") && Catch::Contains("vocabulary [0, 5)"));
}

TEST_CASE("cross_entropy_forward is the mean negative log-likelihood, and its backward matches finite differences") {
  const std::size_t N = 4, V = 5;
  Vec logits = random_vector(N * V, 14, 3.0);
  const std::vector<TokenId> targets = {0, 4, 2, 2};
  Vec probs(N * V);
  const double loss = cross_entropy_forward(probs.data(), logits.data(), targets.data(), N, V);
  double expected = 0;
  for (std::size_t n = 0; n < N; ++n) {
    double z = 0;
    for (std::size_t v = 0; v < V; ++v) z += std::exp(logits[n * V + v]);
    expected += (std::log(z) - logits[n * V + targets[n]]) / N;
  }
  CHECK(loss == Approx(expected).epsilon(1e-13));

  const double dloss = 0.7;  // a non-unit upstream gradient
  Vec dlogits(N * V, 0);
  cross_entropy_backward(dlogits.data(), probs.data(), targets.data(), N, V, dloss);
  auto f = [&] { return dloss * cross_entropy_forward(probs.data(), logits.data(), targets.data(), N, V); };
  CHECK(gradient_relative_error(logits, dlogits, f) < gradient_tolerance);

  const std::vector<TokenId> bad = {0, 9, 0, 0};
  CHECK_THROWS_WITH(cross_entropy_forward(probs.data(), logits.data(), bad.data(), N, V),
                    Catch::Contains("target id 9"));
}

TEST_CASE("cross-entropy with a target mask averages over the scored rows only, and its backward matches finite "
          "differences") {
  const std::size_t N = 5, V = 4;
  Vec logits = random_vector(N * V, 15, 3.0);
  // an unscored row's target may be anything: it is never read
  const std::vector<TokenId> targets = {1, 99, 3, 0, -4};
  const std::vector<std::uint8_t> mask = {1, 0, 1, 1, 0};
  Vec probs(N * V);
  const double loss = cross_entropy_forward(probs.data(), logits.data(), targets.data(), N, V, mask.data());
  double expected = 0;
  for (const std::size_t n : {0, 2, 3}) {
    double z = 0;
    for (std::size_t v = 0; v < V; ++v) z += std::exp(logits[n * V + v]);
    expected += (std::log(z) - logits[n * V + static_cast<std::size_t>(targets[n])]) / 3;
  }
  CHECK(loss == Approx(expected).epsilon(1e-13));
  CHECK(fast::cross_entropy_forward(probs.data(), logits.data(), targets.data(), N, V, static_cast<double*>(nullptr),
                                    mask.data()) == Approx(expected).epsilon(1e-13));

  const double dloss = 0.7;
  for (const bool fast_kernel : {false, true}) {
    Vec dlogits(N * V, 0);
    if (fast_kernel)
      fast::cross_entropy_backward(dlogits.data(), probs.data(), targets.data(), N, V, dloss, mask.data());
    else cross_entropy_backward(dlogits.data(), probs.data(), targets.data(), N, V, dloss, mask.data());
    auto f = [&] {
      Vec p(N * V);
      return dloss * cross_entropy_forward(p.data(), logits.data(), targets.data(), N, V, mask.data());
    };
    CHECK(gradient_relative_error(logits, dlogits, f) < gradient_tolerance);
    for (std::size_t v = 0; v < V; ++v) CHECK(dlogits[1 * V + v] == 0);  // the unscored rows get nothing
  }
  const std::vector<std::uint8_t> none(N, 0);
  CHECK(cross_entropy_forward(probs.data(), logits.data(), targets.data(), N, V, none.data()) == 0);
}

namespace {

// Attention written out element by element: the reference the kernel must reproduce.
template <class Hooks>
Vec naive_attention(Vec qkv, std::size_t B, std::size_t T, std::size_t C, std::size_t H,
                    const Hooks& hooks, bool causal) {
  const std::size_t hd = C / H;
  Vec out(B * T * C, 0.0);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t i = 0; i < T; ++i) {
        Vec q(qkv.begin() + (b * T + i) * 3 * C + h * hd,
              qkv.begin() + (b * T + i) * 3 * C + h * hd + hd);
        if constexpr (Hooks::rotates_qk) hooks.rotate(q.data(), i);
        const std::size_t keys = causal ? i + 1 : T;
        Vec s(keys);
        for (std::size_t j = 0; j < keys; ++j) {
          Vec k(qkv.begin() + (b * T + j) * 3 * C + C + h * hd,
                qkv.begin() + (b * T + j) * 3 * C + C + h * hd + hd);
          if constexpr (Hooks::rotates_qk) rotate_key(hooks, k.data(), j);
          s[j] = dot(q, k) / std::sqrt(static_cast<double>(hd));
        }
        if constexpr (Hooks::biases_scores) hooks.add_bias(s.data(), h, i, 0, keys);
        double z = 0;
        for (double v : s) z += std::exp(v);
        for (std::size_t j = 0; j < keys; ++j)
          for (std::size_t d = 0; d < hd; ++d)
            out[(b * T + i) * C + h * hd + d] +=
                std::exp(s[j]) / z * qkv[(b * T + j) * 3 * C + 2 * C + h * hd + d];
      }
  return out;
}

template <class Hooks>
void check_attention(const Hooks& hooks_in, bool causal) {
  Hooks hooks = hooks_in;
  const std::size_t B = 2, T = 5, C = 8, H = 2;
  Vec qkv = random_vector(B * T * 3 * C, 15);
  const Vec up = random_vector(B * T * C, 16);
  Vec out(B * T * C), att(B * H * T * T);
  Vec work = qkv;
  attention_forward(out.data(), att.data(), work.data(), B, T, C, H, hooks, causal);
  const Vec expected = naive_attention(qkv, B, T, C, H, hooks, causal);
  for (std::size_t i = 0; i < out.size(); ++i) REQUIRE(out[i] == Approx(expected[i]).epsilon(1e-12));

  Vec dqkv(qkv.size(), 0);
  attention_backward(dqkv.data(), up.data(), work.data(), att.data(), B, T, C, H,
                     hooks, causal);
  auto f = [&] {
    Vec fresh = qkv;  // forward rotates q and k in place
    attention_forward(out.data(), att.data(), fresh.data(), B, T, C, H, hooks, causal);
    return dot(out, up);
  };
  CHECK(gradient_relative_error(qkv, dqkv, f) < gradient_tolerance);
}

}  // namespace

TEMPLATE_LIST_TEST_CASE("attention with each policy's hooks matches the element-wise definition, and its backward "
                        "matches finite differences", "", AllPolicies) {
  auto table = std::make_shared<ParameterTable>();
  typename TestType::template Attention<double, 2, 4> position(*table, "", 8);
  ParameterStore<double> store(table);
  store.initialize(3);  // trainable biases start away from zero, so they shape the scores
  for (bool causal : {true, false})
    DYNAMIC_SECTION("causal " << causal) { check_attention(position.bind(store, 5), causal); }
}

TEST_CASE("attention_backward adds into dqkv, also when the hooks rotate") {
  ParameterTable table;
  ParameterStore<double> store(std::make_shared<ParameterTable>());
  RoPE::Attention<double, 2, 4> rope(table, "", 8);
  auto hooks = rope.bind(store, 4);
  const std::size_t B = 1, T = 4, C = 8, H = 2;
  Vec qkv = random_vector(B * T * 3 * C, 17), up = random_vector(B * T * C, 18);
  Vec out(B * T * C), att(B * H * T * T);
  attention_forward(out.data(), att.data(), qkv.data(), B, T, C, H, hooks);
  Vec once(qkv.size(), 0);
  attention_backward(once.data(), up.data(), qkv.data(), att.data(), B, T, C, H, hooks);
  Vec twice = once;
  attention_backward(twice.data(), up.data(), qkv.data(), att.data(), B, T, C, H, hooks);
  for (std::size_t i = 0; i < once.size(); ++i) REQUIRE(twice[i] == Approx(2 * once[i]));
}

namespace {
// Three adamw_update steps on params (1.0, -0.5) with gradients (0.1, -0.2), (0.3, 0.05), (-0.4, 0.25)
// against torch.optim.AdamW 1.13 in float64 (torch.optim.AdamW([p], lr=…, betas=…, eps=…,
// weight_decay=…), p.grad set by hand, step()): the parameters after each step, then exp_avg and
// exp_avg_sq after the third.
void check_adamw_against_torch(const AdamWConfig& cfg, const Vec (&expected)[3], const Vec& exp_avg,
                               const Vec& exp_avg_sq) {
  Vec p = {1.0, -0.5}, m = {0, 0}, v = {0, 0};
  const Vec grads[3] = {{0.1, -0.2}, {0.3, 0.05}, {-0.4, 0.25}};
  for (int step = 0; step < 3; ++step) {
    adamw_update(p.data(), grads[step].data(), m.data(), v.data(), 2, step + 1, cfg);
    for (std::size_t i = 0; i < 2; ++i) CHECK(p[i] == Approx(expected[step][i]).epsilon(1e-13));
  }
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(m[i] == Approx(exp_avg[i]).epsilon(1e-13));
    CHECK(v[i] == Approx(exp_avg_sq[i]).epsilon(1e-13));
  }
}
}  // namespace

TEST_CASE("adamw_update follows torch.optim.AdamW step by step") {
  // lr 0.1, betas (0.9, 0.999), eps 1e-8, weight decay 0.01.
  // Step 1 by hand for the first parameter: p = 1·(1 − 0.1·0.01) = 0.999; m = 0.01, v = 1e-5;
  // m̂ = 0.01/0.1 = 0.1, √v̂ = √(1e-5/0.001) = 0.1; p = 0.999 − 0.1·0.1/(0.1 + 1e-8) = 0.89900001.
  const Vec expected[3] = {{0.8990000099999991, -0.39950000499999977},
                           {0.80632290219559, -0.35215369109544686},
                           {0.8116566790266863, -0.3780317446053405}};
  CHECK(1.0 * (1 - 0.1 * 0.01) - 0.1 * 0.1 / (0.1 + 1e-8) == Approx(expected[0][0]).epsilon(1e-15));
  check_adamw_against_torch({.lr = 0.1, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.01}, expected,
                            {-0.004900000000000001, 0.013299999999999994},
                            {0.00025989001000000027, 0.00010491754000000009});
}

TEST_CASE("adamw_update follows torch.optim.AdamW with other betas, epsilon and weight decay") {
  // lr 0.05, betas (0.8, 0.95), eps 1e-6, weight decay 0.1 (nanoGPT's betas are (0.9, 0.95)).
  // Step 1 by hand for the first parameter: p = 1·(1 − 0.05·0.1) = 0.995; m = 0.2·0.1 = 0.02,
  // v = 0.05·0.01 = 5e-4; m̂ = 0.1, √v̂ = 0.1; p = 0.995 − 0.05·0.1/(0.1 + 1e-6).
  const Vec expected[3] = {{0.945000499995, -0.44750024999875},
                           {0.8935466641277772, -0.4240607421688108},
                           {0.8956645643480798, -0.4395845087739627}};
  CHECK(0.995 - 0.05 * 0.1 / (0.1 + 1e-6) == Approx(expected[0][0]).epsilon(1e-15));
  check_adamw_against_torch({.lr = 0.05, .beta1 = 0.8, .beta2 = 0.95, .eps = 1e-6, .weight_decay = 0.1}, expected,
                            {-0.019199999999999995, 0.03239999999999999},
                            {0.012726250000000012, 0.005048750000000005});
}

TEST_CASE("dropout on floats (the AVX2 path where the CPU has it) drops exactly the elements keeps() names") {
  const DropoutMask mask{.key = 11, .p = 0.3};
  for (const std::uint64_t first : {0, 1, 3, 5, 17, 1000003})
    for (const std::size_t n : {0, 1, 15, 16, 17, 33, 100, 1000}) {
      std::vector<float> from(n), to(n);
      for (std::size_t i = 0; i < n; ++i) from[i] = 0.5f + static_cast<float>(i);
      mask.apply(to.data(), from.data(), n, first);
      for (std::size_t i = 0; i < n; ++i)
        REQUIRE(to[i] == (mask.keeps(first + i) ? from[i] * mask.scale<float>() : 0.0f));
    }
  // x·m/(1 − p), as PyTorch: a non-finite element stays non-finite, dropped or kept, on either path
  for (const std::size_t n : {std::size_t{3}, std::size_t{64}}) {
    std::vector<float> x(n, std::numeric_limits<float>::infinity());
    mask.apply(x.data(), x.data(), n);
    for (float v : x) CHECK_FALSE(std::isfinite(v));
  }
}
