// RopeScaling, rope_frequencies: a rotary encoding's base and its stretch past the trained context, chosen at run time.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <numbers>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "posenc/config.hpp"
#include "posenc/enum_names.hpp"

namespace posenc {

// How a rotary encoding reaches past the context it was trained at (the methods of llama.cpp's
// --rope-scaling, x-transformers and the YaRN paper's reference code, scaled_rope).
enum class RopeScalingMethod {
  none,         // the trained angles
  linear,       // Position Interpolation (Chen et al. 2023): positions divided by the factor
  ntk,          // NTK-aware (bloc97): the base raised to base·s^(r/(r−2)), every pair's angle kept at the highest
  dynamic_ntk,  // NTK with s from the sequence's length: s' = s·T/L − (s − 1) once T > L (Hugging Face)
  yarn,         // YaRN (Peng et al. 2023): NTK-by-parts interpolation, the rotated q and k scaled by 0.1·ln s + 1
};

inline constexpr EnumNames<RopeScalingMethod, 5> rope_scaling_names{"rope scaling",
                                                                    {{{RopeScalingMethod::none, "none"},
                                                                      {RopeScalingMethod::linear, "linear"},
                                                                      {RopeScalingMethod::ntk, "ntk"},
                                                                      {RopeScalingMethod::dynamic_ntk, "dynamic-ntk"},
                                                                      {RopeScalingMethod::yarn, "yarn"}}}};
static_assert(rope_scaling_names.in_order());

inline std::string_view rope_scaling_name(RopeScalingMethod method) { return rope_scaling_names.name(method); }

inline std::optional<RopeScalingMethod> parse_rope_scaling(std::string_view name) {
  for (const auto& [m, n] : rope_scaling_names.entries)
    if (n == name) return m;
  return std::nullopt;
}

// A rotary policy's run-time settings. The default changes nothing.
struct RopeScaling {
  RopeScalingMethod method = RopeScalingMethod::none;
  double factor = 1;                // s: the context to reach over the original one
  std::optional<double> base = std::nullopt;  // replaces the policy's base (llama.cpp's --rope-freq-base)
  std::size_t original_context = 0;  // L, the trained context s stretches; 0: the model's training context
  // YaRN: pairs turning more than beta_fast times over L keep their angles, fewer than beta_slow
  // times are interpolated, a linear ramp between (the paper's α = 1, β = 32).
  double beta_fast = 32, beta_slow = 1;
  // YaRN's magnitude on the rotated dimensions of q and k; by default 0.1·ln s + 1
  std::optional<double> attention_factor = std::nullopt;

  bool scales() const { return method != RopeScalingMethod::none; }
  bool changes_anything() const { return scales() || base.has_value(); }
  // Whether a position's angles depend on the sequence's length (dynamic NTK): every key of a
  // longer sequence turns again, which a cache of turned keys cannot follow.
  bool depends_on_length() const { return method == RopeScalingMethod::dynamic_ntk; }
  bool operator==(const RopeScaling&) const = default;

  // Throws posenc::Error naming the first setting out of its range.
  void validate() const {
    if (base && !(*base > 1 && std::isfinite(*base)))
      fail("rope scaling: the base must be a finite number > 1, got ", *base);
    if (!(factor >= 1 && std::isfinite(factor)))
      fail("rope scaling: the factor must be a finite number ≥ 1, got ", factor);
    if (scales() && factor == 1)
      fail("rope scaling: ", rope_scaling_name(method), " needs a factor > 1 (--rope-factor)");
    if (!(beta_fast > beta_slow && beta_slow > 0 && std::isfinite(beta_fast)))
      fail("rope scaling: YaRN needs 0 < beta_slow < beta_fast, got beta_slow ", beta_slow, " and beta_fast ",
           beta_fast);
    if (attention_factor && !(*attention_factor > 0 && std::isfinite(*attention_factor)))
      fail("rope scaling: the attention factor must be a finite number > 0, got ", *attention_factor);
  }

