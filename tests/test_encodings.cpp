// Tests of encodings/: each policy's defining formula, and the PositionalEncoding concept.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <posenc/transformer.hpp>

#include "gradient_check.hpp"

using namespace posenc;
using posenc_test::dot;
using posenc_test::random_vector;

static_assert(!PositionalEncoding<int>);
static_assert(!PositionalEncoding<CharTokenizer>);

namespace {
// A policy whose attention exists only for head dimensions divisible by 8: the contract is checked
// at the shape a model uses, so the policy is usable there and nowhere else.
struct EightWideBias {
  static constexpr std::string_view name = "eight-wide";
  static constexpr std::string_view summary = "a test policy for head dimensions divisible by 8";
  template <std::floating_point S, std::size_t Dim>
  using Embedding = NoPositionSignal<S, Dim>;
  template <std::floating_point S, std::size_t Heads, std::size_t HeadDim>
  struct Attention {
    static_assert(HeadDim % 8 == 0, "EightWideBias needs a head dimension divisible by 8");
    Attention(ParameterTable&, std::string_view, std::size_t) {}
    struct Hooks : FixedBiasHooks {
      void add_bias(S* row, std::size_t, std::size_t query, std::size_t first_key, std::size_t keys) const {
        for (std::size_t j = 0; j < keys; ++j) row[j] -= static_cast<S>(relative_distance(query, first_key + j));
      }
    };
    Hooks bind(ParameterStore<S>&, std::size_t) { return {}; }
  };
};
static_assert(PositionalEncoding<EightWideBias>);
static_assert(PositionalEncodingFor<EightWideBias, float, 16, 2>);
}  // namespace

TEST_CASE("the contract is checked at the shape a model uses, not at one fixed shape") {
  CharTransformer<EightWideBias, 1, 16, 2> model(5, 4);  // head dimension 8
  const Tokens x = {{0, 1, 2, 3}};
  const Tensor<float, 3> logits = model.forward(x);
  CHECK(std::isfinite(logits(0, 3, 4)));
}

TEST_CASE("relative_distance is |query − key|") {
  CHECK(relative_distance(7, 3) == 4);
  CHECK(relative_distance(3, 7) == 4);
  CHECK(relative_distance(5, 5) == 0);
}

TEST_CASE("ALiBi slopes follow Press et al.'s geometric sequence") {
  // H a power of two: m_h = 2^(−8(h+1)/H)
  CHECK(alibi_slopes(4) == std::vector<double>{0.25, 0.0625, 0.015625, 0.00390625});
  const std::vector<double> eight = alibi_slopes(8);
  for (std::size_t h = 0; h < 8; ++h) CHECK(eight[h] == std::pow(2.0, -static_cast<double>(h + 1)));
  // H = 6: the 4-head slopes, then every other 8-head slope (2^-1, 2^-3) for the last two heads
  CHECK(alibi_slopes(6) == std::vector<double>{0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125});
  // H = 3: the 2-head slopes (2^-4, 2^-8), then the first 4-head slope 2^-2
  CHECK(alibi_slopes(3) == std::vector<double>{0.0625, 0.00390625, 0.25});
  // The study's single slope: 2^(−8/H) for every head
  CHECK(alibi_single_slopes(4) == std::vector<double>{0.25, 0.25, 0.25, 0.25});
}

TEST_CASE("ALiBi adds −m_h·(i − j) to the scores of query i and key j ≤ i") {
  ParameterTable table;
  ParameterStore<double> store(std::make_shared<ParameterTable>());
  ALiBi::Attention<double, 4, 2> alibi(table, "", 8);
  ALiBiSingleSlope::Attention<double, 4, 2> single(table, "", 8);
  CHECK(table.total_size() == 0);  // neither variant has parameters
  const auto hooks = alibi.bind(store, 8);
  const auto single_hooks = single.bind(store, 8);
  for (std::size_t h = 0; h < 4; ++h) {
    std::vector<double> row(6, 1.0), single_row(6, 1.0);
    hooks.add_bias(row.data(), h, 5, 0, 6);
    single_hooks.add_bias(single_row.data(), h, 5, 0, 6);
    for (std::size_t j = 0; j < 6; ++j) {
      CHECK(row[j] == 1.0 - std::pow(2.0, -8.0 * (h + 1) / 4) * (5.0 - j));
      CHECK(single_row[j] == 1.0 - 0.25 * (5.0 - j));
    }
  }
}

TEST_CASE("Sinusoidal adds sin and cos at geometrically spaced frequencies") {
  ParameterTable table;
  ParameterStore<double> store(std::make_shared<ParameterTable>());
  Sinusoidal::Embedding<double, 4> pe(table, 8);
  CHECK(pe.position_grads(store) == nullptr);  // fixed: nothing to train
  const double* t = pe.positions(store, 8);
  // By hand for Dim 4: frequencies 10000^0 = 1 and 10000^(−2/4) = 0.01
  CHECK(t[0 * 4 + 0] == 0.0);
  CHECK(t[0 * 4 + 1] == 1.0);
  CHECK(t[1 * 4 + 0] == Approx(std::sin(1.0)).epsilon(1e-15));
  CHECK(t[1 * 4 + 1] == Approx(std::cos(1.0)).epsilon(1e-15));
  CHECK(t[3 * 4 + 2] == Approx(std::sin(0.03)).epsilon(1e-14));
  CHECK(t[3 * 4 + 3] == Approx(std::cos(0.03)).epsilon(1e-14));
  // The table grows past the training context with the same formula.
  const double* longer = pe.positions(store, 100);
  CHECK(longer[99 * 4 + 2] == Approx(std::sin(0.99)).epsilon(1e-14));
  CHECK(longer[3 * 4 + 2] == Approx(std::sin(0.03)).epsilon(1e-14));
}

