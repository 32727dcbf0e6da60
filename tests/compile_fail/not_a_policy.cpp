// Must not compile: a class that is not a positional-encoding policy plugged into the model.
#include <posenc/transformer.hpp>

struct NotAPolicy {
  static constexpr const char* name = "not-a-policy";
};

int main() {
  posenc::CharTransformer<NotAPolicy, 1, 8, 2> model(5, 4);
  return static_cast<int>(model.parameter_count());
}
