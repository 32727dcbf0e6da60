// Must not compile: hooks written without the flag base (here only two of the five flags), which
// the contract names instead of a bare "does not satisfy".
#include <posenc/transformer.hpp>

struct FlaglessBias {
  static constexpr std::string_view name = "flagless";
  static constexpr std::string_view summary = "a bias whose hooks declare only some flags";
  template <std::floating_point S, std::size_t Dim>
  using Embedding = posenc::NoPositionSignal<S, Dim>;
  template <std::floating_point S, std::size_t Heads, std::size_t HeadDim>
  struct Attention {
    Attention(posenc::ParameterTable&, std::string_view, std::size_t) {}
    struct Hooks {
      static constexpr bool rotates_qk = false;
      static constexpr bool biases_scores = true;
      void add_bias(S*, std::size_t, std::size_t, std::size_t, std::size_t) const {}
    };
    Hooks bind(posenc::ParameterStore<S>&, std::size_t) { return {}; }
  };
};

int main() {
  posenc::CharTransformer<FlaglessBias, 1, 8, 2> model(5, 4);
  return static_cast<int>(model.parameter_count());
}
