// FIRE: attention biases from a small per-layer MLP of the normalised, log-transformed distance (Li et al. 2023).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "posenc/encodings/concept.hpp"

namespace posenc {

// b_h(i, j) = f_θ(ψ(i − j) / ψ(max(i, L)))_h with ψ(x) = log(c·x + 1) and f_θ: R → R^H an MLP with
// one hidden layer of 32 ReLU units. c is learned, kept positive as softplus of the stored "fire.c"
// (starting at 0.1, the paper's value). The threshold is learned as the paper's code does it, a
// multiplier of a fixed start: L = L₀·m, m = softplus of the stored "fire.L_multiplier", starting
// at 1, so a step moves L in proportion to L₀. L₀ is a quarter of the training context, as the
// paper's 512 is of its training length 2048: queries past L, whose distances are normalised by
// ψ(i) into [0, 1], are then trained, which is what lets FIRE's inputs stay in range at longer
// lengths. The MLP is "fire.mlp.0.{weight,bias}" (32, 1), (32) and "fire.mlp.2.{weight,bias}"
// (H, 32), (H). The output bias shifts every score of a row alike, so softmax cancels it and its
// gradient is 0 (to rounding); it is kept so the parameters are those of the paper's PyTorch module.
// Under InitScheme::normal the MLP starts as every weight does, N(0, 0.02) and zero biases, so
// all 32 ReLU kinks sit at 0 and f is linear on [0, 1] at step 0; InitScheme::pytorch starts it
// as the paper's code does (nn.Linear's defaults), which spreads the kinks.
struct FIRE {
  static constexpr std::string_view name = "fire";
  static constexpr std::string_view summary =
      "attention biases from an MLP of the normalised log distance (Li et al. 2023)";
  static constexpr std::size_t hidden = 32;
  static constexpr double initial_c = 0.1;
  static constexpr double threshold_fraction_of_context = 0.25;  // L₀ = context / 4

  template <std::floating_point S, std::size_t Dim>
  using Embedding = NoPositionSignal<S, Dim>;

  template <std::floating_point S, std::size_t Heads, std::size_t HeadDim>
  class Attention {
   public:
    Attention(ParameterTable& table, std::string_view prefix, std::size_t context)
        : w1_(table.add(std::string(prefix) + "fire.mlp.0.weight", {hidden, 1}, Init::normal, 0, TorchInit::linear(1))),
          b1_(table.add(std::string(prefix) + "fire.mlp.0.bias", {hidden}, Init::zeros, 0, TorchInit::linear(1))),
          w2_(table.add(std::string(prefix) + "fire.mlp.2.weight", {Heads, hidden}, Init::normal, 0,
                        TorchInit::linear(hidden))),
          b2_(table.add(std::string(prefix) + "fire.mlp.2.bias", {Heads}, Init::zeros, 0, TorchInit::linear(hidden))),
          c_(table.add(std::string(prefix) + "fire.c", {1}, Init::constant, std::log(std::expm1(initial_c)))),
          threshold_multiplier_(table.add(std::string(prefix) + "fire.L_multiplier", {1}, Init::constant,
                                          std::log(std::expm1(1.0)))),
          initial_threshold_(threshold_fraction_of_context * static_cast<double>(context)) {}

    // L₀: the threshold before training moves it.
    double initial_threshold() const { return initial_threshold_; }

    struct Hooks : TrainableBiasHooks {
      static constexpr bool finishes_backward = true;  // the gathered gradients go through the MLP once
      const S *w1, *b1, *w2, *b2;
      S *gw1, *gb1, *gw2, *gb2, *gc_raw, *gthreshold_raw;  // gthreshold_raw: L_multiplier's gradient
      S c, threshold, dc_draw, dthreshold_draw;  // c, L and their slopes in the stored values
      const S* by_distance;                       // (T, Heads): f(ψ(d)/ψ(L)), for queries below L
      const S* psi_by_distance;                   // (T): ψ(d), one log1p per distance rather than per score
      S* grad_by_distance;                        // (T, Heads): its accumulated gradient
      // f is piecewise linear in its scalar input (a sum of ReLUs), so it is evaluated from its
      // linear pieces: `breaks` holds the units' switching points in ascending order and `pieces`
      // (breaks + 1, Heads, 2) the intercept and slope of f_h between consecutive ones; a score past
      // L, where every (query, key) has its own input, costs a search among ≤ 32 points instead of
      // 32 units. Queries from first_past on are past L.
      std::size_t first_past = 0, length = 0;  // length: the sequence length T
      const S* breaks;
      std::size_t break_count = 0;
      const S* pieces;
      // ((length − first_past)·length, Heads): the rows past L's gradients, summed over the batch
      // and carried through the MLP once in finish_backward; allocated by the first backward row.
      std::vector<S>* grad_past;

