// Must not compile: hooks that declare finishes_backward but misspell finish_backward, which would
// otherwise compile and silently drop the gathered gradients.
#include <posenc/transformer.hpp>

struct GatheringBias {
  static constexpr std::string_view name = "gathering-bias";
  static constexpr std::string_view summary = "a bias whose gradients are gathered, then finished";
  template <std::floating_point S, std::size_t Dim>
  using Embedding = posenc::NoPositionSignal<S, Dim>;
  template <std::floating_point S, std::size_t Heads, std::size_t HeadDim>
  struct Attention {
    Attention(posenc::ParameterTable&, std::string_view, std::size_t) {}
    struct Hooks : posenc::TrainableBiasHooks {
      static constexpr bool finishes_backward = true;
      void add_bias(S*, std::size_t, std::size_t, std::size_t, std::size_t) const {}
      void bias_backward(const S*, std::size_t, std::size_t, std::size_t) {}
      void finish_backwards() {}
    };
    Hooks bind(posenc::ParameterStore<S>&, std::size_t) { return {}; }
  };
};

int main() {
  posenc::CharTransformer<GatheringBias, 1, 8, 2> model(5, 4);
  return static_cast<int>(model.parameter_count());
}
