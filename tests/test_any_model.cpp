// Tests of train/any_model.hpp: the runtime dispatcher from a policy name and a size to a compiled model.
#include <catch2/catch.hpp>

#include <limits>
#include <string>
#include <tuple>

#include <posenc/transformer.hpp>

#include "test_models.hpp"

using namespace posenc;
using posenc_test::make_test_model;

namespace {
using TwoSizes = std::tuple<ModelSize<1, 8, 2>, ModelSize<2, 16, 4>>;
}

TEST_CASE("make_any_model maps a policy name and a size onto the CharTransformer built for them") {
  const auto model = make_test_model({"alibi", 1, 8, 2}, ModelConfig{.vocab_size = 5, .context = 8});
  CHECK(model->encoding_name() == "alibi");
  CHECK(model->parameter_count() == CharTransformer<ALiBi, 1, 8, 2>(5, 8).parameter_count());
  CHECK(model->max_context() == 16 * 8);
  CHECK_FALSE(model->context_bounded_by_position_table());
  const auto learned = make_test_model({"learned", 1, 8, 2}, ModelConfig{.vocab_size = 5, .context = 8});
  CHECK(learned->encoding_name() == "learned");
  CHECK(learned->max_context() == 8);
  CHECK(learned->context_bounded_by_position_table());
  for (const std::string& name : policy_names())
    CHECK(make_test_model({name, 1, 8, 2}, ModelConfig{.vocab_size = 5, .context = 8})->encoding_name() == name);
  std::size_t matched_dim = 0;
  CHECK(with_model_size<TwoSizes>(2, 16, 4, [&]<class Size>() { matched_dim = Size::dim; }));
  CHECK(matched_dim == 16);
  CHECK_FALSE(with_model_size<TwoSizes>(2, 8, 2, []<class>() {}));
}

TEST_CASE("make_any_model_from_shards names the built sizes, or the known policies, when it has no such model") {
  // No shards: the errors come before any model is looked for.
  const auto make = [](const ModelShape& shape) {
    return make_any_model_from_shards<TwoSizes, 0>({}, shape, ModelConfig{.vocab_size = 5, .context = 8},
                                                    "rebuild to add one");
  };
  CHECK_THROWS_WITH(make({"rope", 3, 192, 4}),
                    Catch::Contains("not built for a model of 3 layers, dim 192, 4 heads") &&
                        Catch::Contains("1 layers × dim 8 × 2 heads, 2 layers × dim 16 × 4 heads") &&
                        Catch::Contains("; rebuild to add one"));
  CHECK_THROWS_WITH(make({"rotary", 1, 8, 2}), Catch::Contains("unknown positional encoding 'rotary'"));
  CHECK_THROWS_WITH(make_test_model({"rope", 2, 16, 4}, ModelConfig{.vocab_size = 5, .context = 8}),
                    Catch::Contains("it is built for: 1 layers × dim 8 × 2 heads"));
}

TEST_CASE("evaluate_at_length says why a length is not applicable instead of clipping it") {
  const std::vector<TokenId> tokens(100, 1);
  auto learned = make_test_model({"learned", 1, 8, 2}, ModelConfig{.vocab_size = 5, .context = 8});
  const nlohmann::json past_table = evaluate_at_length(*learned, tokens, 16, 8);
  CHECK(past_table["non_overlapping"].is_null());
  CHECK(past_table["note"].get<std::string>() == "not applicable: the learned table has 8 rows");
  auto rope = make_test_model({"rope", 1, 8, 2}, ModelConfig{.vocab_size = 5, .context = 8});
  CHECK(evaluate_at_length(*rope, tokens, 200, 100)["note"].get<std::string>() ==
        "not applicable: longer than the model's maximum context 128");
  const nlohmann::json row = evaluate_at_length(*rope, tokens, 16, 8);
  CHECK(std::isfinite(row["non_overlapping"].get<double>()));
  CHECK(std::isfinite(row["sliding"].get<double>()));
}

TEST_CASE("evaluate_at_length with bins takes the non-overlapping loss from the pass by position") {
  std::vector<TokenId> tokens(203);  // 202 targets: 12 full windows of 16 and a last one of 10
  for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<TokenId>((i * 7 + i / 5) % 5);
  for (const char* policy : {"rope", "learned", "alibi"}) {
    INFO(policy);
    // PyTorch's init: targets' losses far apart, so leaving the last window out would show
    auto model = make_test_model({policy, 1, 8, 2},
                                 ModelConfig{.vocab_size = 5, .context = 16, .init = InitScheme::pytorch});
    const nlohmann::json plain = evaluate_at_length(*model, tokens, 16, 8);
    const nlohmann::json binned = evaluate_at_length(*model, tokens, 16, 8, 4);
    CHECK(!plain.contains("per_position"));
    // the same targets summed in another order: equal to float rounding
    CHECK(binned["non_overlapping"].get<double>() ==
          Approx(model->evaluate_loss(tokens, 16, 32, {}).loss).epsilon(1e-6));
    CHECK(binned["non_overlapping"].get<double>() == Approx(plain["non_overlapping"].get<double>()).epsilon(1e-6));
    CHECK(binned["sliding"] == plain["sliding"]);
    CHECK(binned["per_position"] == per_position_at_length(*model, tokens, 16, 4));
    CHECK(binned["per_position"]["windows"] == 12);
  }
  // a split of whole windows has no last window to score apart
  auto rope = make_test_model({"rope", 1, 8, 2}, ModelConfig{.vocab_size = 5, .context = 16});
  const std::vector<TokenId> whole(tokens.begin(), tokens.begin() + 16 * 12 + 1);
  CHECK(evaluate_at_length(*rope, whole, 16, 8, 4)["non_overlapping"].get<double>() ==
        Approx(rope->evaluate_loss(whole, 16, 32, {}).loss).epsilon(1e-6));
}
