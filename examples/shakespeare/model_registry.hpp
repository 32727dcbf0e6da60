// with_model(): the runtime (policy, layers, dim, heads) of a command line or checkpoint → the compiled CharTransformer.
#pragma once

#include <cstddef>
#include <string>
#include <tuple>

#include <posenc/transformer.hpp>

namespace shakespeare {

template <std::size_t L, std::size_t D, std::size_t H>
struct ModelSize {
  static constexpr std::size_t layers = L, dim = D, heads = H;
};

// The sizes this program is compiled for: the study's model, and a small one for quick trials
// and tests. Each (policy, size) pair is one instantiation of CharTransformer.
using ModelSizes = std::tuple<ModelSize<3, 192, 4>, ModelSize<2, 64, 4>>;

inline std::string model_sizes_text() {
  return std::apply(
      [](auto... s) {
        std::string text;
        ((text += (text.empty() ? "" : ", ") + std::to_string(decltype(s)::layers) + " layers × dim " +
                  std::to_string(decltype(s)::dim) + " × " + std::to_string(decltype(s)::heads) + " heads"),
         ...);
        return text;
      },
      ModelSizes{});
}

// Calls f.template operator()<Model>() with Model = CharTransformer<policy, layers, dim, heads>.
template <class F>
void with_model(const std::string& policy, std::size_t layers, std::size_t dim, std::size_t heads, F&& f) {
  posenc::with_policy(policy, [&]<class P>() {
    const bool found = [&]<class... Size>(std::tuple<Size...>*) {
      return ((layers == Size::layers && dim == Size::dim && heads == Size::heads
                   ? (f.template operator()<posenc::CharTransformer<P, Size::layers, Size::dim, Size::heads>>(), true)
                   : false) ||
              ...);
    }(static_cast<ModelSizes*>(nullptr));
    if (!found)
      posenc::fail("this program is not built for a model of ", layers, " layers, dim ", dim, ", ",
                   heads, " heads; it is built for: ", model_sizes_text());
  });
}

}  // namespace shakespeare
