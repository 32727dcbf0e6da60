// Must compile: the same shape of program as the compile-fail cases, with a valid configuration.
#include <posenc/transformer.hpp>

int main() {
  posenc::CharTransformer<posenc::RoPE, 1, 8, 2> model(5, 4);
  return model.parameter_count() > 0 ? 0 : 1;
}
