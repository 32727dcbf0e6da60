// Trains small models for a few steps through the installed package, on text and on a task; fails if a loss does not
// fall.
#include <posenc/transformer.hpp>

#include <cstdio>

int main() {
  posenc::TextDataset data("to be or not to be, that is the question. to be or not to be.");
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

  // a synthetic task: copy strings of 1 to 4 letters, the loss on the copies only
  const posenc::TaskData copy(posenc::Task(posenc::TaskKind::copy), {.min = 1, .max = 4});
  posenc::CharTransformer<posenc::ALiBi, 2, 32, 4> copier(copy.vocab_size(), copy.context(), /*seed=*/7);
  posenc::AdamW<float> copier_optimizer(copier, {.lr = 3e-3});
  const auto batches = copy.batches(posenc::Split::train, 16, copy.context(), /*seed=*/7);
  posenc::Batch batch;
  float task_first = 0, task_last = 0;
  for (int step = 0; step < 60; ++step) {
    batches->sample(batch);
    task_last = posenc::train_step(copier, batch, copier_optimizer);
    if (step == 0) task_first = task_last;
  }
  const auto scores = posenc::evaluate_task(copier, copy.task(), copy.tokenizer(), {1, 8}, 20, /*seed=*/1);
  std::printf("copy task: loss %.4f -> %.4f over 60 steps, accuracy at length 1: %.2f, at 8: %.2f\n",
              static_cast<double>(task_first), static_cast<double>(task_last), scores.front().accuracy,
              scores.back().accuracy);
  return last < first && task_last < task_first ? 0 : 1;
}
