// RopeOptions: the command-line options of a rotary policy's base and scaling, for every program that builds a model.
#pragma once

#include <CLI/CLI.hpp>

#include <cmath>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <posenc/encodings/rope_scaling.hpp>

#include "run_options.hpp"

namespace examples {

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
    if (given("--rope-base")) scaling.base = base_;
    if (given("--rope-scaling")) scaling.method = *posenc::parse_rope_scaling(method_);
    if (given("--rope-factor")) scaling.factor = factor_;
    if (given("--rope-original-context")) scaling.original_context = original_context_;
    if (given("--yarn-beta-fast")) scaling.beta_fast = beta_fast_;
    if (given("--yarn-beta-slow")) scaling.beta_slow = beta_slow_;
    if (given("--yarn-attention-factor")) scaling.attention_factor = attention_factor_;
    // an option the method does not read would be recorded and change nothing
    for (const auto& [option, setting] : settings_)
      if (given(option) && !posenc::rope_scaling_reads(scaling.method, setting))
        posenc::fail(option, ": read by ", posenc::rope_scaling_readers(setting), ", not by the scaling '",
                     posenc::rope_scaling_name(scaling.method), "'",
                     given("--rope-scaling") ? "" : " (give --rope-scaling)");
    if (scaling.method == posenc::RopeScalingMethod::none) scaling.factor = 1;
    scaling.validate();
    return scaling;
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
  // each option and the setting it gives (rope_scaling_reads' names)
  static constexpr std::pair<const char*, std::string_view> settings_[] = {
      {"--rope-base", "base"},
      {"--rope-factor", "factor"},
      {"--rope-original-context", "original_context"},
      {"--yarn-beta-fast", "beta_fast"},
      {"--yarn-beta-slow", "beta_slow"},
      {"--yarn-attention-factor", "attention_factor"},
  };
  CLI::App& app_;
  double base_ = 10000, factor_ = 1, beta_fast_ = 32, beta_slow_ = 1, attention_factor_ = 1;
  std::string method_ = "none";
  std::size_t original_context_ = 0;
  std::vector<std::string> names_;
};

}  // namespace examples