TEST_CASE("RoPE pairs dimension i with i + hd/2 and rotates by position · 10000^(−2i/hd)") {
  ParameterTable table;
  ParameterStore<double> store(std::make_shared<ParameterTable>());
  RoPE::Attention<double, 1, 4> rope(table, "", 8);
  const auto hooks = rope.bind(store, 8);
  // e_0 at position 1 turns towards e_2 by 1 radian; e_1 towards e_3 by 10000^(−1/2) = 0.01 radian.
  std::vector<double> e0 = {1, 0, 0, 0}, e1 = {0, 1, 0, 0};
  hooks.rotate(e0.data(), 1);
  hooks.rotate(e1.data(), 1);
  CHECK(e0[0] == Approx(std::cos(1.0)));
  CHECK(e0[1] == 0.0);
  CHECK(e0[2] == Approx(std::sin(1.0)));
  CHECK(e0[3] == 0.0);
  CHECK(e1[1] == Approx(std::cos(0.01)));
  CHECK(e1[3] == Approx(std::sin(0.01)));
  // Pair i turns base^(−2i/rotated) per position: 1 and 0.01 here.
  const RopeFrequencies unscaled = rope_frequencies(10000.0, 4, RopeScaling{}, 8, 8);
  REQUIRE(unscaled.per_position.size() == 2);
  CHECK(unscaled.per_position[0] == 1.0);
  CHECK(unscaled.per_position[1] == Approx(0.01).epsilon(1e-14));
  CHECK(unscaled.magnitude == 1.0);
}

TEMPLATE_TEST_CASE("RoPE: the rotated q·k depends only on the offset between positions", "", RoPE,
                   RoPEInterleaved, RoPEPartial, (BasicRoPE<"rope-base500", 500>)) {
  ParameterTable table;
  ParameterStore<double> store(std::make_shared<ParameterTable>());
  typename TestType::template Attention<double, 1, 8> rope(table, "", 64);
  const auto hooks = rope.bind(store, 300);  // past the training context too
  const std::vector<double> q = random_vector(8, 21), k = random_vector(8, 22);
  auto score = [&](std::size_t m, std::size_t n) {
    std::vector<double> qr = q, kr = k;
    hooks.rotate(qr.data(), m);
    hooks.rotate(kr.data(), n);
    return dot(qr, kr);
  };
  for (std::size_t offset : {0, 1, 5, 17}) {
    const double reference = score(offset, 0);
    for (std::size_t shift : {1, 7, 100, 250})
      CHECK(score(offset + shift, shift) == Approx(reference).epsilon(1e-12));
  }
  CHECK(std::abs(score(5, 0) - score(1, 0)) > 1e-3);  // and the offset does matter

  SECTION("unrotate is the inverse (the transpose) of rotate") {
    std::vector<double> x = q;
    hooks.rotate(x.data(), 123);
    hooks.unrotate(x.data(), 123);
    for (std::size_t i = 0; i < x.size(); ++i) CHECK(x[i] == Approx(q[i]).epsilon(1e-14));
  }
}

TEST_CASE("Learned registers one trainable row per position of the training context") {
  ParameterTable table;
  Learned::Embedding<float, 6> pe(table, 10);
  CHECK(pe.max_positions() == 10);
  const ParameterInfo& wpe = table.find("transformer.wpe.weight");
  CHECK(wpe.shape == std::vector<std::size_t>{10, 6});
  CHECK(wpe.init == Init::embedding);
}

TEST_CASE("with_policy maps every runtime name onto its policy class") {
  const std::vector<std::string> names = policy_names();
  CHECK(names.size() == std::tuple_size_v<AllPolicies>);
  for (const char* study_variant : {"learned", "sinusoidal", "rope", "alibi-single"})
    CHECK(std::find(names.begin(), names.end(), study_variant) != names.end());
  for (const std::string& name : policy_names())
    CHECK(with_policy(name, []<class P>() { return std::string(P::name); }) == name);
  CHECK(with_policy("learned", []<class P>() { return std::is_same_v<P, Learned>; }));
  CHECK_THROWS_WITH(with_policy("rotary", []<class P>() { return 0; }),
                    Catch::Contains("unknown positional encoding 'rotary'") &&
                        Catch::Contains("expected one of: " + name_list(policy_names())));
}

TEST_CASE("the registry answers which policies are rotary, and the base each turns with") {
  const std::vector<std::string> rotary = rotary_policy_names();
  CHECK(rotary.size() == std::tuple_size_v<RotaryPolicies>);
  for (const std::string& name : policy_names())
    CHECK(rotary_policy(name) == (std::find(rotary.begin(), rotary.end(), name) != rotary.end()));
  CHECK(rotary_policy("rope"));
  CHECK(rotary_policy("xpos"));
  CHECK_FALSE(rotary_policy("alibi"));
  CHECK(name_list({"a", "b", "c"}) == "a, b, c");
  CHECK(rotary_base("rope") == 10000.0);
  CHECK(rotary_base("xpos") == 10000.0);  // xPos turns as the study's RoPE
  CHECK_THROWS_WITH(rotary_base("t5"), Catch::Contains("'t5' does not turn q and k") &&
                                           Catch::Contains("the rotary policies are " + name_list(rotary)));
}

