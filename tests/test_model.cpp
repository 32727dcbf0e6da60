// Tests of model/: parameter counts and names, whole-model gradients, causality, position sensitivity,
// determinism, learning and bad input, for every positional-encoding policy.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include <posenc/transformer.hpp>

#include "gradient_check.hpp"
#include "thread_counts.hpp"

using namespace posenc;
using posenc_test::gradient_relative_error;
using posenc_test::gradient_tolerance;
using posenc_test::ThreadCounts;

namespace {

template <class P>
using TinyModel = CharTransformer<P, 2, 8, 2, double>;

Tokens random_tokens(std::size_t B, std::size_t T, std::size_t V, std::uint64_t seed) {
  Rng rng(seed);
  Tokens t({B, T});
  for (auto& id : t) id = static_cast<TokenId>(rng.uniform_index(V));
  return t;
}

// Every parameter moved away from its initial value, so no gradient vanishes by symmetry
// (zero biases, unit gains) and the check exercises every path.
template <class Model>
void perturb_parameters(Model& model, std::uint64_t seed) {
  Rng rng(seed);
  auto& p = model.parameters();
  for (std::size_t i = 0; i < p.size(); ++i) p.data()[i] += rng.normal(0.0, 0.3);
}

// Checks one tensor's gradient. FIRE's MLP output bias adds the same value to every score of a
// row, which softmax cancels: its gradient must be 0 both ways, where a relative error would only
// compare rounding noise.
void check_tensor_gradient(const posenc_test::TensorGradientCheck& tensor) {
  if (tensor.name.ends_with("fire.mlp.2.bias")) {
    CHECK(tensor.norm < 1e-12);
    CHECK(tensor.numeric_norm < 1e-8);
    return;
  }
  CHECK(tensor.norm > 0);
  CHECK(tensor.error < gradient_tolerance);
}

// Backward's gradient of model.loss(x, y), tensor by tensor, against central differences. With
// several steps a tensor is judged by the step that agrees best: each step has its own way to
// mislead (a large one crosses a ReLU's kink, a small one drowns a tiny gradient in rounding), and
// a wrong gradient disagrees at every step.
template <class Model>
void check_model_gradients(Model& model, const Tokens& x, const Tokens& y, const std::string& what,
                           const std::vector<double>& steps = {1e-5}) {
  model.zero_grad();
  model.loss(x, y);
  model.backward();
  const std::vector<double> analytic(model.gradients().data(), model.gradients().data() + model.parameter_count());
  auto f = [&] { return model.loss(x, y); };
  std::vector<posenc_test::TensorGradientCheck> best;
  for (const double h : steps) {
    const auto checks = posenc_test::gradient_check_per_tensor(model.parameter_table(), model.parameters().data(),
                                                               analytic.data(), f, h);
    if (best.empty()) best = checks;
    for (std::size_t i = 0; i < checks.size(); ++i)
      if (checks[i].error < best[i].error) best[i] = checks[i];
  }
  for (const auto& tensor : best) {
    INFO(what << ", " << tensor.name << ": relative error " << tensor.error << ", gradient norm " << tensor.norm);
    check_tensor_gradient(tensor);
  }
}

}  // namespace

TEST_CASE("the study's models have the published parameter counts") {
  CHECK(NoPETransformer(65, 128).parameter_count() == 1'360'001);
  CHECK(SinusoidalTransformer(65, 128).parameter_count() == 1'360'001);
  CHECK(RoPETransformer(65, 128).parameter_count() == 1'360'001);
  CHECK(ALiBiTransformer(65, 128).parameter_count() == 1'360'001);
  CHECK(ALiBiSingleSlopeTransformer(65, 128).parameter_count() == 1'360'001);
  CHECK(LearnedTransformer(65, 128).parameter_count() == 1'384'577);
}

TEST_CASE("parameters carry nanoGPT's names and PyTorch's (out, in) shapes") {
  LearnedTransformer model(65, 128);
  using Shape = std::vector<std::size_t>;
  auto shape = [&](const char* name) {
    auto v = model.parameter(name);
    return Shape(v.shape().begin(), v.shape().end());
  };
  CHECK(shape("transformer.wte.weight") == Shape{65, 192});
  CHECK(shape("transformer.wpe.weight") == Shape{128, 192});
  CHECK(shape("transformer.h.2.ln_1.weight") == Shape{192});
  CHECK(shape("transformer.h.0.attn.c_attn.weight") == Shape{576, 192});
  CHECK(shape("transformer.h.0.attn.c_attn.bias") == Shape{576});
  CHECK(shape("transformer.h.1.attn.c_proj.weight") == Shape{192, 192});
  CHECK(shape("transformer.h.1.mlp.c_fc.weight") == Shape{768, 192});
  CHECK(shape("transformer.h.1.mlp.c_proj.weight") == Shape{192, 768});
  CHECK(shape("transformer.ln_f.bias") == Shape{192});
  CHECK(shape("lm_head.weight") == Shape{65, 192});
  CHECK(shape("lm_head.bias") == Shape{65});
  CHECK(model.parameter_table().entries().size() == 2 + 3 * 12 + 4);
  CHECK_THROWS_WITH(model.parameter("transformer.h.3.ln_1.weight"),
                    Catch::Contains("no tensor named 'transformer.h.3.ln_1.weight'"));
  CHECK_FALSE(RoPETransformer(65, 128).parameter_table().contains("transformer.wpe.weight"));
}

TEST_CASE("initialisation: weights N(0, 0.02), biases 0, layer-norm gains 1") {
  RoPETransformer model(65, 128, 1337);
  auto w = model.parameter("transformer.h.0.mlp.c_fc.weight");
  double sum = 0, sum2 = 0;
  for (float x : w) {
    sum += x;
    sum2 += static_cast<double>(x) * x;
  }
  const double n = static_cast<double>(w.size());
  CHECK(sum / n == Approx(0).margin(1e-3));
  CHECK(std::sqrt(sum2 / n) == Approx(0.02).epsilon(0.01));
  for (float x : model.parameter("transformer.h.0.mlp.c_fc.bias")) REQUIRE(x == 0.0f);
  for (float x : model.parameter("transformer.ln_f.weight")) REQUIRE(x == 1.0f);
  for (float x : model.parameter("transformer.ln_f.bias")) REQUIRE(x == 0.0f);
}

namespace {
struct Moments {
  double min = 1e300, max = -1e300, mean = 0, variance = 0;
};
template <class Values>
Moments moments_of(const Values& values) {
  Moments m;
  double sum = 0, sum2 = 0, n = 0;
  for (const auto x : values) {
    m.min = std::min(m.min, static_cast<double>(x));
    m.max = std::max(m.max, static_cast<double>(x));
    sum += x;
    sum2 += static_cast<double>(x) * x;
    n += 1;
  }
  m.mean = sum / n;
  m.variance = sum2 / n - m.mean * m.mean;
  return m;
}
}  // namespace

