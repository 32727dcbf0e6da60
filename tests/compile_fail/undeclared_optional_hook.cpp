// Must not compile: hooks that turn keys with rotate_key but leave rotates_keys_separately off, so
// the kernels would turn keys with rotate instead.
#include <posenc/transformer.hpp>

struct KeyScaledRotation {
  static constexpr std::string_view name = "key-scaled";
  static constexpr std::string_view summary = "a rotation whose keys are turned differently";
  template <std::floating_point S, std::size_t Dim>
  using Embedding = posenc::NoPositionSignal<S, Dim>;
  template <std::floating_point S, std::size_t Heads, std::size_t HeadDim>
  struct Attention {
    Attention(posenc::ParameterTable&, std::string_view, std::size_t) {}
    struct Hooks : posenc::RotaryHooks {
      void rotate(S*, std::size_t) const {}
      void unrotate(S*, std::size_t) const {}
      void rotate_key(S*, std::size_t) const {}
      void unrotate_key(S*, std::size_t) const {}
    };
    Hooks bind(posenc::ParameterStore<S>&, std::size_t) { return {}; }
  };
};

int main() {
  posenc::CharTransformer<KeyScaledRotation, 1, 8, 2> model(5, 4);
  return static_cast<int>(model.parameter_count());
}
