// quickstart: trains the study's RoPE model on a text file for a few hundred steps and prints a sample.
//   quickstart [DATA_FILE] [STEPS]     defaults: data/tinyshakespeare/input.txt, 300
#include <posenc/transformer.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <string>

namespace {

// Mean loss over `batches` random validation batches (an estimate, as nanoGPT prints it).
template <class Model>
double estimate_val_loss(Model& model, const posenc::TextDataset& data, int batches) {
  posenc::BatchSampler sampler(data.val(), 32, model.context(), /*seed=*/1, "validation split");
  posenc::Tokens x, y;
  double total = 0;
  for (int i = 0; i < batches; ++i) {
    sampler.sample(x, y);
    total += model.loss(x, y);
  }
  return total / batches;
}

// Samples `count` characters after `prompt`, re-reading at most the model's context each step.
template <class Model>
std::string sample(Model& model, const posenc::Tokenizer& tok, const std::string& prompt,
                   int count, double temperature, std::uint64_t seed) {
  posenc::Rng rng(seed);
  std::vector<posenc::TokenId> ids = tok.encode(prompt);
  for (int n = 0; n < count; ++n) {
    const std::size_t T = std::min(ids.size(), model.context());
    posenc::Tokens window({1, T});
    std::copy(ids.end() - static_cast<std::ptrdiff_t>(T), ids.end(), window.begin());
    const auto logits = model.forward(window);
    const std::size_t V = model.vocab_size();
    std::vector<double> p(V);
    double zmax = -INFINITY, sum = 0;
    for (std::size_t v = 0; v < V; ++v) zmax = std::max(zmax, double(logits(0, T - 1, v)));
    for (std::size_t v = 0; v < V; ++v) sum += p[v] = std::exp((logits(0, T - 1, v) - zmax) / temperature);
    double u = rng.uniform() * sum;
    std::size_t pick = 0;
    while (pick + 1 < V && (u -= p[pick]) > 0) ++pick;
    ids.push_back(static_cast<posenc::TokenId>(pick));
  }
  return tok.decode(ids);
}

}  // namespace

int main(int argc, char** argv) try {
  const std::string path = argc > 1 ? argv[1] : "data/tinyshakespeare/input.txt";
  const int steps = argc > 2 ? std::stoi(argv[2]) : 300;
  if (steps <= 0) posenc::fail("quickstart: STEPS must be positive, got ", steps);

  posenc::TextDataset data(posenc::read_text_file(path));
  posenc::RoPETransformer model(data.vocab_size(), /*context=*/128, /*seed=*/1337);
  posenc::AdamW<float> optimizer(model, {.lr = 1e-3});
  posenc::BatchSampler sampler(data.train(), /*batch=*/32, /*context=*/128, /*seed=*/1337);
  std::printf("RoPE transformer, %zu parameters, vocabulary %zu, training %d steps on %s\n",
              model.parameter_count(), data.vocab_size(), steps, path.c_str());

  posenc::Tokens x, y;
  const auto start = std::chrono::steady_clock::now();
  for (int step = 1; step <= steps; ++step) {
    sampler.sample(x, y);
    const float loss = posenc::train_step(model, x, y, optimizer);
    if (step % 50 == 0 || step == steps) {
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::printf("step %4d  train loss %.4f  %6.0f tokens/s\n", step, double(loss),
                  step * 32.0 * 128.0 / seconds);
      std::fflush(stdout);
    }
  }
  std::printf("validation loss (estimate over 20 batches): %.4f\n", estimate_val_loss(model, data, 20));
  std::printf("---\n%s\n---\n", sample(model, data.tokenizer(), "ROMEO:", 300, 0.8, 1).c_str());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "quickstart: %s\n", e.what());
  return 2;
}
