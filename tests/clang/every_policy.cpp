// Clang compiles what GCC does: every policy's model trains and picks a policy by name, built with
// clang's warnings as errors by the fuzz preset (the one configured with clang). Debian 12's clang
// is 14; a floating-point template argument, which it does not support, once broke every program.
#include <posenc/transformer.hpp>

#include <cmath>
#include <cstdio>
#include <string>

int main() {
  int failures = 0;
  posenc::for_each_policy([&]<class P>() {
    posenc::CharTransformer<P, 1, 8, 2> model(6, 8, 1);
    posenc::AdamW optimizer(model);
    const posenc::Tokens x = {{0, 1, 2, 3, 4, 5}}, y = {{1, 2, 3, 4, 5, 0}};
    const float first = posenc::train_step(model, x, y, optimizer);
    float loss = first;
    for (int step = 0; step < 20; ++step) loss = posenc::train_step(model, x, y, optimizer);
    const bool learned = std::isfinite(loss) && loss < first;
    std::printf("%-16s loss %.4f -> %.4f%s\n", std::string(P::name).c_str(), first, loss, learned ? "" : "  FAILED");
    failures += learned ? 0 : 1;
  });
  const auto name_length = posenc::with_policy("rope", []<class P>() { return P::name.size(); });
  if (name_length != 4) ++failures;
  return failures == 0 ? 0 : 1;
}
