// ModelShape, ModelSize, DefaultModelSizes, with_model_size(): a model named at run time, and the sizes compiled.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <tuple>

#include "posenc/config.hpp"
#include "posenc/model/aliases.hpp"

namespace posenc {

// What a command line names: the positional encoding and the size.
struct ModelShape {
  std::string posenc = "rope";
  std::size_t layers = study_layers, dim = study_dim, heads = study_heads;
};

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

// The error for a size a program is not built for, naming the sizes it is built for and, when
// the program says, how to build another.
template <class Sizes>
[[noreturn]] void fail_unbuilt_model_size(std::size_t layers, std::size_t dim, std::size_t heads,
                                          std::string_view how_to_add = {}) {
  fail("this program is not built for a model of ", layers, " layers, dim ", dim, ", ", heads,
       " heads; it is built for: ", model_sizes_text<Sizes>(), how_to_add.empty() ? "" : "; ", how_to_add);
}

}  // namespace posenc