TEST_CASE("RoPE options: interleaved pairs 2i with 2i+1, partial rotates only its first dimensions") {
  ParameterTable table;
  ParameterStore<double> store(std::make_shared<ParameterTable>());
  RoPEInterleaved::Attention<double, 1, 4> interleaved(table, "", 8);
  std::vector<double> e0 = {1, 0, 0, 0}, e2 = {0, 0, 1, 0};
  interleaved.bind(store, 8).rotate(e0.data(), 1);
  interleaved.bind(store, 8).rotate(e2.data(), 1);
  CHECK(e0[0] == Approx(std::cos(1.0)));
  CHECK(e0[1] == Approx(std::sin(1.0)));  // towards e_1 by 1 radian
  CHECK(e2[2] == Approx(std::cos(0.01)));
  CHECK(e2[3] == Approx(std::sin(0.01)));  // pair 1 at 10000^(−2/4) = 0.01 radian per position

  // A quarter of 8 dimensions: one pair (0, 1) rotated by position · base^0; 2..7 untouched.
  RoPEPartial::Attention<double, 1, 8> partial(table, "", 8);
  CHECK(RoPEPartial::Attention<double, 1, 8>::rotated == 2);
  std::vector<double> x = {1, 0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5};
  partial.bind(store, 8).rotate(x.data(), 3);
  CHECK(x[0] == Approx(std::cos(3.0)));
  CHECK(x[1] == Approx(std::sin(3.0)));
  for (std::size_t i = 2; i < 8; ++i) CHECK(x[i] == 0.5);
}

TEST_CASE("T5 buckets: exact below 16, log-spaced up to 128, the last bucket beyond") {
  // By hand from Hugging Face's rule (num_buckets 32, max_distance 128, causal):
  // n < 16 → n; otherwise 16 + floor(log(n/16) / log(128/16) · 16), capped at 31.
  for (std::size_t n = 0; n < 16; ++n) CHECK(t5_bucket(n) == n);
  CHECK(t5_bucket(16) == 16);
  CHECK(t5_bucket(20) == 17);   // log(1.25)/log(8)·16 = 1.716
  CHECK(t5_bucket(32) == 21);   // log(2)/log(8)·16 = 5.33
  CHECK(t5_bucket(64) == 26);   // log(4)/log(8)·16 = 10.67
  CHECK(t5_bucket(127) == 31);  // log(7.94)/log(8)·16 = 15.94
  CHECK(t5_bucket(128) == 31);
  CHECK(t5_bucket(5000) == 31);
  for (std::size_t n = 1; n < 300; ++n) CHECK(t5_bucket(n) >= t5_bucket(n - 1));  // monotone

  auto shared = std::make_shared<ParameterTable>();
  T5Bias::Attention<double, 2, 4> t5(*shared, "transformer.h.0.attn.", 8);
  CHECK(shared->find("transformer.h.0.attn.relative_attention_bias.weight").shape == std::vector<std::size_t>{32, 2});
  ParameterStore<double> store(shared);
  for (std::size_t i = 0; i < store.values.size(); ++i) store.values.data()[i] = 0.01 * static_cast<double>(i);
  std::vector<double> row(40, 0.0);
  t5.bind(store, 40).add_bias(row.data(), 1, 39, 0, 40);
  for (std::size_t j = 0; j < 40; ++j) CHECK(row[j] == 0.01 * static_cast<double>(t5_bucket(39 - j) * 2 + 1));
}

TEST_CASE("Kerple adds −r1·log(1 + r2·(i − j)) with r = softplus(parameter) > 0") {
  auto shared = std::make_shared<ParameterTable>();
  Kerple::Attention<double, 2, 4> kerple(*shared, "transformer.h.0.attn.", 8);
  ParameterStore<double> store(shared);
  const std::vector<double> raw = {0.3, -1.2, 2.0, -4.0};  // r1 (2 heads), then r2
  std::copy(raw.begin(), raw.end(), store.values.data());
  auto softplus = [](double x) { return std::log(1 + std::exp(x)); };
  std::vector<double> row(6, 0.0);
  kerple.bind(store, 6).add_bias(row.data(), 1, 5, 0, 6);
  for (std::size_t j = 0; j < 6; ++j)
    CHECK(row[j] == Approx(-softplus(-1.2) * std::log(1 + softplus(-4.0) * (5.0 - j))).epsilon(1e-14));
  CHECK(row[5] == 0.0);  // no penalty at distance 0
}

