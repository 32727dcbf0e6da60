// RopeOptions: the command-line options of a rotary policy's base and scaling, for every program that builds a model.
#pragma once

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <posenc/encodings/rope_scaling.hpp>

#include "run_options.hpp"

namespace examples {

// The rotary settings a user gave, by the programs' option names without their dashes: the method
// (rope-scaling's name) and numbers among rope-base, rope-factor, rope-original-context,
// yarn-beta-fast, yarn-beta-slow and yarn-attention-factor, over `scaling`; checked, errors naming
// each setting as `spelled` writes it (--rope-factor for the programs, rope_factor for Python).
inline posenc::RopeScaling apply_rope_settings(posenc::RopeScaling scaling, const std::optional<std::string>& method,
                                               const std::vector<std::pair<std::string, double>>& numbers,
                                               const std::function<std::string(std::string_view)>& spelled) {
  // each option and the setting it gives (rope_scaling_reads' names)
  static constexpr std::pair<std::string_view, std::string_view> settings[] = {
      {"rope-base", "base"},           {"rope-factor", "factor"},       {"rope-original-context", "original_context"},
      {"yarn-beta-fast", "beta_fast"}, {"yarn-beta-slow", "beta_slow"}, {"yarn-attention-factor", "attention_factor"},
  };
  if (method) {
    const auto parsed = posenc::parse_rope_scaling(*method);
    if (!parsed)
      posenc::fail(spelled("rope-scaling"), " '", *method, "': expected one of ",
                   posenc::name_list(posenc::rope_scaling_names.names()));
    scaling.method = *parsed;
  }
  for (const auto& [option, value] : numbers) {
    const auto* entry = std::find_if(std::begin(settings), std::end(settings),
                                     [&option](const auto& e) { return e.first == option; });
    if (entry == std::end(settings)) posenc::fail("apply_rope_settings: no rotary setting is named '", option, "'");
    const std::string_view setting = entry->second;
    if (setting == "factor") {
      scaling.factor = value;
    } else {
      const posenc::RopeScalingSetting* found = posenc::find_rope_scaling_setting(setting);
      if (found->whole && !(value >= 0 && value == std::floor(value) && value <= static_cast<double>(longest_context)))
        posenc::fail(spelled(option), ": a whole number in [0, ", longest_context, "], got ", value);
      found->set(scaling, value);
    }
    // a setting the method does not read would be recorded and change nothing
    if (!posenc::rope_scaling_reads(scaling.method, setting))
      posenc::fail(spelled(option), ": read by ", posenc::rope_scaling_readers(setting), ", not by the scaling '",
                   posenc::rope_scaling_name(scaling.method), "'",
                   method ? "" : " (give " + spelled("rope-scaling") + ")");
  }
  if (scaling.method == posenc::RopeScalingMethod::none) scaling.factor = 1;
  scaling.validate();
  return scaling;
}

// Adds --rope-base, --rope-scaling, --rope-factor, --rope-original-context and YaRN's settings to
// `app`; apply() puts those given over a RopeScaling (a checkpoint's, or the default).
class RopeOptions {
 public:
  explicit RopeOptions(CLI::App& app) : app_(app) {
    add(app.add_option("--rope-base", base_, "A rotary policy's base θ, replacing its own (10000)")
            ->check(number_in(std::nextafter(1.0, 2.0), 1e300, "a number > 1")));
    add(app.add_option("--rope-scaling", method_,
                       "How a rotary policy reaches past its trained context: none, linear (position interpolation), "
                       "ntk (NTK-aware base), dynamic-ntk (NTK by the sequence's length) or yarn")
            ->check(CLI::IsMember(posenc::rope_scaling_names.names())));
    add(app.add_option("--rope-factor", factor_, "The context to reach over the trained one (> 1 to scale)")
            ->check(number_in(1, 1e6, "a number in [1, 1e6]")));
    add(app.add_option("--rope-original-context", original_context_,
                       "The trained context the factor stretches (0: the model's)")
            ->check(whole_number_in(0, longest_context)));
    add(app.add_option("--yarn-beta-fast", beta_fast_,
                       "YaRN: pairs turning more often over the trained context keep their angles (32)")
            ->check(positive_number));
    add(app.add_option("--yarn-beta-slow", beta_slow_,
                       "YaRN: pairs turning less often are interpolated by the factor (1)")
            ->check(positive_number));
    add(app.add_option("--yarn-attention-factor", attention_factor_,
                       "YaRN: the magnitude on the rotated dimensions of q and k, replacing 0.1·ln(factor) + 1")
            ->check(positive_number));
  }

  // `scaling` with every option given on the command line replacing its field; checked.
  posenc::RopeScaling apply(posenc::RopeScaling scaling) const {
    std::optional<std::string> method;
    if (given("--rope-scaling")) method = method_;
    std::vector<std::pair<std::string, double>> numbers;
    const std::pair<const char*, double> values[] = {
        {"rope-base", base_},           {"rope-factor", factor_},
        {"rope-original-context", static_cast<double>(original_context_)},
        {"yarn-beta-fast", beta_fast_}, {"yarn-beta-slow", beta_slow_},
        {"yarn-attention-factor", attention_factor_}};
    for (const auto& [name, value] : values)
      if (given("--" + std::string(name))) numbers.emplace_back(name, value);
    return apply_rope_settings(scaling, method, numbers,
                               [](std::string_view name) { return "--" + std::string(name); });
  }
  bool any_given() const {
    for (const std::string& name : names_)
      if (given(name)) return true;
    return false;
  }
  const std::vector<std::string>& names() const { return names_; }

 private:
  bool given(const std::string& name) const { return app_.count(name) > 0; }
  void add(CLI::Option* option) { names_.push_back(option->get_name()); }
  CLI::App& app_;
  double base_ = 10000, factor_ = 1, beta_fast_ = 32, beta_slow_ = 1, attention_factor_ = 1;
  std::string method_ = "none";
  std::size_t original_context_ = 0;
  std::vector<std::string> names_;
};

}  // namespace examples
