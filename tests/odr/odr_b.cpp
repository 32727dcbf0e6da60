// ODR test, second translation unit: the same header, the same template instantiation and others.
#include <posenc/transformer.hpp>

double train_in_unit_b() {
  posenc::CharTransformer<posenc::RoPE, 1, 8, 2, double> model(6, 4, 1);
  posenc::AdamW optimizer(model);
  posenc::Tokens x = {{0, 1, 2, 3}}, y = {{1, 2, 3, 4}};
  posenc::TextDataset data("abcabcabc");
  return posenc::train_step(model, x, y, optimizer) + 0.0 * static_cast<double>(data.vocab_size());
}