TEST_CASE("FIRE: the bias is the MLP of ψ(i − j)/ψ(max(i, L)), ψ(x) = log(c·x + 1)") {
  auto shared = std::make_shared<ParameterTable>();
  FIRE::Attention<double, 2, 4> fire(*shared, "transformer.h.0.attn.", 8);
  ParameterStore<double> store(shared);
  store.initialize(5);
  CHECK(std::log1p(std::exp(store.values.view("transformer.h.0.attn.fire.c")(0))) == Approx(0.1).epsilon(1e-12));
  // L starts at L₀ = a quarter of the context (8 here) times a multiplier of 1.
  CHECK(fire.initial_threshold() == 2.0);
  CHECK(std::log1p(std::exp(store.values.view("transformer.h.0.attn.fire.L_multiplier")(0))) ==
        Approx(1.0).epsilon(1e-12));
  Rng rng(6);
  for (std::size_t i = 0; i < store.values.size(); ++i) store.values.data()[i] += rng.normal(0.0, 0.5);
  auto softplus = [](double x) { return std::log1p(std::exp(x)); };
  const double c = softplus(store.values.view("transformer.h.0.attn.fire.c")(0));
  const auto w1 = store.values.view("transformer.h.0.attn.fire.mlp.0.weight");
  const auto b1 = store.values.view("transformer.h.0.attn.fire.mlp.0.bias");
  const auto w2 = store.values.view("transformer.h.0.attn.fire.mlp.2.weight");
  const auto b2 = store.values.view("transformer.h.0.attn.fire.mlp.2.bias");
  auto expected = [&](std::size_t head, double x) {
    double out = b2(head);
    for (std::size_t u = 0; u < FIRE::hidden; ++u) out += w2(head, u) * std::max(0.0, w1(u, 0) * x + b1(u));
    return out;
  };
  for (const double multiplier_raw : {10.0, 0.5}) {  // L ≈ 20 (query 6 below it), then L ≈ 1.95 (past it)
    store.values.view("transformer.h.0.attn.fire.L_multiplier")(0) = multiplier_raw;
    const double L = 2.0 * softplus(multiplier_raw);
    const auto hooks = fire.bind(store, 8);
    for (std::size_t query = 0; query < 8; ++query) {
      for (std::size_t head = 0; head < 2; ++head) {
        std::vector<double> row(query + 1, 0.0);
        hooks.add_bias(row.data(), head, query, 0, query + 1);
        for (std::size_t j = 0; j <= query; ++j) {
          const double i = static_cast<double>(query);
          const double x = std::log1p(c * (i - j)) / std::log1p(c * std::max(i, L));
          INFO("query " << query << ", key " << j << ", head " << head << ", L " << L);
          REQUIRE(row[j] == Approx(expected(head, x)).epsilon(1e-12).margin(1e-14));
        }
      }
    }
  }
}

TEST_CASE("xPos: q·k depends only on the offset and decays as ζ^((n−m)/512) on top of RoPE") {
  ParameterTable table;
  ParameterStore<double> store(std::make_shared<ParameterTable>());
  XPos::Attention<double, 1, 8> xpos(table, "", 64);
  RoPE::Attention<double, 1, 8> rope(table, "", 64);
  const auto hooks = xpos.bind(store, 600);
  const auto rope_hooks = rope.bind(store, 600);
  const std::vector<double> q = random_vector(8, 31), k = random_vector(8, 32);
  auto score = [&](std::size_t n, std::size_t m) {
    std::vector<double> qr = q, kr = k;
    hooks.rotate(qr.data(), n);
    rotate_key(hooks, kr.data(), m);
    return dot(qr, kr);
  };
  for (std::size_t offset : {0, 3, 40})
    for (std::size_t shift : {1, 100, 500})
      CHECK(score(offset + shift, shift) == Approx(score(offset, 0)).epsilon(1e-10));
  // One pair by hand: with only pair 0 non-zero (ζ_0 = 0.4/1.4), the xPos score is RoPE's times ζ_0^(n−m)/512.
  std::vector<double> e0 = {1, 0, 0, 0, 0.5, 0, 0, 0}, f0 = {0.3, 0, 0, 0, 1, 0, 0, 0};
  std::vector<double> qx = e0, kx = f0, qr = e0, kr = f0;
  hooks.rotate(qx.data(), 300);
  rotate_key(hooks, kx.data(), 44);
  rope_hooks.rotate(qr.data(), 300);
  rope_hooks.rotate(kr.data(), 44);
  CHECK(dot(qx, kx) == Approx(dot(qr, kr) * std::pow(0.4 / 1.4, 256.0 / 512.0)).epsilon(1e-12));
  // unrotate is the transpose of rotate: ⟨rotate(a), b⟩ = ⟨a, unrotate(b)⟩, for queries and keys.
  std::vector<double> a = q, b = k, ra = q, ub = k;
  hooks.rotate(ra.data(), 77);
  hooks.unrotate(ub.data(), 77);
  CHECK(dot(ra, b) == Approx(dot(a, ub)).epsilon(1e-12));
  ra = q, ub = k;
  rotate_key(hooks, ra.data(), 77);
  unrotate_key(hooks, ub.data(), 77);
  CHECK(dot(ra, b) == Approx(dot(a, ub)).epsilon(1e-12));
}

