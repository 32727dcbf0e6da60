// for_each_policy_attention: every policy's attention at the tests' size, in one parameter store, for kernel checks.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <posenc/transformer.hpp>

#include "gradient_check.hpp"

namespace posenc_test {

// Calls check(name, hooks, grads) for each policy of posenc::AllPolicies: hooks its Attention<S, 2,
// 4> bound for T, grads (S span) the store's gradients. The store's parameters are moved off their
// start (so no bias is uniform) and its gradients start at random values, so a kernel that writes
// instead of adding into them is caught.
template <class S, class Check>
void for_each_policy_attention(std::size_t T, Check&& check) {
  auto table = std::make_shared<posenc::ParameterTable>();
  [&]<class... P>(std::tuple<P...>*) {
    std::tuple<typename P::template Attention<S, 2, 4>...> attentions{
        typename P::template Attention<S, 2, 4>(*table, std::string(P::name) + ".", T)...};
    posenc::ParameterStore<S> store(table);
    store.initialize(30);
    const auto moved = random_vector(store.values.size(), 31);
    const auto grads = random_vector(store.grads.size(), 32);
    for (std::size_t i = 0; i < moved.size(); ++i) {
      store.values.data()[i] += static_cast<S>(0.3 * moved[i]);
      store.grads.data()[i] = static_cast<S>(grads[i]);
    }
    std::span<S> g(store.grads.data(), store.grads.size());
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (check(std::string(P::name), std::get<I>(attentions).bind(store, T), g), ...);
    }(std::index_sequence_for<P...>{});
  }(static_cast<posenc::AllPolicies*>(nullptr));
}

}  // namespace posenc_test
