// ODR test: links both units; the same model trained in each must give the same loss.
#include <cstdio>

double train_in_unit_a();
double train_in_unit_b();

int main() {
  const double a = train_in_unit_a();
  const double b = train_in_unit_b();
  std::printf("unit a loss %.17g, unit b loss %.17g\n", a, b);
  return a == b ? 0 : 1;
}