namespace {

// q (one head, hd) turned as RoPE turns it at `position`: pair p (dimensions p and p + r/2, or 2p
// and 2p + 1 when interleaved) by position·base^(−2p/r), r the rotated dimensions, the rest as is.
std::vector<double> rope_turned(std::vector<double> q, std::size_t position, double base, std::size_t rotated,
                                bool interleaved) {
  for (std::size_t p = 0; p < rotated / 2; ++p) {
    const std::size_t ia = interleaved ? 2 * p : p, ib = interleaved ? 2 * p + 1 : p + rotated / 2;
    const double angle = static_cast<double>(position) * std::pow(base, -2.0 * static_cast<double>(p) / rotated);
    const double a = q[ia], b = q[ib];
    q[ia] = a * std::cos(angle) - b * std::sin(angle);
    q[ib] = a * std::sin(angle) + b * std::cos(angle);
  }
  return q;
}

// The score of query i and key j in head h by each policy's formula (from its paper or the
// reference code; the T5 buckets and FIRE's MLP are pinned by their own tests above), when every
// query of head h is qh and every key kh: content alone scores every pair alike.
template <class P>
double formula_score(const std::vector<double>& qh, const std::vector<double>& kh, std::size_t h, std::size_t H,
                     std::size_t i, std::size_t j, ParameterStore<double>& store,
                     typename P::template Attention<double, 2, 8>& attention, std::size_t T) {
  const std::size_t hd = qh.size();
  const double scale = 1 / std::sqrt(static_cast<double>(hd));
  const double distance = static_cast<double>(i - j);
  if constexpr (requires { P::pairing; }) {  // the RoPE family
    const std::size_t rotated = 2 * static_cast<std::size_t>(P::fraction * static_cast<double>(hd) / 2 + 0.5);
    const bool interleaved = P::pairing == RopePairing::interleaved;
    return dot(rope_turned(qh, i, P::base, rotated, interleaved), rope_turned(kh, j, P::base, rotated, interleaved)) *
           scale;
  } else if constexpr (std::is_same_v<P, XPos>) {
    // RoPE (base 10000, rotate-half), then pair p scaled by ζ_p^(i/512) in q and ζ_p^(−j/512) in k
    std::vector<double> q = rope_turned(qh, i, 10000.0, hd, false), k = rope_turned(kh, j, 10000.0, hd, false);
    for (std::size_t p = 0; p < hd / 2; ++p) {
      const double zeta = (2.0 * static_cast<double>(p) / static_cast<double>(hd) + 0.4) / 1.4;
      for (const std::size_t d : {p, p + hd / 2}) {
        q[d] *= std::pow(zeta, static_cast<double>(i) / 512);
        k[d] *= std::pow(zeta, -static_cast<double>(j) / 512);
      }
    }
    return dot(q, k) * scale;
  } else {
    const double content = dot(qh, kh) * scale;
    if constexpr (std::is_same_v<P, ALiBi>)
      return content - std::pow(2.0, -8.0 * static_cast<double>(h + 1) / static_cast<double>(H)) * distance;
    else if constexpr (std::is_same_v<P, ALiBiSingleSlope>)
      return content - std::pow(2.0, -8.0 / static_cast<double>(H)) * distance;
    else if constexpr (std::is_same_v<P, T5Bias>)
      return content + store.values.view("relative_attention_bias.weight")(t5_bucket(i - j), h);
    else if constexpr (std::is_same_v<P, Kerple>) {
      auto softplus = [](double x) { return std::log1p(std::exp(x)); };
      const double r1 = softplus(store.values.view("kerple.r1")(h)), r2 = softplus(store.values.view("kerple.r2")(h));
      return content - r1 * std::log(1 + r2 * distance);
    } else if constexpr (std::is_same_v<P, FIRE>) {
      std::vector<double> row(i + 1, 0.0);
      attention.bind(store, T).add_bias(row.data(), h, i, 0, i + 1);
      return content + row[j];
    } else {
      static_assert(std::is_same_v<P, NoPE> || std::is_same_v<P, Learned> || std::is_same_v<P, Sinusoidal>,
                    "formula_score: a policy of the registry without its formula here");
      return content;  // positions enter these only through the embeddings, if at all
    }
  }
}

}  // namespace

TEMPLATE_LIST_TEST_CASE("each policy's attention, through the model's kernel, is its formula's, and not NoPE's", "",
                        AllPolicies) {
  constexpr std::size_t H = 2, hd = 8, C = H * hd, T = 40, context = 16;
  auto table = std::make_shared<ParameterTable>();
  typename TestType::template Attention<double, H, hd> attention(*table, "", context);
  ParameterStore<double> store(table);
  store.initialize(40, 1.0, InitScheme::pytorch);  // T5's table and FIRE's MLP far from zero
  // every query of head h the same vector, every key another, values random
  const std::vector<double> q = random_vector(C, 41), k = random_vector(C, 42), v = random_vector(T * C, 43);
  std::vector<double> qkv(T * 3 * C);
  for (std::size_t t = 0; t < T; ++t) {
    std::copy(q.begin(), q.end(), qkv.begin() + static_cast<std::ptrdiff_t>(t * 3 * C));
    std::copy(k.begin(), k.end(), qkv.begin() + static_cast<std::ptrdiff_t>(t * 3 * C + C));
    std::copy(v.begin() + static_cast<std::ptrdiff_t>(t * C), v.begin() + static_cast<std::ptrdiff_t>((t + 1) * C),
              qkv.begin() + static_cast<std::ptrdiff_t>(t * 3 * C + 2 * C));
  }
  std::vector<double> out(T * C), lse(H * T);
  fast::attention_forward(out.data(), lse.data(), static_cast<double*>(nullptr), qkv.data(), 1, T, C, H,
                          attention.bind(store, T), true);
  double worst = 0, farthest_from_uniform = 0;
  for (std::size_t h = 0; h < H; ++h) {
    const std::vector<double> qh(q.begin() + static_cast<std::ptrdiff_t>(h * hd),
                                 q.begin() + static_cast<std::ptrdiff_t>((h + 1) * hd));
    const std::vector<double> kh(k.begin() + static_cast<std::ptrdiff_t>(h * hd),
                                 k.begin() + static_cast<std::ptrdiff_t>((h + 1) * hd));
    for (std::size_t i = 0; i < T; ++i) {
      std::vector<double> p(i + 1);
      for (std::size_t j = 0; j <= i; ++j) p[j] = formula_score<TestType>(qh, kh, h, H, i, j, store, attention, T);
      const double top = *std::max_element(p.begin(), p.end());
      double sum = 0;
      for (double& x : p) sum += (x = std::exp(x - top));
      worst = std::max(worst, std::abs(lse[h * T + i] - (top + std::log(sum))));
      // the output is the values weighted by the formula's softmax; NoPE's by equal weights
      for (std::size_t d = 0; d < hd; ++d) {
        double expected = 0, uniform = 0;
        for (std::size_t j = 0; j <= i; ++j) {
          expected += p[j] / sum * v[j * C + h * hd + d];
          uniform += v[j * C + h * hd + d] / static_cast<double>(i + 1);
        }
        const double got = out[i * C + h * hd + d];
        worst = std::max(worst, std::abs(got - expected));
        farthest_from_uniform = std::max(farthest_from_uniform, std::abs(got - uniform));
      }
    }
  }
  INFO(TestType::name << ": largest difference from the formula " << worst << ", from uniform attention "
                      << farthest_from_uniform);
  CHECK(worst < 1e-12);
  if constexpr (std::is_same_v<TestType, NoPE> || std::is_same_v<TestType, Learned> ||
                std::is_same_v<TestType, Sinusoidal>)
    CHECK(farthest_from_uniform < 1e-12);  // their attention sees no position
  else
    CHECK(farthest_from_uniform > 0.01);
}