TEST_CASE("the pytorch initialisation starts each tensor as its PyTorch module or reference code does") {
  const ModelConfig config{.vocab_size = 65, .context = 32, .seed = 3, .init = InitScheme::pytorch};
  RoPETransformer model(config);
  CHECK(model.config().embedding_std == 1.0);  // the scheme's, not GPT-2's 0.02
  // nn.Linear: weight and bias U(−1/√fan_in, 1/√fan_in), whose variance is bound²/3
  for (const auto& [name, fan_in] : std::vector<std::pair<std::string, double>>{
           {"transformer.h.0.attn.c_attn.weight", 192}, {"transformer.h.1.attn.c_attn.bias", 192},
           {"transformer.h.2.mlp.c_fc.weight", 192}, {"transformer.h.0.mlp.c_proj.weight", 768},
           {"transformer.h.0.mlp.c_proj.bias", 768}, {"lm_head.weight", 192}, {"lm_head.bias", 192}}) {
    INFO(name);
    const double bound = 1 / std::sqrt(fan_in);
    const Moments m = moments_of(model.parameter(name));
    CHECK(m.min >= -bound);
    CHECK(m.max <= bound);
    CHECK(m.max > 0.9 * bound);  // it fills the interval: not a narrower normal
    CHECK(std::sqrt(m.variance) == Approx(bound / std::sqrt(3.0)).epsilon(0.1));
  }
  // nn.Embedding N(0, 1); nn.LayerNorm ones and zeros
  CHECK(std::sqrt(moments_of(model.parameter("transformer.wte.weight")).variance) == Approx(1.0).epsilon(0.05));
  // tied, the one table is nanoGPT's lm_head.weight (wte.weight = lm_head.weight), an nn.Linear's
  ModelConfig tied_config = config;
  tied_config.tie_weights = true;
  const Moments tied = moments_of(RoPETransformer(tied_config).parameter("transformer.wte.weight"));
  CHECK(tied.max <= 1 / std::sqrt(192.0));
  CHECK(std::sqrt(tied.variance) == Approx(1 / std::sqrt(3.0 * 192)).epsilon(0.1));
  for (float x : model.parameter("transformer.h.0.ln_1.weight")) REQUIRE(x == 1.0f);
  for (float x : model.parameter("transformer.ln_f.bias")) REQUIRE(x == 0.0f);

  // Kerple as its authors' code: p = r1 ~ U(0, 2), a = r2 ~ U(0, 1), floored at 0.01
  CharTransformer<Kerple, 1, 64, 64> kerple(config);
  std::vector<double> r1, r2;
  for (float raw : kerple.parameter("transformer.h.0.attn.kerple.r1")) r1.push_back(softplus(double(raw)));
  for (float raw : kerple.parameter("transformer.h.0.attn.kerple.r2")) r2.push_back(softplus(double(raw)));
  const Moments m1 = moments_of(r1), m2 = moments_of(r2);
  CHECK(m1.min >= 0.01 - 1e-6);
  CHECK(m1.max <= 2.0 + 1e-6);
  CHECK(m1.max > 1.5);
  CHECK(m2.min >= 0.01 - 1e-6);
  CHECK(m2.max <= 1.0 + 1e-6);
  CHECK(m2.mean == Approx(0.5).margin(0.1));
  // FIRE as its paper's code: the MLP is two nn.Linear, so its 32 ReLU kinks (−b/w) spread out
  // instead of all sitting at 0
  CharTransformer<FIRE, 1, 8, 2> fire(config);
  const auto w1 = fire.parameter("transformer.h.0.attn.fire.mlp.0.weight");
  const auto b1 = fire.parameter("transformer.h.0.attn.fire.mlp.0.bias");
  CHECK(moments_of(w1).max <= 1.0f);
  CHECK(moments_of(b1).min >= -1.0f);
  CHECK(std::sqrt(moments_of(b1).variance) > 0.3);  // U(−1, 1): 0.58
  CharTransformer<FIRE, 1, 8, 2> fire_normal(ModelConfig{.vocab_size = 65, .context = 32, .seed = 3});
  for (float b : fire_normal.parameter("transformer.h.0.attn.fire.mlp.0.bias")) REQUIRE(b == 0.0f);
  // T5's bias table is an nn.Embedding
  CharTransformer<T5Bias, 1, 64, 64> t5(config);
  CHECK(std::sqrt(moments_of(t5.parameter("transformer.h.0.attn.relative_attention_bias.weight")).variance) ==
        Approx(1.0).epsilon(0.1));

  CHECK(parse_init_scheme("pytorch") == InitScheme::pytorch);
  CHECK_THROWS_WITH(parse_init_scheme("xavier"), Catch::Contains("unknown initialisation 'xavier'"));
}

TEST_CASE("embedding_std scales the token and learned position tables and leaves every other value alone") {
  // A normal draw is std × (one standard draw), so with the same seed every embedding value is
  // exactly 50× the default's and every other value is bit-identical.
  using Model = CharTransformer<Learned, 1, 8, 2, double>;
  Model gpt2(ModelConfig{.vocab_size = 5, .context = 4, .seed = 7});
  Model pytorch(ModelConfig{.vocab_size = 5, .context = 4, .seed = 7, .embedding_std = 1.0});
  for (const ParameterInfo& e : gpt2.parameters().table().entries()) {
    const bool embedding = e.name == "transformer.wte.weight" || e.name == "transformer.wpe.weight";
    CHECK((e.init == Init::embedding) == embedding);
    const double* a = gpt2.parameters()[e.slot];
    const double* b = pytorch.parameters()[e.slot];
    for (std::size_t i = 0; i < e.slot.size; ++i) {
      if (embedding)
        REQUIRE(b[i] == Approx(50 * a[i]).epsilon(1e-12));
      else
        REQUIRE(b[i] == a[i]);
    }
  }
  for (double bad : {0.0, -1.0, std::numeric_limits<double>::infinity(), std::nan("")})
    CHECK_THROWS_WITH(Model(ModelConfig{.vocab_size = 5, .context = 4, .embedding_std = bad}),
                      Catch::Contains("embedding_std must be a positive finite number"));
}

TEMPLATE_LIST_TEST_CASE("a DecoderBlock's gradients match finite differences for a random upstream gradient", "",
                        AllPolicies) {
  const std::size_t B = 2, T = 5, D = 8, H = 2;
  auto table = std::make_shared<ParameterTable>();
  DecoderBlock<TestType, D, H, double> block(*table, 0, T);
  ParameterStore<double> store(table);
  store.initialize(19);
  Rng rng(20);
  for (std::size_t i = 0; i < store.values.size(); ++i) store.values.data()[i] += rng.normal(0.0, 0.3);
  std::vector<double> inp = posenc_test::random_vector(B * T * D, 21);
  const std::vector<double> up = posenc_test::random_vector(B * T * D, 22);
  std::vector<double> out(B * T * D), dinp(B * T * D, 0.0);
  BlockActivations<double> act;
  BlockScratch<double> scratch;
  act.resize(B, T, D, H);
  scratch.resize(B, T, D);
  block.forward(out.data(), inp.data(), act, store, B, T);
  block.backward(dinp.data(), up.data(), inp.data(), act, scratch, store, B, T);
  const std::vector<double> dparams(store.grads.data(), store.grads.data() + store.grads.size());
  auto f = [&] {
    block.forward(out.data(), inp.data(), act, store, B, T);
    return posenc_test::dot(out, up);
  };
  CHECK(gradient_relative_error(inp, dinp, f) < gradient_tolerance);
  for (const auto& tensor :
       posenc_test::gradient_check_per_tensor(*table, store.values.data(), dparams.data(), f)) {
    INFO(TestType::name << ", " << tensor.name << ": relative error " << tensor.error << ", gradient norm "
                        << tensor.norm);
    check_tensor_gradient(tensor);
  }
}

TEMPLATE_LIST_TEST_CASE("the whole model's gradients match finite differences", "", AllPolicies) {
  const std::size_t V = 7, context = 6;
  TinyModel<TestType> model(V, context, 3);
  perturb_parameters(model, 4);
  const std::size_t T = GENERATE(6, 4);  // the full context and a shorter sequence
  const Tokens x = random_tokens(2, T, V, 5), y = random_tokens(2, T, V, 6);
  check_model_gradients(model, x, y, std::string(TestType::name) + ", T = " + std::to_string(T));
}

TEMPLATE_LIST_TEST_CASE("gradients match finite differences across several query blocks", "", AllPolicies) {
  // The fast attention takes queries fast::attention_block at a time and skips the keys each block
  // cannot see: a full block and a one-row second, which short tests never reach.
  const std::size_t V = 5, T = fast::attention_block + 1;
  CharTransformer<TestType, 1, 8, 2, double> model(V, T, 3);
  perturb_parameters(model, 4);
  // one sequence: the query blocks are what this test adds to the one above (with two, FIRE's
  // L_multiplier here has a gradient of 1.5e-5, too small to difference to 1e-6)
  const Tokens x = random_tokens(1, T, V, 5), y = random_tokens(1, T, V, 6);
  // FIRE's MLP is piecewise linear: with ~T²/2 distinct inputs × 32 ReLUs, a difference of step
  // 1e-5 can cross a kink of its first layer, which 1e-6 does not; its scalar c has too small a
  // gradient for 1e-6 but not for 1e-5. (At T = 129, 1e-6 crossed kinks too: relative error 1e-4.)
  const std::vector<double> steps =
      std::is_same_v<TestType, FIRE> ? std::vector<double>{1e-5, 1e-6} : std::vector<double>{1e-5};
  check_model_gradients(model, x, y, std::string(TestType::name) + ", T = " + std::to_string(T), steps);
}

TEMPLATE_LIST_TEST_CASE("under a RoPE scaling the gradients match finite differences, YaRN's magnitude included", "",
                        RotaryPolicies) {
  // head dim 8, so rope-partial turns a pair; YaRN at L = 64 with base 10 ramps pairs 0…3 by 0, 0.2,
  // 0.4, 0.6 (low 0, high 5) and multiplies q and k by 0.1·ln 4 + 1
  const std::size_t V = 7, T = 6;
  const RopeScaling scaling =
      GENERATE(RopeScaling{.method = RopeScalingMethod::linear, .factor = 2},
               RopeScaling{.method = RopeScalingMethod::yarn, .factor = 4, .base = 10.0, .original_context = 64});
  CharTransformer<TestType, 1, 16, 2, double> model(ModelConfig{.vocab_size = V, .context = T, .seed = 3,
                                                                .rope = scaling});
  CharTransformer<TestType, 1, 16, 2, double> unscaled(ModelConfig{.vocab_size = V, .context = T, .seed = 3});
  perturb_parameters(model, 4);
  perturb_parameters(unscaled, 4);
  const Tokens x = random_tokens(2, T, V, 5), y = random_tokens(2, T, V, 6);
  CHECK(model.loss(x, y) != unscaled.loss(x, y));  // the scaling reaches the loss
  check_model_gradients(model, x, y, std::string(TestType::name) + " under " + scaling.label());
}

