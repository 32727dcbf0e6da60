// Trains a small RoPE model for a few steps through the installed package; fails if the loss does not fall.
#include <posenc/transformer.hpp>

#include <cstdio>

int main() {
  posenc::CharDataset data("to be or not to be, that is the question. to be or not to be.");
  posenc::CharTransformer<posenc::RoPE, 2, 32, 4> model(data.vocab_size(), 16, /*seed=*/7);
  posenc::AdamW<float> optimizer(model, {.lr = 3e-3});
  posenc::BatchSampler sampler(data.train(), 8, 16, /*seed=*/7);
  posenc::Tokens x, y;
  float first = 0, last = 0;
  for (int step = 0; step < 30; ++step) {
    sampler.sample(x, y);
    last = posenc::train_step(model, x, y, optimizer);
    if (step == 0) first = last;
  }
  std::printf("posenc %s consumer: loss %.4f -> %.4f over 30 steps\n", posenc::version_string,
              static_cast<double>(first), static_cast<double>(last));
  return last < first ? 0 : 1;
}