// Per-pair angles per position, from an independent Python transcription of each method's
// reference (the YaRN repository's scaled_rope, Hugging Face's dynamic NTK): base 10000, 16
// rotated dimensions, factor 4, trained context 64, dynamic NTK at a sequence of 300.
TEST_CASE("RoPE scaling: each method's angles are its reference code's") {
  const RopeScaling linear{.method = RopeScalingMethod::linear, .factor = 4};
  auto frequencies = [](const RopeScaling& s, std::size_t T = 64) {
    return rope_frequencies(10000.0, 16, s, T, 64);
  };
  const std::vector<double> plain = frequencies({}).per_position;
  REQUIRE(plain.size() == 8);
  for (std::size_t i = 0; i < 8; ++i) CHECK(plain[i] == Approx(std::pow(10000.0, -2.0 * i / 16)).epsilon(1e-15));
  const std::vector<std::vector<double>> expected = {
      {0.25, 0.07905694150420949, 0.025, 0.007905694150420948, 0.0025, 0.0007905694150420948, 0.00025,
       7.905694150420948e-05},
      {1.0, 0.25941281701492275, 0.0672950096316178, 0.017457188019584336, 0.004528618321319533,
       0.0011747816359188909, 0.00030475341355111886, 7.905694150420948e-05},
      {1.0, 0.21328480699267197, 0.04549040889390133, 0.009702413080953475, 0.0020693773013343375,
       0.00044136673831011053, 9.413681959345709e-05, 2.0077953397894474e-05},
      {1.0, 0.23717082451262847, 0.05, 0.007905694150420948, 0.0025, 0.0007905694150420948, 0.00025,
       7.905694150420948e-05},
  };
  const std::vector<RopeFrequencies> got = {
      frequencies(linear), frequencies({.method = RopeScalingMethod::ntk, .factor = 4}),
      frequencies({.method = RopeScalingMethod::dynamic_ntk, .factor = 4}, 300),
      frequencies({.method = RopeScalingMethod::yarn, .factor = 4})};
  for (std::size_t m = 0; m < got.size(); ++m)
    for (std::size_t i = 0; i < 8; ++i) {
      INFO("method " << m << ", pair " << i);
      CHECK(got[m].per_position[i] == Approx(expected[m][i]).epsilon(1e-13));
    }
  // the magnitude: YaRN's 0.1·ln 4 + 1, or the one given; 1 for the others
  CHECK(got[3].magnitude == Approx(1.138629436111989).epsilon(1e-15));
  CHECK(frequencies({.method = RopeScalingMethod::yarn, .factor = 4, .attention_factor = 1.5}).magnitude == 1.5);
  CHECK(got[0].magnitude == 1.0);
  // dynamic NTK keeps the trained angles up to the trained context
  CHECK(frequencies({.method = RopeScalingMethod::dynamic_ntk, .factor = 4}, 64).per_position == plain);
  // a base of its own (llama.cpp's --rope-freq-base)
  CHECK(frequencies({.base = 500.0}).per_position[1] == Approx(std::pow(500.0, -2.0 / 16)).epsilon(1e-15));

  SECTION("YaRN's ramp at LLaMA's sizes: pairs up to 20 keep θ, from 46 on θ/8, linear between") {
    const RopeFrequencies yarn =
        rope_frequencies(10000.0, 128, {.method = RopeScalingMethod::yarn, .factor = 8}, 4096, 4096);
    const std::vector<std::pair<std::size_t, double>> pinned = {
        {0, 1.0}, {20, 0.05623413251903491}, {21, 0.0470579194992012}, {33, 0.0048710493189003685},
        {46, 0.0001666901790204155}, {63, 1.4434774808618228e-05}};
    for (const auto& [pair, value] : pinned) CHECK(yarn.per_position[pair] == Approx(value).epsilon(1e-13));
  }
}