TEST_CASE("weight tying: one table for tokens and lm_head, whose gradient is the sum of both uses") {
  using Model = TinyModel<RoPE>;
  const std::size_t V = 7;
  const ModelConfig untied_config{.vocab_size = V, .context = 6, .seed = 3};
  ModelConfig tied_config = untied_config;
  tied_config.tie_weights = true;
  Model untied(untied_config), tied(tied_config);
  CHECK(untied.parameter_count() - tied.parameter_count() == V * 8);
  CHECK_FALSE(tied.parameter_table().contains("lm_head.weight"));
  CHECK(tied.parameter_table().contains("lm_head.bias"));
  perturb_parameters(untied, 4);
  // the same values, with lm_head.weight equal to the token table in the untied model
  for (const ParameterInfo& e : tied.parameter_table().entries()) {
    const auto from = untied.parameter(e.name);
    std::copy(from.begin(), from.end(), tied.parameter(e.name).begin());
  }
  const auto wte = untied.parameter("transformer.wte.weight");
  std::copy(wte.begin(), wte.end(), untied.parameter("lm_head.weight").begin());

  const Tokens x = random_tokens(3, 6, V, 5), y = random_tokens(3, 6, V, 6);
  untied.zero_grad();
  tied.zero_grad();
  CHECK(tied.loss_and_backward(x, y) == Approx(untied.loss_and_backward(x, y)).epsilon(1e-14));
  const auto g_tied = tied.gradient("transformer.wte.weight");
  const auto g_embedding = untied.gradient("transformer.wte.weight");
  const auto g_head = untied.gradient("lm_head.weight");
  double worst = 0, head_norm = 0;
  for (std::size_t i = 0; i < g_tied.size(); ++i) {
    worst = std::max(worst, std::abs(g_tied.data()[i] - (g_embedding.data()[i] + g_head.data()[i])));
    head_norm = std::max(head_norm, std::abs(g_head.data()[i]));
  }
  CHECK(worst < 1e-13);
  CHECK(head_norm > 1e-3);  // both uses contribute

  // and by finite differences, every tensor of the tied model
  check_model_gradients(tied, x, y, "tied");
}

TEST_CASE("dropout keeps 1 − p of the elements (p to 2^-17), scaled to keep the mean, the same mask however cut") {
  const std::size_t n = 200000;
  std::vector<double> x(n, 1.0);
  const DropoutMask mask{.key = 7, .p = 0.1};
  CHECK(mask.threshold() == 6554);  // p′ = 6554/65536 = 0.1000061
  const double p_applied = 6554.0 / 65536.0;
  dropout(x.data(), n, mask);
  std::size_t kept = 0;
  for (std::size_t i = 0; i < n; ++i) {
    REQUIRE((x[i] == 0.0 || x[i] == Approx(1 / (1 - p_applied)).epsilon(1e-15)));
    REQUIRE((x[i] != 0.0) == mask.keeps(i));  // a hash for four elements gives each its own bits
    kept += x[i] != 0.0;
  }
  CHECK(kept / double(n) == Approx(0.9).margin(0.003));  // binomial sd: 0.0007
  // pieces with their offsets are the whole, also where a cut splits a group of four
  for (const std::size_t cut : {n / 2, std::size_t{99999}, std::size_t{6}}) {
    std::vector<double> pieces(n, 1.0);
    dropout(pieces.data(), cut, mask);
    dropout(pieces.data() + cut, 1, mask, cut);
    dropout(pieces.data() + cut + 1, n - cut - 1, mask, cut + 1);
    CHECK(pieces == x);
  }
  // another key or site is another mask; p = 0 changes nothing; p near 1 still keeps some
  std::vector<double> other(n, 1.0);
  dropout(other.data(), n, mask.at(1));
  CHECK(other != x);
  std::vector<double> none(n, 1.0);
  dropout(none.data(), n, DropoutMask{.key = 7, .p = 0.0});
  CHECK(none == std::vector<double>(n, 1.0));
  CHECK(DropoutMask{.key = 7, .p = 0.9999999}.scale<double>() == 65536.0);
}

template <class P>
using DropoutModel = CharTransformer<P, 2, 8, 2, double>;

TEMPLATE_TEST_CASE("with dropout, the gradients of a training pass match finite differences of its loss", "", RoPE,
                   ALiBi, Learned, T5Bias) {
  const std::size_t V = 7;
  DropoutModel<TestType> model(ModelConfig{.vocab_size = V, .context = 6, .seed = 3, .dropout = 0.3});
  perturb_parameters(model, 4);
  const Tokens x = random_tokens(3, 6, V, 5), y = random_tokens(3, 6, V, 6);
  const double clean = model.loss(x, y);
  model.set_dropout_pass(11, 4);  // the pass's masks are fixed: the loss is a function of the parameters
  const double dropped = model.loss(x, y);
  CHECK(dropped != clean);
  check_model_gradients(model, x, y, std::string(TestType::name));
  // evaluation passes have none, and the model without dropout is the same model
  model.clear_dropout_pass();
  CHECK(model.loss(x, y) == clean);
  DropoutModel<TestType> plain(ModelConfig{.vocab_size = V, .context = 6, .seed = 3});
  perturb_parameters(plain, 4);
  CHECK(plain.loss(x, y) == clean);
}

TEST_CASE("a block drops at each of its three sites at rate p: the attention probabilities and both branches") {
  // The attention's and the MLP's output projections are 0 with bias 1, so each branch adds
  // dropout(1) to its residual: 0 where dropped, 1/(1 − p) where kept. q = k = 0 and v = 1 make
  // every row's probabilities uniform, so the attention output at query t is 1/(1 − p) times the
  // share of its t + 1 probabilities kept (exactly 1 without dropout).
  const std::size_t B = 4, T = 16, D = 8, H = 2, N = B * T, head_dim = D / H;
  const double p = 0.3;
  const DropoutMask mask{.key = 5, .p = p};
  const double scale = mask.scale<double>();  // 1/(1 − p) for p as the 16-bit threshold rounds it
  auto table = std::make_shared<ParameterTable>();
  DecoderBlock<NoPE, D, H, double> block(*table, 0, T);
  ParameterStore<double> store(table);
  store.initialize(19);
  const auto set = [&](const char* name, double value, std::size_t from = 0) {
    auto tensor = store.values.view(std::string("transformer.h.0.") + name);
    std::fill(tensor.begin() + static_cast<std::ptrdiff_t>(from), tensor.end(), value);
  };
  set("attn.c_attn.weight", 0);
  set("attn.c_attn.bias", 0);
  set("attn.c_attn.bias", 1, 2 * D);  // v
  set("attn.c_proj.weight", 0);
  set("attn.c_proj.bias", 1);
  set("mlp.c_proj.weight", 0);
  set("mlp.c_proj.bias", 1);
  const std::vector<double> inp = posenc_test::random_vector(N * D, 21);
  std::vector<double> out(N * D);
  BlockActivations<double> act;
  act.resize(B, T, D, H);
  block.forward(out.data(), inp.data(), act, store, B, T);
  CHECK(std::all_of(act.atty.begin(), act.atty.end(), [](double a) { return a == Approx(1.0).epsilon(1e-12); }));

  block.forward(out.data(), inp.data(), act, store, B, T, mask);
  const auto dropped_share = [&](const std::vector<double>& added) {  // added: each a 0 or 1/(1 − p)
    std::size_t dropped = 0;
    for (const double a : added) {
      REQUIRE((a == Approx(0).margin(1e-12) || a == Approx(scale).epsilon(1e-12)));
      dropped += a < scale / 2;
    }
    return static_cast<double>(dropped) / static_cast<double>(added.size());
  };
  std::vector<double> attention_branch(N * D), mlp_branch(N * D);
  for (std::size_t i = 0; i < N * D; ++i) {
    attention_branch[i] = act.res1[i] - inp[i];
    mlp_branch[i] = out[i] - act.res1[i];
  }
  // 512 elements each: the share's sd is about 0.02
  CHECK(dropped_share(attention_branch) == Approx(p).margin(0.1));
  CHECK(dropped_share(mlp_branch) == Approx(p).margin(0.1));
  CHECK(attention_branch != mlp_branch);  // the sites' masks differ
  // the attention probabilities: each row keeps a whole number of its t + 1 keys
  double kept = 0, keys = 0;
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t h = 0; h < H; ++h) {
        const double row_kept = act.atty[(b * T + t) * D + h * head_dim] * static_cast<double>(t + 1) / scale;
        REQUIRE(row_kept == Approx(std::round(row_kept)).margin(1e-9));
        kept += std::round(row_kept);
        keys += static_cast<double>(t + 1);
      }
  CHECK(1 - kept / keys == Approx(p).margin(0.07));  // 1,088 probabilities: sd about 0.014
}

