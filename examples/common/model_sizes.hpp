// ModelSizes: the model sizes posenc's programs are compiled for, set at configure time by POSENC_MODEL_SIZES.
#pragma once

#include <string>
#include <tuple>

#include <posenc/model/model_sizes.hpp>

#include "posenc_model_sizes.hpp"  // generated: using ModelSizes = std::tuple<posenc::ModelSize<L, D, H>, ...>

namespace examples {

// How to build a size the programs lack, keeping the built ones, for --help and for the error
// that names them: "to add one, configure with -DPOSENC_MODEL_SIZES=3x192x4,2x64x4,LxDxH and rebuild".
inline std::string model_size_recipe() {
  const std::string built = []<class... Size>(std::tuple<Size...>*) {
    std::string list;
    ((list += std::to_string(Size::layers) + "x" + std::to_string(Size::dim) + "x" + std::to_string(Size::heads) + ","),
     ...);
    return list;
  }(static_cast<ModelSizes*>(nullptr));
  return "to add one, configure with -DPOSENC_MODEL_SIZES=" + built + "LxDxH and rebuild";
}

inline std::string model_sizes_help() {
  return "built for " + posenc::model_sizes_text<ModelSizes>() + "; " + model_size_recipe();
}

// posenc::Error naming the built sizes when the programs are not built for this one: a program
// checks before it writes anything, so a refused run leaves no files behind.
inline void check_model_size(const posenc::ModelShape& shape) {
  if (!posenc::with_model_size<ModelSizes>(shape.layers, shape.dim, shape.heads, []<class>() {}))
    posenc::fail_unbuilt_model_size<ModelSizes>(shape.layers, shape.dim, shape.heads, model_size_recipe());
}

}  // namespace examples
