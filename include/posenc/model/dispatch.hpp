// ModelSize and with_model(): a runtime policy name and model size onto the compile-time CharTransformer.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <tuple>

#include "posenc/config.hpp"
#include "posenc/encodings/all.hpp"
#include "posenc/model/aliases.hpp"
#include "posenc/model/char_transformer.hpp"

namespace posenc {

template <std::size_t L, std::size_t D, std::size_t H>
struct ModelSize {
  static constexpr std::size_t layers = L, dim = D, heads = H;
};

// The sizes the command-line programs are compiled for: the study's model, and a small one for
// quick trials and tests. Each (policy, size) pair is one instantiation of CharTransformer.
using DefaultModelSizes = std::tuple<ModelSize<study_layers, study_dim, study_heads>, ModelSize<2, 64, 4>>;

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