TEST_CASE("dropout masks follow each sequence's place in the batch, not the chunks it is computed in") {
  const std::size_t V = 7;
  const Tokens x = random_tokens(5, 6, V, 5), y = random_tokens(5, 6, V, 6);
  ModelConfig config{.vocab_size = V, .context = 6, .seed = 3, .dropout = 0.2};
  config.chunk = 2;  // 2 + 2 + 1 sequences
  DropoutModel<RoPE> chunked(config);
  config.chunk = 0;
  DropoutModel<RoPE> whole(config);
  chunked.set_dropout_pass(3);
  whole.set_dropout_pass(3);
  CHECK(chunked.loss(x, y) == Approx(whole.loss(x, y)).epsilon(1e-13));
  // sequences 2… of a batch are the same as the batch's rows 2… given as their own batch at first_sequence 2
  Tokens x_tail({3, 6}), y_tail({3, 6});
  for (std::size_t b = 0; b < 3; ++b)
    for (std::size_t t = 0; t < 6; ++t) {
      x_tail(b, t) = x(b + 2, t);
      y_tail(b, t) = y(b + 2, t);
    }
  whole.set_dropout_pass(3, 2);
  const double tail = whole.loss(x_tail, y_tail);
  whole.set_dropout_pass(3, 0);
  const Tensor<double, 3> logits = whole.forward(x);
  whole.set_dropout_pass(3, 2);
  const Tensor<double, 3> tail_logits = whole.forward(x_tail);
  CHECK(tail_logits(0, 5, 1) == Approx(logits(2, 5, 1)).epsilon(1e-13));
  CHECK(std::isfinite(tail));
  CHECK_THROWS_WITH(DropoutModel<RoPE>(ModelConfig{.vocab_size = V, .context = 6, .dropout = 1.0}),
                    "CharTransformer: dropout must lie in [0, 1), got 1");
}

TEST_CASE("FIRE's gradients match finite differences for queries on both sides of its threshold L") {
  // L starts at a quarter of the context 6, 1.5 (times the perturbed multiplier): queries 0 and 1
  // share their rows by distance, queries 2.. normalise by ψ(i) and take the per-row path.
  TinyModel<FIRE> model(7, 6, 3);
  perturb_parameters(model, 4);
  const Tokens x = random_tokens(2, 6, 7, 5), y = random_tokens(2, 6, 7, 6);
  check_model_gradients(model, x, y, "FIRE");
  // The threshold's and c's gradients once more, each a single scalar, with the five-point
  // stencil: its error (h⁴ truncation, ε·loss/h rounding ≈ 1e-11) is far below the 1e-6 asked.
  // The two-point difference at h = 1e-6 had ~4e-10 of rounding alone, 3e-6 of c's 1.2e-4
  // gradient, and failed or passed with the BLAS kernel's rounding.
  for (const std::string name : {"transformer.h.0.attn.fire.L_multiplier", "transformer.h.1.attn.fire.c"}) {
    double& value = model.parameter(name)(0);
    const double analytic_one = model.gradient(name)(0);
    const double h = 1e-4, saved = value;
    auto loss_at = [&](double offset) {
      value = saved + offset;
      return model.loss(x, y);
    };
    const double numeric = (-loss_at(2 * h) + 8 * loss_at(h) - 8 * loss_at(-h) + loss_at(-2 * h)) / (12 * h);
    value = saved;
    INFO(name);
    CHECK(analytic_one != 0.0);
    CHECK(analytic_one == Approx(numeric).epsilon(1e-6));
  }
}

TEST_CASE("the thread count may grow between a forward and its backward") {
  struct RestoreThreads {
    ~RestoreThreads() { set_num_threads(default_num_threads()); }
  } restore;
  // T5's backward takes the most attention scratch per thread (an (H, T, T) share each)
  TinyModel<T5Bias> model(7, 6, 3);
  perturb_parameters(model, 4);
  const Tokens x = random_tokens(4, 6, 7, 5), y = random_tokens(4, 6, 7, 6);
  auto gradients_with = [&](int forward_threads, int backward_threads) {
    model.zero_grad();
    set_num_threads(forward_threads);
    model.loss(x, y);
    set_num_threads(backward_threads);
    model.backward();
    return std::vector<double>(model.gradients().data(), model.gradients().data() + model.parameter_count());
  };
  const std::vector<double> one_thread = gradients_with(1, 1);
  const std::vector<double> grown = gradients_with(1, 3);
  double worst = 0;
  for (std::size_t i = 0; i < one_thread.size(); ++i) worst = std::max(worst, std::abs(grown[i] - one_thread[i]));
  CHECK(worst < 1e-12);
}

TEMPLATE_LIST_TEST_CASE("causality: changing token t never changes the logits before t", "", AllPolicies) {
  const std::size_t V = 9, T = 8;
  TinyModel<TestType> model(V, T, 8);
  perturb_parameters(model, 9);
  const Tokens x = random_tokens(1, T, V, 10);
  for (std::size_t t = 0; t < T; ++t) {
    Tokens changed = x;
    changed(0, t) = static_cast<TokenId>((x(0, t) + 1) % static_cast<TokenId>(V));
    const Tensor<double, 3> before = model.forward(x);
    const Tensor<double, 3> after = model.forward(changed);
    for (std::size_t i = 0; i < t; ++i)
      for (std::size_t v = 0; v < V; ++v) REQUIRE(after(0, i, v) == before(0, i, v));
    double moved = 0;
    for (std::size_t v = 0; v < V; ++v) moved += std::abs(after(0, t, v) - before(0, t, v));
    CHECK(moved > 0);  // the changed position itself does see the change
  }
}

TEMPLATE_LIST_TEST_CASE("without the causal mask only a position signal breaks permutation equivariance", "",
                        AllPolicies) {
  const std::size_t V = 9, T = 6;
  ModelConfig config{.vocab_size = V, .context = T, .seed = 11, .causal = false};
  TinyModel<TestType> model(config);
  perturb_parameters(model, 12);
  const Tokens x = random_tokens(1, T, V, 13);
  const std::vector<std::size_t> perm = {3, 0, 5, 1, 4, 2};
  Tokens permuted({1, T});
  for (std::size_t t = 0; t < T; ++t) permuted(0, t) = x(0, perm[t]);
  const Tensor<double, 3> out = model.forward(x);
  const Tensor<double, 3> out_permuted = model.forward(permuted);
  double max_diff = 0;
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t v = 0; v < V; ++v)
      max_diff = std::max(max_diff, std::abs(out_permuted(0, t, v) - out(0, perm[t], v)));
  INFO(TestType::name << ": largest difference " << max_diff);
  if constexpr (std::is_same_v<TestType, NoPE>) {
    CHECK(max_diff < 1e-12);
  } else {
    // every policy moves some logit by 0.1 to 1.3 here (ALiBi's 0.097 the least); rounding, or a
    // position signal that barely reaches the scores, stays far below
    CHECK(max_diff > 0.02);
  }
}

TEMPLATE_LIST_TEST_CASE("every policy but Learned evaluates sequences longer than its training context", "",
                        AllPolicies) {
  const std::size_t V = 5, context = 4;
  TinyModel<TestType> model(V, context, 14);
  const Tokens longer = random_tokens(1, 3 * context, V, 15);
  if constexpr (std::is_same_v<TestType, Learned>) {
    CHECK(model.max_context() == context);
    CHECK_THROWS_WITH(model.forward(longer), Catch::Contains("length 12") &&
                                                 Catch::Contains("learned position table (4 rows)"));
  } else {
    CHECK(model.max_context() == 16 * context);
    perturb_parameters(model, 16);
    const Tensor<double, 3> logits = model.forward(longer);
    CHECK(logits.shape()[1] == 3 * context);
    for (double z : logits) REQUIRE(std::isfinite(z));
    // and position t's logits are those of the sequence cut after t, whatever its length: a policy
    // that placed positions by the sequence's length (or its end) would differ past the context
    for (const std::size_t t : {context - 1, context, 2 * context + 1, 3 * context - 2}) {
      Tokens prefix({1, t + 1});
      std::copy(longer.begin(), longer.begin() + static_cast<std::ptrdiff_t>(t + 1), prefix.begin());
      const auto cut = model.forward(prefix);
      INFO(TestType::name << ", position " << t);
      for (std::size_t v = 0; v < V; ++v) REQUIRE(cut(0, t, v) == Approx(logits(0, t, v)).epsilon(1e-12));
    }
  }
}

