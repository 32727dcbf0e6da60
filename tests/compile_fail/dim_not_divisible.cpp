// Must not compile: Dim 10 cannot be split over 3 heads.
#include <posenc/transformer.hpp>

int main() {
  posenc::CharTransformer<posenc::NoPE, 1, 10, 3> model(5, 4);
  return static_cast<int>(model.parameter_count());
}
