// ModelSizes: the model sizes posenc's programs are compiled for.
#pragma once

#include <tuple>

#include <posenc/model/model_sizes.hpp>

namespace examples {

#if POSENC_EXAMPLES_SMALL_MODEL_ONLY
// The sanitizer build (POSENC_EXAMPLES_SMALL_MODEL_ONLY): its tests train only the small model,
// and every size compiled is one more CharTransformer per policy in each program.
using ModelSizes = std::tuple<posenc::ModelSize<2, 64, 4>>;
#else
using ModelSizes = posenc::DefaultModelSizes;
#endif

}  // namespace examples