TEST_CASE("determinism: the same seed gives bitwise-identical losses, another seed does not") {
  const std::string corpus = "the quick brown fox jumps over the lazy dog; the lazy dog sleeps. ";
  TextDataset data(corpus + corpus + corpus);
  auto run = [&](std::uint64_t seed) {
    CharTransformer<RoPE, 2, 16, 2> model(data.vocab_size(), 8, seed);
    auto optimizer = AdamW(model, {.lr = 3e-3});
    BatchSampler sampler(data.train(), 4, 8, seed);
    Tokens x, y;
    std::vector<float> losses;
    for (int step = 0; step < 20; ++step) {
      sampler.sample(x, y);
      losses.push_back(train_step(model, x, y, optimizer));
    }
    return losses;
  };
  const std::vector<float> first = run(1337), again = run(1337), other = run(2024);
  CHECK(first == again);
  CHECK(first != other);
}

// Bias gradients are summed per thread and then over the threads; which (batch, head) items a
// thread sums must not depend on timing, or a rerun differs in the last bits (and training
// diverges from there). 30 backward passes of one batch, at 2 and 3 threads on however many cores.
TEMPLATE_LIST_TEST_CASE("every policy's gradients are bitwise the same on every run at a fixed thread count", "",
                        AllPolicies) {
  ThreadCounts restore;
  for (int threads : {2, 3}) {
    set_num_threads(threads);
    constexpr std::size_t T = fast::attention_block + 8;  // two query blocks, the second partial
    CharTransformer<TestType, 2, 32, 4> model(11, T, 3);
    Tokens x({8, T}), y({8, T});  // 32 (batch, head) items
    Rng rng(4);
    for (std::size_t i = 0; i < x.size(); ++i) {
      x.data()[i] = static_cast<TokenId>(rng.uniform_index(11));
      y.data()[i] = static_cast<TokenId>(rng.uniform_index(11));
    }
    model.zero_grad();
    const float first_loss = model.loss_and_backward(x, y);
    const std::vector<float> first(model.gradients().data(), model.gradients().data() + model.gradients().size());
    int differing_runs = 0;
    for (int run = 0; run < 20; ++run) {
      model.zero_grad();
      const float loss = model.loss_and_backward(x, y);
      if (loss != first_loss || !std::equal(first.begin(), first.end(), model.gradients().data())) ++differing_runs;
    }
    INFO(TestType::name << " at " << threads << " threads");
    CHECK(differing_runs == 0);
  }
}

TEMPLATE_LIST_TEST_CASE("learning: 200 steps cut the loss well below the uniform guess ln(V)", "", AllPolicies) {
  // A corpus with structure: words from a small lexicon in a seeded order.
  const std::vector<std::string> words = {"alpha ", "beta ", "gamma ", "delta ", "omega. "};
  Rng rng(16);
  std::string corpus;
  while (corpus.size() < 4000) corpus += words[rng.uniform_index(words.size())];
  TextDataset data(corpus);
  CharTransformer<TestType, 2, 32, 4> model(data.vocab_size(), 16, 17);
  auto optimizer = AdamW(model, {.lr = 3e-3});
  BatchSampler sampler(data.train(), 16, 16, 18);
  Tokens x, y;
  float loss = 0;
  for (int step = 0; step < 200; ++step) {
    sampler.sample(x, y);
    loss = train_step(model, x, y, optimizer);
  }
  const double uniform = std::log(static_cast<double>(data.vocab_size()));
  INFO(TestType::name << ": final loss " << loss << ", ln V = " << uniform);
  CHECK(loss < 0.5 * uniform);
}

TEST_CASE("bad input throws posenc::Error naming what was wrong") {
  CharTransformer<RoPE, 1, 8, 2> rope(5, 4);
  CharTransformer<Learned, 1, 8, 2> learned(5, 4);
  const Tokens x = {{0, 1, 2, 3}};
  SECTION("a token id outside the vocabulary") {
    const Tokens bad = {{0, 1, 7, 3}};
    CHECK_THROWS_AS(rope.forward(bad), Error);
    CHECK_THROWS_WITH(rope.forward(bad), Catch::Contains("token id 7 at (b=0, t=2)") &&
                                             Catch::Contains("vocabulary [0, 5)"));
    const Tokens negative = {{0, -1, 2, 3}};
    CHECK_THROWS_WITH(rope.loss(x, negative), Catch::Contains("targets token id -1"));
  }
  SECTION("a sequence longer than the Learned table or the maximum context") {
    const Tokens five = {{0, 1, 2, 3, 4}};
    CHECK_THROWS_WITH(learned.forward(five), Catch::Contains("learned position table (4 rows)"));
    CharTransformer<RoPE, 1, 8, 2> bounded(ModelConfig{.vocab_size = 5, .context = 4, .max_context = 6});
    const Tokens seven({1, 7}, 0);
    CHECK_NOTHROW(bounded.forward(Tokens({1, 6}, 0)));
    CHECK_THROWS_WITH(bounded.forward(seven), Catch::Contains("exceeds the model's maximum context 6"));
  }
  SECTION("mismatched shapes") {
    const Tokens y = {{1, 2, 3}};
    CHECK_THROWS_WITH(rope.loss(x, y), Catch::Contains("targets shape (1,3) does not match inputs shape (1,4)"));
    CHECK_THROWS_WITH(rope.forward(Tokens({0, 4})), Catch::Contains("is empty"));
  }
  SECTION("backward before loss") {
    CharTransformer<RoPE, 1, 8, 2> fresh(5, 4);
    CHECK_THROWS_WITH(fresh.backward(), Catch::Contains("call loss(inputs, targets) first"));
    fresh.forward(x);
    CHECK_THROWS_WITH(fresh.backward(), Catch::Contains("call loss(inputs, targets) first"));
  }
  SECTION("impossible model sizes") {
    CHECK_THROWS_WITH((CharTransformer<RoPE, 1, 8, 2>(0, 4)), Catch::Contains("vocab_size must be positive"));
    CHECK_THROWS_WITH((CharTransformer<RoPE, 1, 8, 2>(5, 0)), Catch::Contains("context must be positive"));
  }
  SECTION("an optimizer built for another model") {
    auto optimizer = AdamW(learned);
    CHECK_THROWS_WITH(train_step(rope, x, x, optimizer), Catch::Contains("another model's table"));
  }
}

TEMPLATE_LIST_TEST_CASE("the key/value cache gives the logits of a full forward, one position at a time", "",
                        AllPolicies) {
  const std::size_t V = 9, context = 7;
  TinyModel<TestType> model(V, context, 23);
  perturb_parameters(model, 24);
  // the training context, and (but for Learned, whose table ends there) twice it: positions the
  // model never trained at, where a cache that indexed its angles or biases wrongly would show
  const std::size_t T = model.context_bounded_by_position_table() ? context : 2 * context;
  const Tokens x = random_tokens(1, T, V, 25);
  const Tensor<double, 3> full = model.forward(x);
  auto cache = model.make_cache();
  for (std::size_t t = 0; t < T; ++t) {
    const auto step = model.forward_step(x(0, t), cache);
    for (std::size_t v = 0; v < V; ++v) REQUIRE(step(v) == Approx(full(0, t, v)).epsilon(1e-12));
  }
  CHECK(cache.length() == T);
}

// What generate() with the cache promises past the window, computed from full forwards: for a
// policy whose cache rolls, with one layer (whose keys and values depend only on their own token
// and position, so a held key is what a recomputed window would compute), each token from the
// last `window` tokens; for learned and sinusoidal, each token from the tokens since the last
// re-encode, which starts the last ⌈window/2⌉ tokens anew whenever the window is full.
template <class Model>
std::vector<TokenId> reference_generation(Model& model, std::vector<TokenId> sequence, std::size_t count,
                                          std::size_t window, const SamplingOptions& options) {
  Rng rng(options.seed);
  std::vector<TokenId> generated;
  std::size_t start = 0;  // the first token the absolute policies' cache holds
  if (sequence.size() > window) start = sequence.size() - window;
  for (std::size_t n = 0; n < count; ++n) {
    if (Model::cache_rolls) start = sequence.size() > window ? sequence.size() - window : 0;
    else if (sequence.size() - start > window) start = sequence.size() - (window - window / 2);
    const std::size_t T = sequence.size() - start;
    Tokens input({1, T});
    std::copy(sequence.begin() + static_cast<std::ptrdiff_t>(start), sequence.end(), input.begin());
    const auto logits = model.forward(input);
    const TokenId next = sample_token([&](std::size_t v) { return logits(0, T - 1, v); }, model.vocab_size(),
                                      options, rng);
    sequence.push_back(next);
    generated.push_back(next);
  }
  return generated;
}

