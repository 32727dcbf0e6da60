// with_policy() and with_model(): a runtime policy name and model size onto the compile-time classes, from one table each.
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
#include "posenc/encodings/fire.hpp"
#include "posenc/encodings/kerple.hpp"
#include "posenc/encodings/learned.hpp"
#include "posenc/encodings/nope.hpp"
#include "posenc/encodings/rope.hpp"
#include "posenc/encodings/sinusoidal.hpp"
#include "posenc/encodings/t5_bias.hpp"
#include "posenc/encodings/xpos.hpp"
#include "posenc/model/char_transformer.hpp"

namespace posenc {

// Every policy a name can select; adding a policy here makes it reachable from the command line.
using AllPolicies = std::tuple<NoPE, Learned, Sinusoidal, RoPE, ALiBi, ALiBiSingleSlope, RoPEInterleaved,
                               RoPEPartial, T5Bias, Kerple, FIRE, XPos>;

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

template <std::size_t L, std::size_t D, std::size_t H>
struct ModelSize {
  static constexpr std::size_t layers = L, dim = D, heads = H;
};

// The sizes the command-line programs are compiled for: the study's model, and a small one for
// quick trials and tests. Each (policy, size) pair is one instantiation of CharTransformer.
using DefaultModelSizes = std::tuple<ModelSize<3, 192, 4>, ModelSize<2, 64, 4>>;

template <class Sizes = DefaultModelSizes>
std::string model_sizes_text() {
  return [&]<class... Size>(std::tuple<Size...>*) {
    std::string text;
    ((text += (text.empty() ? "" : ", ") + std::to_string(Size::layers) + " layers × dim " +
              std::to_string(Size::dim) + " × " + std::to_string(Size::heads) + " heads"),
     ...);
    return text;
  }(static_cast<Sizes*>(nullptr));
}

// Calls f.template operator()<Size>() for the Size in Sizes with these dimensions; false when
// Sizes has none.
template <class Sizes, class F>
bool with_model_size(std::size_t layers, std::size_t dim, std::size_t heads, F&& f) {
  return [&]<class... Size>(std::tuple<Size...>*) {
    return ((layers == Size::layers && dim == Size::dim && heads == Size::heads
                 ? (f.template operator()<Size>(), true)
                 : false) ||
            ...);
  }(static_cast<Sizes*>(nullptr));
}

// The error for a size a program is not built for, naming the sizes it is built for.
template <class Sizes>
[[noreturn]] void fail_unbuilt_model_size(std::size_t layers, std::size_t dim, std::size_t heads) {
  fail("this program is not built for a model of ", layers, " layers, dim ", dim, ", ", heads,
       " heads; it is built for: ", model_sizes_text<Sizes>());
}

// Calls f.template operator()<Model>() with Model = CharTransformer<policy, layers, dim, heads>
// for a size listed in Sizes; throws posenc::Error naming the sizes there are otherwise.
template <class Sizes = DefaultModelSizes, class F>
void with_model(std::string_view policy, std::size_t layers, std::size_t dim, std::size_t heads, F&& f) {
  with_policy(policy, [&]<class P>() {
    if (!with_model_size<Sizes>(layers, dim, heads, [&]<class Size>() {
          f.template operator()<CharTransformer<P, Size::layers, Size::dim, Size::heads>>();
        }))
      fail_unbuilt_model_size<Sizes>(layers, dim, heads);
  });
}

}  // namespace posenc