TEMPLATE_LIST_TEST_CASE("a bias over a range of keys is that part of the bias over all of them, with positions "
                        "mapped or not", "", AllPolicies) {
  constexpr std::size_t H = 2, hd = 8, T = 300, context = 16;
  auto table = std::make_shared<ParameterTable>();
  typename TestType::template Attention<double, H, hd> attention(*table, "", context);
  using Hooks = decltype(attention.bind(std::declval<ParameterStore<double>&>(), T));
  if constexpr (Hooks::biases_scores) {
    ParameterStore<double> store(table);
    store.initialize(44, 1.0, InitScheme::pytorch);
    const std::vector<std::size_t> positions = draw_positions(45, T, 4 * T);
    const auto check = [&](const auto& hooks, const char* what) {
      for (const std::size_t query : {std::size_t{0}, std::size_t{37}, std::size_t{255}, T - 1})
        for (std::size_t h = 0; h < H; ++h) {
          std::vector<double> whole(T, 0.0);
          hooks.add_bias(whole.data(), h, query, 0, T);  // no causal mask: keys past the query too
          for (const auto& [first, keys] : {std::pair<std::size_t, std::size_t>{0, 1}, {1, 36}, {37, 1}, {256, 44},
                                             {T - 1, 1}, {100, 0}}) {
            std::vector<double> part(keys + 1, 0.0);
            part[keys] = 7.0;
            hooks.add_bias(part.data(), h, query, first, keys);
            INFO(what << ": query " << query << ", head " << h << ", keys " << first << " +" << keys);
            for (std::size_t j = 0; j < keys; ++j) CHECK(part[j] == whole[first + j]);
            CHECK(part[keys] == 7.0);  // nothing past the range
          }
        }
    };
    check(attention.bind(store, T), "positions 0…T−1");
    check(PositionedHooks<Hooks, double>(attention.bind(store, 4 * T), PositionMap{positions}), "mapped positions");
  }
}

TEMPLATE_LIST_TEST_CASE("RoPE scaling reaches every rotary policy's hooks", "", RotaryPolicies) {
  ParameterTable table;
  ParameterStore<double> store(std::make_shared<ParameterTable>());
  typename TestType::template Attention<double, 1, 8> plain(table, "", 16), scaled(table, "", 16);
  CHECK(is_rotary_policy<TestType>);
  const RopeScaling yarn{.method = RopeScalingMethod::yarn, .factor = 4};
  scaled.set_rope_scaling(yarn);
  const auto p = plain.bind(store, 100);
  const auto s = scaled.bind(store, 100);
  const std::vector<double> q = random_vector(8, 44), k = random_vector(8, 45);
  // linear interpolation turns position 4m as the plain encoding turns m (for every pair)
  typename TestType::template Attention<double, 1, 8> interpolated(table, "", 16);
  interpolated.set_rope_scaling({.method = RopeScalingMethod::linear, .factor = 4});
  const auto li = interpolated.bind(store, 100);
  auto score = [&](const auto& hooks, std::size_t m, std::size_t n) {
    std::vector<double> qr = q, kr = k;
    hooks.rotate(qr.data(), m);
    if constexpr (requires { hooks.rotate_key(kr.data(), n); }) hooks.rotate_key(kr.data(), n);
    else hooks.rotate(kr.data(), n);
    return dot(qr, kr);
  };
  if constexpr (!std::is_same_v<TestType, XPos>)  // xPos's decay is not interpolated
    CHECK(score(li, 40, 8) == Approx(score(p, 10, 2)).epsilon(1e-12));
  // YaRN's magnitude on the rotated dimensions (dimension 0 is one for every variant), at any position
  std::vector<double> e0(8, 0.0);
  e0[0] = 1;
  s.rotate(e0.data(), 37);
  double expected = std::pow(0.1 * std::log(4.0) + 1, 2);
  if constexpr (std::is_same_v<TestType, XPos>) expected *= std::pow(0.4 / 1.4, 2.0 * 37 / 512);  // and its decay
  CHECK(dot(e0, e0) == Approx(expected).epsilon(1e-12));
  // a policy without rotations refuses a setting, and accepts the default
  CHECK_FALSE(is_rotary_policy<ALiBi>);
  CHECK(rotary_policy("xpos"));
  CHECK_FALSE(rotary_policy("kerple"));
}

TEST_CASE("RoPE scaling: bad settings and non-rotary policies are refused with a message") {
  CHECK_THROWS_WITH((RopeScaling{.method = RopeScalingMethod::yarn, .factor = 1}.validate()),
                    Catch::Contains("yarn needs a factor > 1"));
  CHECK_THROWS_WITH((RopeScaling{.factor = 0.5}.validate()), Catch::Contains("factor must be a finite number ≥ 1"));
  CHECK_THROWS_WITH((RopeScaling{.base = 1.0}.validate()), Catch::Contains("base must be a finite number > 1"));
  CHECK_THROWS_WITH((RopeScaling{.beta_fast = 1, .beta_slow = 2}.validate()), Catch::Contains("beta_slow"));
  ModelConfig config{.vocab_size = 5, .context = 8, .rope = {.method = RopeScalingMethod::linear, .factor = 2}};
  CHECK_THROWS_WITH((CharTransformer<ALiBi, 1, 8, 2>(config)), Catch::Contains("alibi does not turn q and k"));
  CHECK_NOTHROW(CharTransformer<XPos, 1, 8, 2>(config));
}