TEMPLATE_LIST_TEST_CASE("cached and uncached generation give the same tokens within the window", "", AllPolicies) {
  const std::size_t V = 9, context = 6;
  // max_context 12: the non-learned policies continue past the training context
  TinyModel<TestType> model(ModelConfig{.vocab_size = V, .context = context, .max_context = 12, .seed = 26});
  perturb_parameters(model, 27);
  const std::vector<TokenId> prompt = {1, 4, 2};
  const std::size_t count = model.max_context() - prompt.size() + 1;  // the last token predicted from a full window
  for (const double temperature : {0.0, 0.9}) {
    SamplingOptions cached{.temperature = temperature, .top_k = 5, .seed = 3, .use_cache = true};
    SamplingOptions uncached = cached;
    uncached.use_cache = false;
    const std::vector<TokenId> a = generate(model, prompt, count, cached);
    INFO(TestType::name << ", temperature " << temperature);
    CHECK(a == generate(model, prompt, count, uncached));
    CHECK(a.size() == count);
  }
  CHECK_THROWS_WITH(generate(model, {}, 5), Catch::Contains("the prompt is empty"));
  CHECK_THROWS_WITH(generate(model, prompt, 5, {.window = model.max_context() + 1}),
                    Catch::Contains("exceeds the model's maximum context"));
}

// Dynamic NTK's angles follow the sequence's length: past the trained context every key turns
// again at each new token, so keys cached at an earlier length (and base) would mix bases.
TEMPLATE_TEST_CASE("under dynamic NTK, generation recomputes the window, as the uncached reference", "", RoPE, XPos) {
  const std::size_t V = 9;
  TinyModel<TestType> model(ModelConfig{.vocab_size = V, .context = 6, .max_context = 24, .seed = 26,
                                        .rope = {.method = RopeScalingMethod::dynamic_ntk, .factor = 4}});
  perturb_parameters(model, 27);
  const std::vector<TokenId> prompt = {1, 4, 2};
  const SamplingOptions cached{.temperature = 0.9, .seed = 3, .use_cache = true};
  SamplingOptions uncached = cached;
  uncached.use_cache = false;
  CHECK(generate(model, prompt, 21, cached) == generate(model, prompt, 21, uncached));
  auto cache = model.make_cache();
  CHECK_THROWS_WITH(model.forward_step(1, cache), Catch::Contains("dynamic NTK turns every key again"));
}

TEMPLATE_LIST_TEST_CASE("past the window, cached generation predicts each token from the context it promises", "",
                        AllPolicies) {
  const std::size_t V = 9, context = 6;
  CharTransformer<TestType, 1, 8, 2, double> model(
      ModelConfig{.vocab_size = V, .context = context, .max_context = 12, .seed = 28});
  perturb_parameters(model, 29);
  const std::vector<TokenId> prompt = {1, 4, 2, 7, 0, 3, 8};
  // learned's window is its table (6); the others' 12 by default and 5 when asked, with a prompt
  // longer than that: 40 tokens reach position 47, past a rolling cache's rebase at 2 × 5 and 2 × 12
  ThreadCounts restore;
  for (const int threads : {1, 2}) {
    set_num_threads(threads);
    for (const std::size_t window : {std::size_t{0}, std::size_t{5}}) {
      for (const double temperature : {0.0, 0.9}) {
        const SamplingOptions options{.temperature = temperature, .top_k = 5, .seed = 4, .window = window};
        const std::size_t effective = window == 0 ? model.max_context() : window;
        INFO(TestType::name << ", " << threads << " threads, window " << effective << ", temperature "
                            << temperature);
        CHECK(generate(model, prompt, 40, options) == reference_generation(model, prompt, 40, effective, options));
      }
    }
  }
}

// TestType with attention limited to the last W keys (a key at distance ≥ W gets −1e30), in a
// full forward: what a rolling cache of capacity W computes, for policies whose bias is a function
// of the distance alone (FIRE's also depends on the query's position, see the one-layer test).
template <class P, std::size_t W>
struct SlidingWindowOf {
  static constexpr std::string_view name = P::name;
  static constexpr std::string_view summary = "test: a sliding attention window";
  template <std::floating_point S, std::size_t Dim>
  using Embedding = typename P::template Embedding<S, Dim>;

  template <std::floating_point S, std::size_t Heads, std::size_t HeadDim>
  class Attention {
    using Base = typename P::template Attention<S, Heads, HeadDim>;
    using BaseHooks = decltype(std::declval<Base&>().bind(std::declval<ParameterStore<S>&>(), std::size_t{}));

   public:
    Attention(ParameterTable& table, std::string_view prefix, std::size_t context) : base_(table, prefix, context) {}
    struct Hooks : BaseHooks {
      static constexpr bool biases_scores = true;
      void add_bias(S* row, std::size_t head, std::size_t query, std::size_t first_key, std::size_t keys) const {
        if constexpr (BaseHooks::biases_scores) BaseHooks::add_bias(row, head, query, first_key, keys);
        for (std::size_t k = 0; k < keys; ++k)
          if (relative_distance(query, first_key + k) >= W) row[k] = S(-1e30);
      }
    };
    Hooks bind(ParameterStore<S>& store, std::size_t T) { return Hooks{base_.bind(store, T)}; }
    void set_rope_scaling(const RopeScaling& scaling)
      requires is_rotary_policy<P>
    {
      base_.set_rope_scaling(scaling);
    }

   private:
    Base base_;
  };
};

TEMPLATE_TEST_CASE("a rolling cache computes sliding-window attention over the whole sequence, across rebases", "",
                   NoPE, RoPE, RoPEInterleaved, RoPEPartial, XPos, ALiBi, ALiBiSingleSlope, T5Bias, Kerple) {
  constexpr std::size_t W = 5;
  const std::size_t V = 9, context = 4, T = 3 * W + 2;  // rebases at positions 2W (and the test reaches 3W + 1)
  ModelConfig config{.vocab_size = V, .context = context, .max_context = 4 * W, .seed = 30};
  // rotary policies also under YaRN, whose magnitude a rebase must not apply twice
  if constexpr (is_rotary_policy<TestType>)
    if (GENERATE(false, true)) config.rope = {.method = RopeScalingMethod::yarn, .factor = 4};
  TinyModel<TestType> rolling(config);
  TinyModel<SlidingWindowOf<TestType, W>> reference(config);
  REQUIRE(rolling.parameter_count() == reference.parameter_count());
  perturb_parameters(rolling, 31);
  perturb_parameters(reference, 31);
  const Tokens x = random_tokens(1, T, V, 32);
  const Tensor<double, 3> full = reference.forward(x);
  ThreadCounts restore;
  const int threads = GENERATE(1, 2);
  set_num_threads(threads);
  auto cache = rolling.make_cache(W);
  for (std::size_t t = 0; t < T; ++t) {
    const auto step = rolling.forward_step(x(0, t), cache);
    INFO(TestType::name << ", " << threads << " threads, position " << t);
    for (std::size_t v = 0; v < V; ++v) REQUIRE(step(v) == Approx(full(0, t, v)).epsilon(1e-10));
    REQUIRE(cache.length() == std::min(t + 1, W));
  }
  CHECK(cache.evicted() == T - W);
  CHECK(cache.next_position() < 2 * W);  // rebased, not counting on
  // and a window that cut the context of its first tokens would differ: the test can tell
  Tokens last({1, W});
  std::copy(x.end() - static_cast<std::ptrdiff_t>(W), x.end(), last.begin());
  const Tensor<double, 3> recomputed = rolling.forward(last);
  double largest_difference = 0;
  for (std::size_t v = 0; v < V; ++v)
    largest_difference = std::max(largest_difference, std::abs(recomputed(0, W - 1, v) - full(0, T - 1, v)));
  CHECK(largest_difference > 1e-3);
}

// generate() through a model that counts the positions it encodes.
template <class Model>
struct CountingModel : Model {
  using Model::Model;
  std::size_t positions_encoded = 0;
  TensorView<const typename Model::S> forward_step(TokenId token, KVCache<typename Model::S>& cache) {
    ++positions_encoded;
    return Model::forward_step(token, cache);
  }
};

