// AllPolicies: every positional encoding, listed once; programs, tests, benchmarks and --list-posenc iterate it.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "posenc/config.hpp"
#include "posenc/encodings/alibi.hpp"
#include "posenc/encodings/concept.hpp"
#include "posenc/encodings/fire.hpp"
#include "posenc/encodings/kerple.hpp"
#include "posenc/encodings/learned.hpp"
#include "posenc/encodings/nope.hpp"
#include "posenc/encodings/rope.hpp"
#include "posenc/encodings/sinusoidal.hpp"
#include "posenc/encodings/t5_bias.hpp"
#include "posenc/encodings/xpos.hpp"

namespace posenc {

// The registry. A policy listed here can be chosen by name in both programs, is trained, checked
// and cross-checked with PyTorch by every per-policy test, and is benchmarked; adding one is its
// header, one entry here, its formula test and its PyTorch twin (docs/architecture.md).
using AllPolicies = std::tuple<NoPE, Learned, Sinusoidal, RoPE, ALiBi, ALiBiSingleSlope, RoPEInterleaved,
                               RoPEPartial, T5Bias, Kerple, FIRE, XPos>;

namespace detail {
template <class... P>
consteval bool policy_names_distinct(std::tuple<P...>*) {
  const std::string_view names[] = {P::name...};
  for (std::size_t i = 0; i < sizeof...(P); ++i)
    for (std::size_t j = i + 1; j < sizeof...(P); ++j)
      if (names[i] == names[j]) return false;
  return true;
}
template <class... P>
consteval bool all_positional_encodings(std::tuple<P...>*) {
  return (PositionalEncoding<P> && ...);
}
}  // namespace detail
static_assert(detail::all_positional_encodings(static_cast<AllPolicies*>(nullptr)),
              "AllPolicies: every entry must be a positional-encoding policy (encodings/concept.hpp)");
static_assert(detail::policy_names_distinct(static_cast<AllPolicies*>(nullptr)),
              "AllPolicies: two policies share a name, so the command line could not tell them apart");

namespace detail {
template <class... P>
auto rotary_subset(std::tuple<P...>*)
    -> decltype(std::tuple_cat(std::conditional_t<is_rotary_policy<P>, std::tuple<P>, std::tuple<>>{}...));
template <class... P>
consteval bool rotary_policies_state_their_base(std::tuple<P...>*) {
  return ((!is_rotary_policy<P> || requires { P::base; }) && ...);
}
}  // namespace detail

// The rotary policies of the registry (is_rotary_policy: they take a RoPE base and scaling), in
// its order: for tests and benchmarks of every rotary policy.
using RotaryPolicies = decltype(detail::rotary_subset(static_cast<AllPolicies*>(nullptr)));
static_assert(detail::rotary_policies_state_their_base(static_cast<AllPolicies*>(nullptr)),
              "AllPolicies: a rotary policy states the base it turns with (P::base), which --rope-base replaces");

// Calls f.template operator()<P>() for each policy P of AllPolicies, in the registry's order.
template <class F>
void for_each_policy(F&& f) {
  [&]<class... P>(std::tuple<P...>*) { (f.template operator()<P>(), ...); }(static_cast<AllPolicies*>(nullptr));
}

inline std::vector<std::string> policy_names() {
  std::vector<std::string> names;
  for_each_policy([&]<class P>() { names.emplace_back(P::name); });
  return names;
}

// "rope, rope-interleaved, …": names as a message lists them.
inline std::string name_list(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& n : names) text += (text.empty() ? "" : ", ") + n;
  return text;
}

// Calls f.template operator()<P>() for the policy P named `name` and returns its result;
// throws posenc::Error listing the known names when there is none.
template <class F>
decltype(auto) with_policy(std::string_view name, F&& f) {
  using Result = decltype(f.template operator()<NoPE>());
  auto unknown = [&] {
    fail("unknown positional encoding '", name, "'; expected one of: ", name_list(policy_names()));
  };
  return [&]<class... P>(std::tuple<P...>*) -> Result {
    if constexpr (std::is_void_v<Result>) {
      const bool found = ((name == P::name ? (f.template operator()<P>(), true) : false) || ...);
      if (!found) unknown();
    } else {
      std::optional<Result> result;
      static_cast<void>(((name == P::name ? (result.emplace(f.template operator()<P>()), true) : false) || ...));
      if (!result) unknown();
      return std::move(*result);
    }
  }(static_cast<AllPolicies*>(nullptr));
}

// Whether the policy named `name` takes a RoPE base and scaling (is_rotary_policy).
inline bool rotary_policy(std::string_view name) {
  return with_policy(name, []<class P>() { return is_rotary_policy<P>; });
}

// The names of the rotary policies, in the registry's order.
inline std::vector<std::string> rotary_policy_names() {
  std::vector<std::string> names;
  for_each_policy([&]<class P>() {
    if constexpr (is_rotary_policy<P>) names.emplace_back(P::name);
  });
  return names;
}

// The base the rotary policy named `name` turns with before any --rope-base (P::base); an error
// naming the rotary policies for another.
inline double rotary_base(std::string_view name) {
  return with_policy(name, [&]<class P>() -> double {
    if constexpr (is_rotary_policy<P>) return P::base;
    else fail("policy '", name, "' does not turn q and k; the rotary policies are ", name_list(rotary_policy_names()));
  });
}

}  // namespace posenc