  // One line for logs and reports, e.g. "yarn ×4 (base 10000, L 128)".
  std::string describe(double policy_base, std::size_t context) const;
  // The settings that differ from their defaults, as NAME and value, in rope_scaling_settings' order
  // (the names a scaling spec takes).
  std::vector<std::pair<std::string, double>> changed_settings() const;
  // The method and factor and any changed setting, e.g. "yarn ×4" or "yarn ×4 beta_fast=16";
  // "base=500000" for a new base alone; "none" for the trained angles.
  std::string label() const;
};

// A scaling's settings besides its method and factor, by the names a scaling spec, labels,
// messages and the JSON of checkpoints and run configurations use: which methods read each, its
// value, and how a value is set (whole: only a whole number ≥ 1 is a value). One table drives the
// spec parser, changed_settings(), the JSON and the CLI's checks.
struct RopeScalingSetting {
  std::string_view name;
  bool (*read_by)(RopeScalingMethod);
  // nullopt where none is given (the model's own base, the trained context, YaRN's derived
  // magnitude); the beta values always have one
  std::optional<double> (*value)(const RopeScaling&);
  void (*set)(RopeScaling&, double);
  bool whole = false;
  // The programs' command-line option that gives it (without the dashes; Python's keyword with
  // '_'), the bound its value must exceed (or, whole, reach), and the option's help.
  std::string_view option = {};
  double above = 0;
  std::string_view help = {};