      S psi(S x) const { return std::log1p(c * x); }
      bool below_threshold(std::size_t query) const { return static_cast<S>(query) < threshold; }

      void add_bias(S* row, std::size_t head, std::size_t query, std::size_t first_key, std::size_t keys) const {
        if (below_threshold(query)) {
          for (std::size_t j = 0; j < keys; ++j)
            row[j] += by_distance[relative_distance(query, first_key + j) * Heads + head];
          return;
        }
        const S norm = psi_by_distance[query];  // ψ(max(i, L)) = ψ(i) here
        for (std::size_t j = 0; j < keys; ++j)
          row[j] += mlp(psi_by_distance[relative_distance(query, first_key + j)] / norm, head);
      }

      // f_θ(x)_head, from its linear pieces
      S mlp(S x, std::size_t head) const {
        const std::size_t piece = static_cast<std::size_t>(std::upper_bound(breaks, breaks + break_count, x) - breaks);
        const S* line = pieces + (piece * Heads + head) * 2;
        return line[0] + line[1] * x;
      }

      // The gradients are gathered here, summed over the batch: per distance for the rows below the
      // threshold (which share one value per distance), per (query, key) for the rows past it. They
      // go through the MLP once per entry, in finish_backward.
      void bias_backward(const S* drow, std::size_t head, std::size_t query, std::size_t keys) {
        if (below_threshold(query)) {
          for (std::size_t j = 0; j < keys; ++j)
            grad_by_distance[relative_distance(query, j) * Heads + head] += drow[j];
          return;
        }
        if (grad_past->empty()) grad_past->assign((length - first_past) * length * Heads, S(0));
        S* g = grad_past->data() + (query - first_past) * length * Heads;
        for (std::size_t j = 0; j < keys; ++j) g[j * Heads + head] += drow[j];
      }

      void finish_backward() {
        const S norm = psi(threshold);
        for (std::size_t d = 0; d < length; ++d) {
          const S x = psi(static_cast<S>(d)) / norm;
          // x = ψ(d)/ψ(L)  →  dx/dc as above with i = L, and dx/dL = −ψ(d)·(c/(cL+1))/ψ(L)²
          const S dx_dc = (static_cast<S>(d) / (c * static_cast<S>(d) + 1)) / norm -
                          psi(static_cast<S>(d)) * (threshold / (c * threshold + 1)) / (norm * norm);
          const S dx_dthreshold = -psi(static_cast<S>(d)) * (c / (c * threshold + 1)) / (norm * norm);
          for (std::size_t h = 0; h < Heads; ++h)
            if (const S g = grad_by_distance[d * Heads + h]; g != S(0)) backprop_mlp(g, h, x, dx_dc, dx_dthreshold);
        }
        // the gathered gradients are used up: the next backward with these hooks starts from zero
        std::fill(grad_by_distance, grad_by_distance + length * Heads, S(0));
        if (grad_past->empty()) return;
        for (std::size_t query = first_past; query < length; ++query) {
          const S i = static_cast<S>(query);
          const S norm_i = psi_by_distance[query];
          const S* g = grad_past->data() + (query - first_past) * length * Heads;
          for (std::size_t j = 0; j < length; ++j) {
            const S* gj = g + j * Heads;
            if (std::all_of(gj, gj + Heads, [](S v) { return v == S(0); })) continue;  // e.g. a masked key
            const std::size_t distance = relative_distance(query, j);
            const S d = static_cast<S>(distance), psi_d = psi_by_distance[distance];
            const S x = psi_d / norm_i;
            // x = ψ(d)/ψ(i)  →  dx/dc = (d/(cd+1))/ψ(i) − ψ(d)·(i/(ci+1))/ψ(i)², and L is not in it
            const S dx_dc = (d / (c * d + 1)) / norm_i - psi_d * (i / (c * i + 1)) / (norm_i * norm_i);
            for (std::size_t h = 0; h < Heads; ++h)
              if (gj[h] != S(0)) backprop_mlp(gj[h], h, x, dx_dc, S(0));
          }
        }
        grad_past->clear();
      }

     private:
      // out_h = b2_h + Σ_u w2_hu·relu(w1_u·x + b1_u), with x a function of c and L
      void backprop_mlp(S g, std::size_t head, S x, S dx_dc, S dx_dthreshold) {
        gb2[head] += g;
        S dx = 0;
        for (std::size_t u = 0; u < hidden; ++u) {
          const S z = w1[u] * x + b1[u];
          if (z <= S(0)) continue;  // relu: no gradient where the unit is off
          gw2[head * hidden + u] += g * z;
          const S dz = g * w2[head * hidden + u];
          gw1[u] += dz * x;
          gb1[u] += dz;
          dx += dz * w1[u];
        }
        *gc_raw += dx * dx_dc * dc_draw;
        *gthreshold_raw += dx * dx_dthreshold * dthreshold_draw;
      }
    };

