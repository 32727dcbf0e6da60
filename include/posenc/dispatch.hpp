// with_policy(): maps a runtime policy name ("rope") onto the compile-time policy class, from one table.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "posenc/config.hpp"
#include "posenc/encodings/alibi.hpp"
#include "posenc/encodings/learned.hpp"
#include "posenc/encodings/nope.hpp"
#include "posenc/encodings/rope.hpp"
#include "posenc/encodings/sinusoidal.hpp"

namespace posenc {

// Every policy a name can select; adding a policy here makes it reachable from the command line.
using AllPolicies = std::tuple<NoPE, Learned, Sinusoidal, RoPE, ALiBi, ALiBiSingleSlope>;

inline std::vector<std::string> policy_names() {
  return std::apply([](auto... p) { return std::vector<std::string>{std::string(decltype(p)::name)...}; },
                    AllPolicies{});
}

// Calls f.template operator()<P>() for the policy P named `name` and returns its result;
// throws posenc::Error listing the known names when there is none.
template <class F>
decltype(auto) with_policy(std::string_view name, F&& f) {
  using Result = decltype(f.template operator()<NoPE>());
  auto unknown = [&] {
    std::string known;
    for (const std::string& n : policy_names()) known += (known.empty() ? "" : ", ") + n;
    fail("unknown positional encoding '", name, "'; expected one of: ", known);
  };
  return [&]<class... P>(std::tuple<P...>*) -> Result {
    if constexpr (std::is_void_v<Result>) {
      const bool found = ((name == P::name ? (f.template operator()<P>(), true) : false) || ...);
      if (!found) unknown();
    } else {
      std::optional<Result> result;
      ((name == P::name ? (result.emplace(f.template operator()<P>()), true) : false) || ...);
      if (!result) unknown();
      return std::move(*result);
    }
  }(static_cast<AllPolicies*>(nullptr));
}

}  // namespace posenc
