// embedding_forward / embedding_backward: token embedding lookup plus an optional per-position table.
#pragma once

#include <concepts>
#include <cstddef>

#include "posenc/config.hpp"
#include "posenc/tensor.hpp"

namespace posenc {

// out (B,T,C), tokens (B,T) in [0,V), wte (V,C), wpe (rows,C) or nullptr for no position signal;
// index t reads wpe's row positions[t] (T increasing positions below rows), or row t without them
template <std::floating_point S>
void embedding_forward(S* out, const TokenId* tokens, const S* wte, const S* wpe, std::size_t B,
                       std::size_t T, std::size_t C, std::size_t V, const std::size_t* positions = nullptr) {
  for (std::size_t b = 0; b < B; ++b) {
    for (std::size_t t = 0; t < T; ++t) {
      const TokenId id = tokens[b * T + t];
      if (id < 0 || static_cast<std::size_t>(id) >= V)
        fail("embedding_forward: token id ", id, " at (b=", b, ", t=", t,
             ") is outside the vocabulary [0, ", V, ")");
      const S* e = wte + static_cast<std::size_t>(id) * C;
      S* y = out + (b * T + t) * C;
      if (wpe != nullptr) {
        const S* p = wpe + (positions != nullptr ? positions[t] : t) * C;
        for (std::size_t c = 0; c < C; ++c) y[c] = e[c] + p[c];
      } else {
        for (std::size_t c = 0; c < C; ++c) y[c] = e[c];
      }
    }
  }
}

// dwte (V,C) and dwpe (rows,C) are added into; dwpe may be nullptr (a fixed or absent table);
// positions as the forward's
template <std::floating_point S>
void embedding_backward(S* dwte, S* dwpe, const S* dout, const TokenId* tokens, std::size_t B,
                        std::size_t T, std::size_t C, const std::size_t* positions = nullptr) {
  for (std::size_t b = 0; b < B; ++b) {
    for (std::size_t t = 0; t < T; ++t) {
      const S* dy = dout + (b * T + t) * C;
      S* de = dwte + static_cast<std::size_t>(tokens[b * T + t]) * C;
      for (std::size_t c = 0; c < C; ++c) de[c] += dy[c];
      if (dwpe != nullptr) {
        S* dp = dwpe + (positions != nullptr ? positions[t] : t) * C;
        for (std::size_t c = 0; c < C; ++c) dp[c] += dy[c];
      }
    }
  }
}

}  // namespace posenc
