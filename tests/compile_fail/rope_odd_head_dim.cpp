// Must not compile: RoPE with an odd head dimension (Dim 6 over 2 heads gives 3).
#include <posenc/transformer.hpp>

int main() {
  posenc::CharTransformer<posenc::RoPE, 1, 6, 2> model(5, 4);
  return static_cast<int>(model.parameter_count());
}