  // Its value in r where that differs from the default's, else nullopt.
  std::optional<double> changed(const RopeScaling& r) const {
    const auto v = value(r);
    return v != value(RopeScaling{}) ? v : std::nullopt;
  }
};

// the base by every method, original_context by those whose angles depend on L, YaRN's ramp and
// magnitude by yarn only
inline constexpr std::array<RopeScalingSetting, 5> rope_scaling_settings = {{
    {"base", [](RopeScalingMethod) { return true; },
     [](const RopeScaling& r) { return r.base; }, [](RopeScaling& r, double v) { r.base = v; }, false, "rope-base", 1,
     "A rotary policy's base θ, replacing its own (10000)"},
    {"original_context",
     [](RopeScalingMethod m) { return m == RopeScalingMethod::dynamic_ntk || m == RopeScalingMethod::yarn; },
     [](const RopeScaling& r) {
       return r.original_context != 0 ? std::optional<double>(static_cast<double>(r.original_context)) : std::nullopt;
     },
     [](RopeScaling& r, double v) { r.original_context = static_cast<std::size_t>(v); }, true,
     "rope-original-context", 0, "The trained context the factor stretches (0: the model's)"},
    {"beta_fast", [](RopeScalingMethod m) { return m == RopeScalingMethod::yarn; },
     [](const RopeScaling& r) { return std::optional(r.beta_fast); },
     [](RopeScaling& r, double v) { r.beta_fast = v; }, false, "yarn-beta-fast", 0,
     "YaRN: pairs turning more often over the trained context keep their angles (32)"},
    {"beta_slow", [](RopeScalingMethod m) { return m == RopeScalingMethod::yarn; },
     [](const RopeScaling& r) { return std::optional(r.beta_slow); },
     [](RopeScaling& r, double v) { r.beta_slow = v; }, false, "yarn-beta-slow", 0,
     "YaRN: pairs turning less often are interpolated by the factor (1)"},
    {"attention_factor", [](RopeScalingMethod m) { return m == RopeScalingMethod::yarn; },
     [](const RopeScaling& r) { return r.attention_factor; },
     [](RopeScaling& r, double v) { r.attention_factor = v; }, false, "yarn-attention-factor", 0,
     "YaRN: the magnitude on the rotated dimensions of q and k, replacing 0.1·ln(factor) + 1"},
}};

inline const RopeScalingSetting* find_rope_scaling_setting(std::string_view name) {
  for (const RopeScalingSetting& setting : rope_scaling_settings)
    if (setting.name == name) return &setting;
  return nullptr;
}

// Whether `method` reads `setting`: "factor" (read by every scaling) or a rope_scaling_settings
// name. A setting given to a method that does not read it would be recorded and change nothing.
inline bool rope_scaling_reads(RopeScalingMethod method, std::string_view setting) {
  if (setting == "factor") return method != RopeScalingMethod::none;
  const RopeScalingSetting* found = find_rope_scaling_setting(setting);
  if (found == nullptr) fail("rope scaling: no setting is named '", setting, "'");
  return found->read_by(method);
}

// The methods that read `setting`, as a list for messages: "dynamic-ntk and yarn".
inline std::string rope_scaling_readers(std::string_view setting) {
  std::vector<std::string_view> readers;
  for (const auto& [method, name] : rope_scaling_names.entries)
    if (rope_scaling_reads(method, setting)) readers.push_back(name);
  std::string list;
  for (std::size_t i = 0; i < readers.size(); ++i)
    list.append(i == 0 ? "" : i + 1 == readers.size() ? " and " : ", ").append(readers[i]);
  return list;
}

inline std::vector<std::pair<std::string, double>> RopeScaling::changed_settings() const {
  std::vector<std::pair<std::string, double>> changed;
  for (const RopeScalingSetting& setting : rope_scaling_settings)
    if (const auto value = setting.changed(*this)) changed.emplace_back(setting.name, *value);
  return changed;
}

// `scaling` applied to a model whose own settings are `own` (a checkpoint's --rope-base, say): its
// method and factor, and each setting it changes from the default; every other setting the model's.
inline RopeScaling rope_scaling_over(RopeScaling own, const RopeScaling& scaling) {
  own.method = scaling.method;
  own.factor = scaling.factor;
  for (const RopeScalingSetting& setting : rope_scaling_settings)
    if (const auto value = setting.changed(scaling)) setting.set(own, *value);
  return own;
}

// A scaling written METHOD:FACTOR[:NAME=VALUE…] (linear:4, ntk:8, dynamic-ntk:8, yarn:8,
// yarn:8:beta_fast=16:base=500), NAME one of rope_scaling_settings' names that the method reads,
// every other setting its default; or base=B alone, a new base without a scaling (as llama.cpp's
// --rope-freq-base; Llama 2 Long fine-tuned at base 500,000). posenc::Error saying what is wrong
// otherwise.
inline RopeScaling parse_rope_scaling_spec(std::string_view text) {
  std::vector<std::string> parts;
  for (std::size_t start = 0;;) {
    const std::size_t colon = text.find(':', start);
    parts.emplace_back(text.substr(start, colon == std::string_view::npos ? colon : colon - start));
    if (colon == std::string_view::npos) break;
    start = colon + 1;
  }
  // base=B: the method none and its factor 1 in front of the settings
  const bool base_alone = parts.size() == 1 && parts[0].rfind("base=", 0) == 0;
  if (base_alone) parts.insert(parts.begin(), {"none", "1"});
  const auto parsed = parse_rope_scaling(parts[0]);
  if (!parsed || (*parsed == RopeScalingMethod::none && !base_alone) || parts.size() < 2)
    fail("rope scaling '", text,
         "': expected METHOD:FACTOR with METHOD linear, ntk, dynamic-ntk or yarn, e.g. yarn:8, or base=B");
  const auto number = [&](const std::string& value, const std::string& what) {
    char* end = nullptr;
    const double x = std::strtod(value.c_str(), &end);
    if (value.empty() || end != value.c_str() + value.size())
      fail("rope scaling '", text, "': the ", what, " '", value, "' is not a number");
    return x;
  };
  RopeScaling scaling{.method = *parsed, .factor = number(parts[1], "factor")};
  for (std::size_t i = 2; i < parts.size(); ++i) {
    const std::size_t equals = parts[i].find('=');
    const std::string name = parts[i].substr(0, equals);
    if (equals == std::string::npos || equals == 0)
      fail("rope scaling '", text, "': '", parts[i], "' is not NAME=VALUE");
    for (std::size_t j = 2; j < i; ++j)
      if (parts[j].substr(0, parts[j].find('=')) == name) fail("rope scaling '", text, "': ", name, " is given twice");
    const double value = number(parts[i].substr(equals + 1), name);
    const RopeScalingSetting* setting = find_rope_scaling_setting(name);
    if (setting == nullptr) {
      std::string known;
      for (const RopeScalingSetting& s : rope_scaling_settings) known.append(known.empty() ? "" : ", ").append(s.name);
      fail("rope scaling '", text, "': unknown setting '", name, "' (known: ", known, ")");
    }
    if (!setting->read_by(*parsed))
      fail("rope scaling '", text, "': ", name, " is read by ", rope_scaling_readers(name), ", not ", parts[0]);
    if (setting->whole && !(value >= 1 && value == std::floor(value) && value < 1e9))
      fail("rope scaling '", text, "': ", name, " must be a whole number ≥ 1");
    setting->set(scaling, value);
  }
  scaling.validate();
  return scaling;
}

// What a rotary table needs: each pair's angle per position (radians) and the magnitude the
// rotated dimensions of q and k are multiplied by (1 but for YaRN), folded into cos and sin.
struct RopeFrequencies {
  std::vector<double> per_position;  // (rotated/2): pair i turns per_position[i]·p at position p
  double magnitude = 1;
};

namespace detail {
// YaRN's reference code: the (fractional) pair index whose pair turns `rotations` times over L
// positions, of `rotated` dimensions with `base`.
inline double yarn_pair_of_rotations(double rotations, std::size_t rotated, double base, double L) {
  return static_cast<double>(rotated) * std::log(L / (rotations * 2 * std::numbers::pi)) / (2 * std::log(base));
}
}  // namespace detail

// The angles of `rotated` dimensions (pairs 0…rotated/2−1) under `scaling`, for a sequence of T
// positions (only dynamic NTK depends on T) of a model trained at `context`. The policy's own base
// is `policy_base` unless scaling.base replaces it.
inline RopeFrequencies rope_frequencies(double policy_base, std::size_t rotated, const RopeScaling& scaling,
                                        std::size_t T, std::size_t context) {
  const double base = scaling.base.value_or(policy_base);
  const double s = scaling.factor;
  const double L = static_cast<double>(scaling.original_context != 0 ? scaling.original_context : context);
  const double r = static_cast<double>(rotated);
  const std::size_t pairs = rotated / 2;
  auto plain = [&](double b) {
    std::vector<double> f(pairs);
    for (std::size_t i = 0; i < pairs; ++i) f[i] = std::pow(b, -2.0 * static_cast<double>(i) / r);
    return f;
  };
  RopeFrequencies out;
  switch (scaling.method) {
    case RopeScalingMethod::none: out.per_position = plain(base); break;
    case RopeScalingMethod::linear:
      out.per_position = plain(base);
      for (double& f : out.per_position) f /= s;
      break;
    case RopeScalingMethod::ntk: out.per_position = plain(base * std::pow(s, r / (r - 2))); break;
    case RopeScalingMethod::dynamic_ntk: {
      const double t = static_cast<double>(T);
      const double stretch = t > L ? s * t / L - (s - 1) : 1.0;
      out.per_position = plain(base * std::pow(stretch, r / (r - 2)));
      break;
    }
    case RopeScalingMethod::yarn: {
      // ramp 0 below pair `low`, 1 above `high`: 1 interpolates (θ/s), 0 keeps θ
      const double low = std::max(0.0, std::floor(detail::yarn_pair_of_rotations(scaling.beta_fast, rotated, base, L)));
      double high = std::min(static_cast<double>(rotated) - 1,
                             std::ceil(detail::yarn_pair_of_rotations(scaling.beta_slow, rotated, base, L)));
      if (high == low) high += 0.001;
      out.per_position = plain(base);
      for (std::size_t i = 0; i < pairs; ++i) {
        const double ramp = std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0);
        out.per_position[i] *= (1 - ramp) + ramp / s;
      }
      out.magnitude = scaling.attention_factor.value_or(s > 1 ? 0.1 * std::log(s) + 1 : 1.0);
      break;
    }
  }
  return out;
}