TEMPLATE_LIST_TEST_CASE("generation past the window encodes each token once (rolling) or at most twice (re-encoding)",
                        "", AllPolicies) {
  // a window of 64 (learned's table is 32 rows): 1,000 and 3,000 tokens both go far past it,
  // where recomputing the window for every token would encode 64 positions per token
  CountingModel<CharTransformer<TestType, 1, 8, 2, double>> model(  // the type the test above built
      ModelConfig{.vocab_size = 5, .context = 32, .max_context = 64, .seed = 33});
  const std::vector<TokenId> prompt = {1, 2, 3};
  for (const std::size_t count : {1000, 3000}) {
    model.positions_encoded = 0;
    generate(model, prompt, count, {.temperature = 1.0, .seed = 5});
    const std::size_t once = prompt.size() + count - 1;
    INFO(TestType::name << ", " << count << " tokens, " << model.positions_encoded << " positions encoded");
    if constexpr (decltype(model)::cache_rolls) CHECK(model.positions_encoded == once);
    else CHECK(model.positions_encoded <= 2 * once);
  }
}

TEST_CASE("sampling: greedy picks the largest logit, top-k never leaves the k most likely") {
  const std::vector<double> logits = {0.1, 2.0, -1.0, 1.5, 1.9};
  auto row = [&](std::size_t v) { return logits[v]; };
  Rng rng(5);
  CHECK(sample_token(row, 5, {.temperature = 0.0}, rng) == 1);
  for (int i = 0; i < 200; ++i) {
    const TokenId t = sample_token(row, 5, {.temperature = 1.0, .top_k = 2}, rng);
    REQUIRE((t == 1 || t == 4));
  }
}

TEST_CASE("sampling: top-p keeps the fewest most likely tokens that reach p, and samples them in proportion") {
  // probabilities 0.5, 0.3, 0.15, 0.05 (ids 2, 0, 3, 1)
  const std::vector<double> logits = {std::log(0.3), std::log(0.05), std::log(0.5), std::log(0.15)};
  auto row = [&](std::size_t v) { return logits[v]; };
  Rng rng(9);
  std::vector<int> counts(4, 0);
  const int draws = 20000;
  for (int i = 0; i < draws; ++i) ++counts[sample_token(row, 4, {.temperature = 1.0, .top_k = 0, .top_p = 0.7}, rng)];
  CHECK(counts[1] == 0);  // 0.5 + 0.3 reach 0.7: 0.15 and 0.05 are cut
  CHECK(counts[3] == 0);
  CHECK(counts[2] / double(draws) == Approx(0.5 / 0.8).margin(0.015));
  for (int i = 0; i < 200; ++i)
    REQUIRE(sample_token(row, 4, {.temperature = 1.0, .top_k = 0, .top_p = 0.45}, rng) == 2);
  // top-k first: of the 3 most likely (0.5, 0.3, 0.15 of 0.95), 0.9 needs all three
  std::vector<int> after_k(4, 0);
  for (int i = 0; i < draws; ++i)
    ++after_k[sample_token(row, 4, {.temperature = 1.0, .top_k = 3, .top_p = 0.9}, rng)];
  CHECK(after_k[1] == 0);
  CHECK(after_k[3] > 0);
  CharTransformer<RoPE, 1, 8, 2> model(5, 8, 1);
  CHECK_THROWS_WITH(generate(model, {1}, 3, {.top_p = 0.0}), "generate: top_p must lie in (0, 1], got 0");
}

// ── Randomized positions (Ruoss et al. 2023) ───────────────────────────────────────────────

TEST_CASE("draw_positions: an ordered subset of the range, each equally likely, a function of its key") {
  const auto a = draw_positions(7, 5, 40);
  REQUIRE(a.size() == 5);
  for (std::size_t t = 0; t < a.size(); ++t) {
    CHECK(a[t] < 40);
    if (t > 0) CHECK(a[t] > a[t - 1]);
  }
  CHECK(draw_positions(7, 5, 40) == a);
  CHECK(draw_positions(8, 5, 40) != a);
  CHECK(draw_positions(3, 6, 6) == std::vector<std::size_t>{0, 1, 2, 3, 4, 5});  // the whole range
  CHECK(draw_positions(3, 0, 6).empty());
  CHECK_THROWS_WITH(draw_positions(3, 7, 6), Catch::Contains("7 distinct positions do not fit the range [0, 6)"));
  // Each of the 10 positions is in a draw of 3 with probability 0.3, and each of the 45 pairs of
  // positions with 3·2/(10·9) = 1/15: 20000 draws put every share within 5 sd of it.
  const std::size_t draws = 20000;
  std::vector<double> hits(10, 0), pair_hits(100, 0);
  for (std::size_t k = 0; k < draws; ++k) {
    const auto d = draw_positions(1000 + k, 3, 10);
    for (std::size_t i = 0; i < d.size(); ++i) {
      hits[d[i]] += 1;
      for (std::size_t j = i + 1; j < d.size(); ++j) pair_hits[d[i] * 10 + d[j]] += 1;
    }
  }
  for (std::size_t p = 0; p < 10; ++p) CHECK(std::abs(hits[p] / draws - 0.3) < 5 * std::sqrt(0.3 * 0.7 / draws));
  for (std::size_t p = 0; p < 10; ++p)
    for (std::size_t q = p + 1; q < 10; ++q)
      CHECK(std::abs(pair_hits[p * 10 + q] / draws - 1.0 / 15) < 5 * std::sqrt((1.0 / 15) * (14.0 / 15) / draws));
}

TEMPLATE_LIST_TEST_CASE("positions drawn from a range no longer than the sequence are 0…T−1: the same bits as none",
                        "", AllPolicies) {
  // The only ordered subset of T positions of [0, T) is 0…T−1, which goes through the map's
  // general path (a bias row spread over positions, rows gathered by position): it must give the
  // identity's numbers exactly.
  const std::size_t V = 7, T = 6;
  TinyModel<TestType> plain(ModelConfig{.vocab_size = V, .context = T, .seed = 3});
  TinyModel<TestType> ranged(ModelConfig{.vocab_size = V, .context = T, .seed = 3, .position_range = T});
  REQUIRE(plain.parameter_count() == ranged.parameter_count());
  perturb_parameters(plain, 4);
  perturb_parameters(ranged, 4);
  const Tokens x = random_tokens(3, T, V, 5), y = random_tokens(3, T, V, 6);
  plain.zero_grad();
  ranged.zero_grad();
  CHECK(plain.loss_and_backward(x, y) == ranged.loss_and_backward(x, y));
  CHECK(std::equal(plain.gradients().data(), plain.gradients().data() + plain.parameter_count(),
                   ranged.gradients().data()));
}

TEMPLATE_LIST_TEST_CASE("at randomized positions the gradients match finite differences", "", AllPolicies) {
  // FIRE's threshold L is a quarter of the context: its gradient needs a query below it with a key
  // at another position, so positions 0 and 1 are among those given (L = 1.5), and the drawn
  // positions (1, 2, 5, 6, 10, 11 from these tokens) are read by a model of context 12 (L = 3).
  const std::size_t V = 7, T = 6;
  SECTION("positions given") {
    TinyModel<TestType> model(ModelConfig{.vocab_size = V, .context = T, .seed = 3, .position_range = 24});
    perturb_parameters(model, 4);
    const Tokens x = random_tokens(2, T, V, 5), y = random_tokens(2, T, V, 6);
    model.set_positions({0, 1, 4, 11, 17, 23});
    check_model_gradients(model, x, y, std::string(TestType::name) + ", positions given");
  }
  SECTION("positions drawn from the pass's tokens") {
    TinyModel<TestType> model(ModelConfig{.vocab_size = V, .context = 12, .seed = 3, .position_range = 12});
    perturb_parameters(model, 4);
    const Tokens x = random_tokens(2, T, V, 5), y = random_tokens(2, T, V, 6);
    check_model_gradients(model, x, y, std::string(TestType::name) + ", positions drawn");
  }
}

TEMPLATE_TEST_CASE("a relative policy reads only differences of positions: shifted positions give the same logits",
                   "", NoPE, RoPE, RoPEInterleaved, RoPEPartial, XPos, ALiBi, ALiBiSingleSlope, T5Bias, Kerple) {
  const std::size_t V = 7, T = 6;
  TinyModel<TestType> model(ModelConfig{.vocab_size = V, .context = T, .seed = 3});
  perturb_parameters(model, 4);
  const Tokens x = random_tokens(2, T, V, 5);
  const auto logits = [&] {
    const auto view = model.forward(x);
    return std::vector<double>(view.data(), view.data() + view.size());
  };
  const auto at_zero = logits();
  model.set_positions({9, 10, 11, 12, 13, 14});
  const auto shifted = logits();
  REQUIRE(shifted.size() == at_zero.size());
  for (std::size_t i = 0; i < at_zero.size(); ++i) CHECK(shifted[i] == Approx(at_zero[i]).margin(1e-12));
  // and the gaps between positions are read: spread positions give other logits (but NoPE's)
  model.set_positions({0, 2, 5, 6, 9, 14});
  const auto spread = logits();
  double largest = 0;
  for (std::size_t i = 0; i < at_zero.size(); ++i) largest = std::max(largest, std::abs(spread[i] - at_zero[i]));
  if constexpr (std::is_same_v<TestType, NoPE>) CHECK(largest == 0);
  else CHECK(largest > 1e-6);
  model.clear_positions();
  CHECK(logits() == at_zero);
}

