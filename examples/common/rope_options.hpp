// RopeOptions: the command-line options of a rotary policy's base and scaling, for every program that builds a model.
#pragma once

#include <CLI/CLI.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
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
// (rope-scaling's name) and numbers among rope-factor and rope_scaling_settings' options
// (rope-base, rope-original-context, yarn-beta-fast, …), over `scaling`; checked, errors naming
// each setting as `spelled` writes it (--rope-factor for the programs, rope_factor for Python).
inline posenc::RopeScaling apply_rope_settings(posenc::RopeScaling scaling, const std::optional<std::string>& method,
                                               const std::vector<std::pair<std::string, double>>& numbers,
                                               const std::function<std::string(std::string_view)>& spelled) {
  if (method) {
    const auto parsed = posenc::parse_rope_scaling(*method);
    if (!parsed)
      posenc::fail(spelled("rope-scaling"), " '", *method, "': expected one of ",
                   posenc::name_list(posenc::rope_scaling_names.names()));
    scaling.method = *parsed;
  }
  for (const auto& [option, value] : numbers) {
    std::string_view setting = "factor";
    if (option == "rope-factor") {
      scaling.factor = value;
    } else {
      const auto* found = std::find_if(posenc::rope_scaling_settings.begin(), posenc::rope_scaling_settings.end(),
                                       [&option](const auto& s) { return s.option == option; });
      if (found == posenc::rope_scaling_settings.end())
        posenc::fail("apply_rope_settings: no rotary setting is given by '", option, "'");
      if (found->whole ? !(value >= found->above && value == std::floor(value) &&
                           value <= static_cast<double>(longest_context))
                       : !(value > found->above && std::isfinite(value)))
        posenc::fail(spelled(option), ": ", found->whole ? "a whole number in [" : "a finite number > ", found->above,
                     found->whole ? ", " + std::to_string(longest_context) + "]" : "", ", got ", value);
      found->set(scaling, value);
      setting = found->name;
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

// Adds --rope-scaling, --rope-factor and an option for each of rope_scaling_settings (--rope-base,
// --rope-original-context, YaRN's) to `app`; apply() puts those given over a RopeScaling (a
// checkpoint's, or the default).
class RopeOptions {
 public:
  explicit RopeOptions(CLI::App& app) : app_(app) {
    add(app.add_option("--rope-scaling", method_,
                       "How a rotary policy reaches past its trained context: none, linear (position interpolation), "
                       "ntk (NTK-aware base), dynamic-ntk (NTK by the sequence's length) or yarn")
            ->check(CLI::IsMember(posenc::rope_scaling_names.names())));
    add(app.add_option("--rope-factor", factor_, "The context to reach over the trained one (> 1 to scale)")
            ->check(number_in(1, 1e6, "a number in [1, 1e6]")));
    for (std::size_t i = 0; i < posenc::rope_scaling_settings.size(); ++i) {
      const posenc::RopeScalingSetting& setting = posenc::rope_scaling_settings[i];
      add(app.add_option("--" + std::string(setting.option), values_[i], std::string(setting.help))
              ->check(setting.whole ? whole_number_in(static_cast<std::uint64_t>(setting.above), longest_context)
                                    : number_in(std::nextafter(setting.above, 1e300), 1e300,
                                                "a number > " + std::to_string(static_cast<int>(setting.above)))));
    }
  }

  // `scaling` with every option given on the command line replacing its field; checked.
  posenc::RopeScaling apply(posenc::RopeScaling scaling) const {
    std::optional<std::string> method;
    if (given("--rope-scaling")) method = method_;
    std::vector<std::pair<std::string, double>> numbers;
    if (given("--rope-factor")) numbers.emplace_back("rope-factor", factor_);
    for (std::size_t i = 0; i < posenc::rope_scaling_settings.size(); ++i)
      if (const std::string option(posenc::rope_scaling_settings[i].option); given("--" + option))
        numbers.emplace_back(option, values_[i]);
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
  double factor_ = 1;
  std::array<double, posenc::rope_scaling_settings.size()> values_{};  // each setting's, where given
  std::string method_ = "none";
  std::vector<std::string> names_;
};

}  // namespace examples