TEST_CASE("a scaling spec names the method, the factor and any setting the method reads") {
  const RopeScaling yarn = parse_rope_scaling_spec("yarn:8:beta_fast=16:beta_slow=2:attention_factor=1.2:base=500");
  CHECK(yarn == RopeScaling{.method = RopeScalingMethod::yarn, .factor = 8, .base = 500.0, .beta_fast = 16,
                            .beta_slow = 2, .attention_factor = 1.2});
  CHECK(yarn.label() == "yarn ×8 base=500 beta_fast=16 beta_slow=2 attention_factor=1.2");
  CHECK(parse_rope_scaling_spec("yarn:8").label() == "yarn ×8");  // as before settings could be given
  CHECK(parse_rope_scaling_spec("dynamic-ntk:4:original_context=64").original_context == 64);
  const auto problem = [](const char* spec) {
    try {
      parse_rope_scaling_spec(spec);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(problem("ntk:4:beta_fast=16") == "rope scaling 'ntk:4:beta_fast=16': beta_fast is read by yarn, not ntk");
  CHECK(problem("linear:4:original_context=64") ==
        "rope scaling 'linear:4:original_context=64': original_context is read by dynamic-ntk and yarn, not linear");
  CHECK(problem("dynamic-ntk:4:attention_factor=2") ==
        "rope scaling 'dynamic-ntk:4:attention_factor=2': attention_factor is read by yarn, not dynamic-ntk");
  CHECK(problem("yarn:4:alpha=2").find("unknown setting 'alpha'") != std::string::npos);
  CHECK(problem("yarn:4:base") == "rope scaling 'yarn:4:base': 'base' is not NAME=VALUE");
  CHECK(problem("yarn:4:=2") == "rope scaling 'yarn:4:=2': '=2' is not NAME=VALUE");
  CHECK(problem("yarn:4:base=500:base=600") == "rope scaling 'yarn:4:base=500:base=600': base is given twice");
  CHECK(problem("yarn:4:base=x") == "rope scaling 'yarn:4:base=x': the base 'x' is not a number");
  CHECK(problem("yarn:4:base=1").find("the base must be a finite number > 1") != std::string::npos);
  CHECK(problem("yarn").find("expected METHOD:FACTOR") != std::string::npos);
  // a new base alone
  CHECK(parse_rope_scaling_spec("base=500000") == RopeScaling{.base = 500000.0});
  CHECK(parse_rope_scaling_spec("base=500000").label() == "base=500000");
  CHECK(RopeScaling{}.label() == "none");
  CHECK(problem("base=1").find("the base must be a finite number > 1") != std::string::npos);
  CHECK(problem("base=x") == "rope scaling 'base=x': the base 'x' is not a number");
  CHECK(problem("beta_fast=16").find("expected METHOD:FACTOR") != std::string::npos);
  CHECK(problem("none:1:base=500").find("expected METHOD:FACTOR") != std::string::npos);
}

TEST_CASE("a scaling over a model's own settings replaces the method, the factor and what the scaling sets") {
  const RopeScaling own = parse_rope_scaling_spec("yarn:2:base=500:beta_fast=16");
  CHECK(rope_scaling_over(own, parse_rope_scaling_spec("yarn:8")) ==
        parse_rope_scaling_spec("yarn:8:base=500:beta_fast=16"));
  CHECK(rope_scaling_over(own, parse_rope_scaling_spec("linear:4:base=40")) ==
        RopeScaling{.method = RopeScalingMethod::linear, .factor = 4, .base = 40.0, .beta_fast = 16});
  CHECK(rope_scaling_over(RopeScaling{}, parse_rope_scaling_spec("ntk:4")) == parse_rope_scaling_spec("ntk:4"));
}

TEST_CASE("every setting in the scaling settings' table is set, reported and read back through one field") {
  for (const RopeScalingSetting& setting : rope_scaling_settings) {
    CAPTURE(setting.name);
    // 7 is in range for each (a base > 1, a whole context, beta_slow < beta_fast's default 32)
    const RopeScaling scaling = parse_rope_scaling_spec("yarn:4:" + std::string(setting.name) + "=7");
    CHECK(scaling != parse_rope_scaling_spec("yarn:4"));
    CHECK(scaling.changed_settings() == std::vector<std::pair<std::string, double>>{{std::string(setting.name), 7}});
    CHECK(rope_scaling_reads(RopeScalingMethod::yarn, setting.name));
    CHECK(scaling.label() == "yarn ×4 " + std::string(setting.name) + "=7");
  }
  CHECK(RopeScaling{}.changed_settings().empty());
  CHECK_THROWS_WITH(parse_rope_scaling_spec("yarn:4:original_context=6.5"),
                    "rope scaling 'yarn:4:original_context=6.5': original_context must be a whole number ≥ 1");
  CHECK_THROWS_WITH(parse_rope_scaling_spec("yarn:4:alpha=2"),
                    "rope scaling 'yarn:4:alpha=2': unknown setting 'alpha' "
                    "(known: base, original_context, beta_fast, beta_slow, attention_factor)");
  CHECK_THROWS_WITH(rope_scaling_reads(RopeScalingMethod::yarn, "alpha"), Catch::Contains("no setting is named"));
}