    Hooks bind(ParameterStore<S>& store, std::size_t T) {
      const auto& p = store.values;
      auto& g = store.grads;
      Hooks h{};
      h.w1 = p[w1_], h.b1 = p[b1_], h.w2 = p[w2_], h.b2 = p[b2_];
      h.gw1 = g[w1_], h.gb1 = g[b1_], h.gw2 = g[w2_], h.gb2 = g[b2_];
      h.gc_raw = g[c_], h.gthreshold_raw = g[threshold_multiplier_];
      const S c_raw = p[c_][0], multiplier_raw = p[threshold_multiplier_][0];
      const S L0 = static_cast<S>(initial_threshold_);
      h.c = softplus(c_raw);
      h.threshold = L0 * softplus(multiplier_raw);
      h.dc_draw = sigmoid(c_raw);
      h.dthreshold_draw = L0 * sigmoid(multiplier_raw);
      tabulate_pieces(h.w1, h.b1, h.w2, h.b2);
      h.breaks = breaks_.data();
      h.break_count = breaks_.size();
      h.pieces = pieces_.data();
      // ψ of every distance, and the shared values of the rows below the threshold, one per
      // distance and head.
      psi_by_distance_.resize(T);
      for (std::size_t d = 0; d < T; ++d) psi_by_distance_[d] = h.psi(static_cast<S>(d));
      h.psi_by_distance = psi_by_distance_.data();
      by_distance_.assign(T * Heads, S(0));
      grad_by_distance_.assign(T * Heads, S(0));
      const S norm = h.psi(h.threshold);
      for (std::size_t d = 0; d < T; ++d)
        for (std::size_t head = 0; head < Heads; ++head)
          by_distance_[d * Heads + head] = h.mlp(psi_by_distance_[d] / norm, head);
      h.by_distance = by_distance_.data();
      h.grad_by_distance = grad_by_distance_.data();
      h.length = T;
      while (h.first_past < T && h.below_threshold(h.first_past)) ++h.first_past;
      grad_past_.clear();
      h.grad_past = &grad_past_;
      return h;
    }

   private:
    // f_h(x) = b2_h + Σ_u w2_hu·relu(w1_u·x + b1_u) between consecutive switching points
    // t_u = −b1_u/w1_u: a unit whose point is at or below x is on when w1_u > 0, one whose point is
    // above x is on when w1_u < 0, and a unit with w1_u = 0 is on when b1_u > 0.
    void tabulate_pieces(const S* w1, const S* b1, const S* w2, const S* b2) {
      std::vector<std::size_t> units;
      for (std::size_t u = 0; u < hidden; ++u)
        if (w1[u] != S(0)) units.push_back(u);
      auto point = [&](std::size_t u) { return -b1[u] / w1[u]; };
      std::sort(units.begin(), units.end(), [&](std::size_t a, std::size_t b) { return point(a) < point(b); });
      breaks_.resize(units.size());
      for (std::size_t r = 0; r < units.size(); ++r) breaks_[r] = point(units[r]);
      std::vector<std::optional<std::size_t>> rank(hidden);  // none for a unit with w1 = 0
      for (std::size_t r = 0; r < units.size(); ++r) rank[units[r]] = r;
      pieces_.assign((units.size() + 1) * Heads * 2, S(0));
      for (std::size_t piece = 0; piece <= units.size(); ++piece) {  // x has passed `piece` points
        for (std::size_t u = 0; u < hidden; ++u) {
          const bool on = rank[u] ? (w1[u] > S(0)) == (*rank[u] < piece) : b1[u] > S(0);
          if (!on) continue;
          for (std::size_t head = 0; head < Heads; ++head) {
            S* line = pieces_.data() + (piece * Heads + head) * 2;
            line[0] += w2[head * hidden + u] * b1[u];
            line[1] += w2[head * hidden + u] * w1[u];
          }
        }
        for (std::size_t head = 0; head < Heads; ++head) pieces_[(piece * Heads + head) * 2] += b2[head];
      }
    }

    Slot w1_, b1_, w2_, b2_, c_, threshold_multiplier_;
    double initial_threshold_;
    std::vector<S> psi_by_distance_, by_distance_, grad_by_distance_;
    std::vector<S> breaks_, pieces_, grad_past_;
  };
};

}  // namespace posenc
