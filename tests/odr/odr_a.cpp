// ODR test, first translation unit: includes the umbrella header and trains a tiny model.
#include <posenc/transformer.hpp>

double train_in_unit_a() {
  posenc::CharTransformer<posenc::RoPE, 1, 8, 2, double> model(6, 4, 1);
  posenc::AdamW optimizer(model);
  posenc::Tokens x = {{0, 1, 2, 3}}, y = {{1, 2, 3, 4}};
  return posenc::train_step(model, x, y, optimizer);
}