TEST_CASE("a learned table is read at the positions: rows 0, 3, 7, 11 as a table holding those rows first") {
  const std::size_t V = 7, T = 4;
  TinyModel<Learned> spread(ModelConfig{.vocab_size = V, .context = T, .seed = 3, .position_range = 12});
  TinyModel<Learned> packed(ModelConfig{.vocab_size = V, .context = T, .seed = 3, .position_range = 12});
  perturb_parameters(spread, 4);
  std::copy(spread.parameters().data(), spread.parameters().data() + spread.parameter_count(),
            packed.parameters().data());
  const std::vector<std::size_t> rows{0, 3, 7, 11};
  auto table = packed.parameter("transformer.wpe.weight");
  const auto source = spread.parameter("transformer.wpe.weight");
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t c = 0; c < 8; ++c) table(t, c) = source(rows[t], c);
  const Tokens x = random_tokens(2, T, V, 5), y = random_tokens(2, T, V, 6);
  spread.set_positions(rows);
  packed.set_positions({0, 1, 2, 3});
  spread.zero_grad();
  packed.zero_grad();
  CHECK(spread.loss_and_backward(x, y) == packed.loss_and_backward(x, y));
  // the gradient lands on the rows read
  const auto g_spread = spread.gradient("transformer.wpe.weight");
  const auto g_packed = packed.gradient("transformer.wpe.weight");
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t c = 0; c < 8; ++c) CHECK(g_spread(rows[t], c) == g_packed(t, c));
  CHECK(g_spread(1, 0) == 0);
  CHECK(g_spread(10, 5) == 0);
}

TEST_CASE("sinusoidal positions are absolute: shifted positions change the logits") {
  const std::size_t V = 7, T = 5;
  TinyModel<Sinusoidal> model(ModelConfig{.vocab_size = V, .context = T, .seed = 3});
  const Tokens x = random_tokens(1, T, V, 5);
  const auto first = model.forward(x);
  const std::vector<double> at_zero(first.data(), first.data() + first.size());
  model.set_positions({4, 5, 6, 7, 8});
  const auto second = model.forward(x);
  double largest = 0;
  for (std::size_t i = 0; i < at_zero.size(); ++i) largest = std::max(largest, std::abs(second.data()[i] - at_zero[i]));
  CHECK(largest > 1e-6);
}

TEST_CASE("randomized positions: a learned table of position_range rows, sequences up to it, bad maps refused") {
  const std::size_t V = 7, T = 4;
  TinyModel<Learned> learned(ModelConfig{.vocab_size = V, .context = T, .seed = 3, .position_range = 20});
  CHECK(learned.parameter("transformer.wpe.weight").shape()[0] == 20);
  CHECK(learned.max_context() == 20);
  CHECK_NOTHROW(learned.forward(random_tokens(1, 20, V, 1)));
  CHECK_THROWS_WITH(learned.forward(random_tokens(1, 21, V, 1)), Catch::Contains("exceeds"));
  TinyModel<RoPE> rope(ModelConfig{.vocab_size = V, .context = T, .seed = 3, .position_range = 20});
  CHECK(rope.max_context() == 20);
  CHECK_THROWS_WITH(rope.set_positions({0, 3, 3, 5}), Catch::Contains("positions must increase"));
  CHECK_THROWS_WITH(rope.set_positions({0, 3, 20}),
                    Catch::Contains("position 20 at index 2 is outside the range [0, 20)"));
  rope.set_positions({0, 3});
  CHECK_THROWS_WITH(rope.forward(random_tokens(1, T, V, 1)), Catch::Contains("2 positions for a sequence of 4"));
  CHECK_THROWS_WITH(TinyModel<RoPE>(ModelConfig{.vocab_size = V, .context = T, .position_range = 3}),
                    Catch::Contains("position_range 3 is shorter than the context 4"));
  TinyModel<Learned> table_only(ModelConfig{.vocab_size = V, .context = T, .seed = 3});
  CHECK_THROWS_WITH(table_only.set_positions({0, 4}), Catch::Contains("outside the range [0, 4)"));
}

TEMPLATE_LIST_TEST_CASE("attention probabilities: each query's weights over its own and earlier keys, a sequence's "
                        "own in any batch or chunk",
                        "", AllPolicies) {
  const std::size_t V = 9, T = 7, B = 3;
  ModelConfig config{.vocab_size = V, .context = T, .seed = 21, .chunk = 2};  // chunks of 2 + 1 sequences
  TinyModel<TestType> model(config);
  perturb_parameters(model, 22);
  const Tokens x = random_tokens(B, T, V, 23);
  const Tensor<double, 4> att = model.attention_probabilities(x, 1);
  REQUIRE(att.shape() == std::array<std::size_t, 4>{B, 2, T, T});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < 2; ++h)
      for (std::size_t i = 0; i < T; ++i) {
        double sum = 0;
        for (std::size_t j = 0; j < T; ++j) {
          if (j > i) REQUIRE(att(b, h, i, j) == 0);
          REQUIRE(att(b, h, i, j) >= 0);
          sum += att(b, h, i, j);
        }
        REQUIRE(sum == Approx(1).epsilon(1e-12));
      }
  // the last sequence alone, and its first 4 tokens alone: the same rows (causal, no batch mixing)
  Tokens last({1, T}), prefix({1, 4});
  for (std::size_t t = 0; t < T; ++t) last(0, t) = x(B - 1, t);
  for (std::size_t t = 0; t < 4; ++t) prefix(0, t) = x(B - 1, t);
  const Tensor<double, 4> alone = model.attention_probabilities(last, 1);
  const Tensor<double, 4> short_alone = model.attention_probabilities(prefix, 1);
  double worst = 0;
  for (std::size_t h = 0; h < 2; ++h)
    for (std::size_t i = 0; i < T; ++i)
      for (std::size_t j = 0; j < T; ++j) {
        worst = std::max(worst, std::abs(alone(0, h, i, j) - att(B - 1, h, i, j)));
        if (i < 4 && j < 4) worst = std::max(worst, std::abs(short_alone(0, h, i, j) - alone(0, h, i, j)));
      }
  CHECK(worst < 1e-12);
  const Tensor<double, 4> first_layer = model.attention_probabilities(x, 0);
  CHECK(xt::amax(xt::abs(first_layer - att))() > 1e-3);  // another layer, other weights
  CHECK_THROWS_WITH(model.attention_probabilities(x, 2), Catch::Contains("no layer 2 in a model of 2 layers"));
}

TEST_CASE("attention probabilities of one repeated token: NoPE's uniform, ALiBi's its slopes' geometric decay") {
  // every key the same, so the first layer's content scores are equal and only the position signal
  // weights the keys: none (1/(i+1)), or ALiBi's −m·(i−j) with head h's slope m = 2^(−8(h+1)/H)
  const std::size_t V = 5, T = 6;
  Tokens same({1, T});
  same.fill(3);
  TinyModel<NoPE> nope(V, T, 24);
  perturb_parameters(nope, 25);
  TinyModel<ALiBi> alibi(V, T, 24);
  perturb_parameters(alibi, 25);
  const Tensor<double, 4> uniform = nope.attention_probabilities(same, 0);
  const Tensor<double, 4> decaying = alibi.attention_probabilities(same, 0);
  for (std::size_t h = 0; h < 2; ++h) {
    const double m = std::pow(2.0, -8.0 * static_cast<double>(h + 1) / 2.0);
    for (std::size_t i = 0; i < T; ++i) {
      double norm = 0;
      for (std::size_t j = 0; j <= i; ++j) norm += std::exp(-m * static_cast<double>(i - j));
      for (std::size_t j = 0; j <= i; ++j) {
        CHECK(uniform(0, h, i, j) == Approx(1.0 / static_cast<double>(i + 1)).epsilon(1e-12));
        CHECK(decaying(0, h, i, j) == Approx(std::exp(-m * static_cast<double>(i - j)) / norm).epsilon(1e-12));
      }
    }
  }
}