// Whether policy P turns q and k by a table a RopeScaling changes: its Attention has
// set_rope_scaling (rope, rope-interleaved, rope-partial, xpos).
template <class P>
inline constexpr bool is_rotary_policy =
    requires(typename P::template Attention<float, 1, 64>& attention, const RopeScaling& scaling) {
      attention.set_rope_scaling(scaling);
    };

inline std::string RopeScaling::label() const {
  const std::vector<std::pair<std::string, double>> changed = changed_settings();
  // "yarn ×8 beta_fast=16", "base=500000" (a new base alone), "none" (the trained angles)
  std::string text = scales() || changed.empty() ? std::string(rope_scaling_name(method)) : std::string();
  char buf[64];
  if (scales()) {
    std::snprintf(buf, sizeof buf, " ×%.15g", factor);
    text += buf;
  }
  for (const auto& [name, value] : changed) {
    std::snprintf(buf, sizeof buf, "%s%s=%.15g", text.empty() ? "" : " ", name.c_str(), value);
    text += buf;
  }
  return text;
}

inline std::string RopeScaling::describe(double policy_base, std::size_t context) const {
  std::string text(rope_scaling_name(method));
  char buf[160];
  if (scales()) {
    std::snprintf(buf, sizeof buf, " ×%g", factor);
    text += buf;
  }
  std::snprintf(buf, sizeof buf, " (base %g, L %zu", base.value_or(policy_base),
                original_context != 0 ? original_context : context);
  text += buf;
  if (method == RopeScalingMethod::yarn) {
    std::snprintf(buf, sizeof buf, ", beta_fast %g, beta_slow %g, magnitude %g", beta_fast, beta_slow,
                  attention_factor.value_or(factor > 1 ? 0.1 * std::log(factor) + 1 : 1.0));
    text += buf;
  }
  return text + ")";
}

}  // namespace posenc
