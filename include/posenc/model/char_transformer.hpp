// CharTransformer<PosEnc, Layers, Dim, Heads, S>: the decoder-only character model, forward, loss, backward and a training step.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "posenc/config.hpp"
#include "posenc/encodings/concept.hpp"
#include "posenc/kernels/cross_entropy.hpp"
#include "posenc/kernels/embedding.hpp"
#include "posenc/kernels/layernorm.hpp"
#include "posenc/kernels/linear.hpp"
#include "posenc/model/decoder_block.hpp"
#include "posenc/model/kv_cache.hpp"
#include "posenc/model/parameters.hpp"
#include "posenc/tensor.hpp"
#include "posenc/train/adamw.hpp"

namespace posenc {

struct ModelConfig {
  std::size_t vocab_size = 0;
  std::size_t context = 0;      // the training context; Learned's table has exactly this many rows
  std::size_t max_context = 0;  // the longest sequence accepted; 0 means 16 × context
  std::uint64_t seed = 1337;    // initialisation
  bool causal = true;           // false: bidirectional attention, for tests of what the mask hides
};

// token embedding + the policy's position signal → Layers × DecoderBlock → final LN → lm_head.
template <PositionalEncoding PosEnc, std::size_t Layers, std::size_t Dim, std::size_t Heads,
          std::floating_point Scalar = float>
class CharTransformer {
  static_assert(Layers > 0, "CharTransformer: Layers must be at least 1");
  static_assert(Heads > 0 && Dim % Heads == 0,
                "CharTransformer: Dim must be divisible by Heads (each head gets Dim / Heads dimensions)");

 public:
  using S = Scalar;
  using scalar_type = Scalar;
  using encoding = PosEnc;
  using Block = DecoderBlock<PosEnc, Dim, Heads, Scalar>;
  using Optimizer = AdamW<Scalar>;
  static constexpr std::size_t layers = Layers;
  static constexpr std::size_t dim = Dim;
  static constexpr std::size_t heads = Heads;
  static constexpr std::size_t head_dim = Dim / Heads;
  static constexpr std::size_t default_max_context_factor = 16;

  CharTransformer(std::size_t vocab_size, std::size_t context, std::uint64_t seed = 1337)
      : CharTransformer(ModelConfig{.vocab_size = vocab_size, .context = context, .seed = seed}) {}

  explicit CharTransformer(const ModelConfig& config)
      : config_(checked(config)),
        table_(std::make_shared<ParameterTable>()),
        wte_(table_->add("transformer.wte.weight", {config.vocab_size, Dim}, Init::normal)),
        position_(*table_, config.context),
        blocks_(make_blocks(*table_, config.context, config.causal)),
        ln_f_w_(table_->add("transformer.ln_f.weight", {Dim}, Init::ones)),
        ln_f_b_(table_->add("transformer.ln_f.bias", {Dim}, Init::zeros)),
        lm_head_w_(table_->add("lm_head.weight", {config.vocab_size, Dim}, Init::normal)),
        lm_head_b_(table_->add("lm_head.bias", {config.vocab_size}, Init::zeros)),
        store_(table_) {
    const std::size_t requested = config.max_context != 0
                                      ? config.max_context
                                      : default_max_context_factor * config.context;
    max_context_ = std::min(requested, position_.max_positions());
    store_.initialize(config.seed);
  }

  // logits (B,T,V) for inputs (B,T); the view stays valid until the next forward
  TensorView<const S> forward(const Tokens& inputs) {
    run_forward(inputs);
    return view_of<const S>(ws_.logits.data(), {ws_.B, ws_.T, vocab_size()});
  }

  // The mean cross-entropy of predicting targets (B,T) from inputs (B,T); keeps what backward needs.
  S loss(const Tokens& inputs, const Tokens& targets) {
    if (targets.shape() != inputs.shape())
      fail("CharTransformer::loss: targets shape (", targets.shape()[0], ",", targets.shape()[1],
           ") does not match inputs shape (", inputs.shape()[0], ",", inputs.shape()[1], ")");
    check_tokens(targets, "targets");
    run_forward(inputs);
    ws_.targets.assign(targets.begin(), targets.end());
    ws_.probs.resize(ws_.logits.size());
    const S value = cross_entropy_forward(ws_.probs.data(), ws_.logits.data(), ws_.targets.data(),
                                          ws_.B * ws_.T, vocab_size());
    ws_.has_loss = true;
    return value;
  }

  // Adds d(loss)/d(parameter) into the gradients, for the batch of the last loss().
  void backward() {
    if (!ws_.has_loss) fail("CharTransformer::backward: call loss(inputs, targets) first");
    const std::size_t B = ws_.B, T = ws_.T, N = B * T, V = vocab_size();
    const auto& p = store_.values;
    auto& g = store_.grads;
    ws_.dlogits.assign(N * V, S(0));
    ws_.dlnf.assign(N * Dim, S(0));
    ws_.dx.assign(N * Dim, S(0));
    ws_.dx_next.resize(N * Dim);
    ws_.scratch.resize(B, T, Dim, Heads);
    // loss = cross_entropy(logits)
    cross_entropy_backward(ws_.dlogits.data(), ws_.probs.data(), ws_.targets.data(), N, V);
    // logits = lm_head(lnf)
    linear_backward(ws_.dlnf.data(), g[lm_head_w_], g[lm_head_b_], ws_.dlogits.data(),
                    ws_.lnf.data(), p[lm_head_w_], N, Dim, V);
    // lnf = ln_f(x[L])
    layernorm_backward(ws_.dx.data(), g[ln_f_w_], g[ln_f_b_], ws_.dlnf.data(), residual(Layers),
                       p[ln_f_w_], ws_.lnf_mean.data(), ws_.lnf_rstd.data(), N, Dim);
    // x[l+1] = block_l(x[l])
    for (std::size_t l = Layers; l-- > 0;) {
      std::fill(ws_.dx_next.begin(), ws_.dx_next.end(), S(0));
      blocks_[l].backward(ws_.dx_next.data(), ws_.dx.data(), residual(l), ws_.blocks[l], ws_.scratch,
                          store_, B, T);
      std::swap(ws_.dx, ws_.dx_next);
    }
    // x[0] = wte[inputs] + position table
    embedding_backward(g[wte_], position_.position_grads(store_), ws_.dx.data(), ws_.inputs.data(),
                       B, T, Dim);
  }

  // An empty key/value cache for one sequence of up to max_context() positions.
  KVCache<S> make_cache() const { return KVCache<S>(Layers, max_context_, Dim); }

  // Appends `token` at position cache.length() and returns the logits (V) for the token after it:
  // the same numbers forward() gives for the last position of the whole sequence, at the cost of
  // one position.
  TensorView<const S> forward_step(TokenId token, KVCache<S>& cache) {
    if (token < 0 || static_cast<std::size_t>(token) >= vocab_size())
      fail("CharTransformer::forward_step: token id ", token, " is outside the vocabulary [0, ",
           vocab_size(), ")");
    if (cache.full())
      fail("CharTransformer::forward_step: the cache holds its capacity of ", cache.capacity(),
           " positions; clear it and start a new window");
    const std::size_t pos = cache.length();
    const auto& p = store_.values;
    S* x = cache.residual().data();
    const S* table = position_.positions(store_, pos + 1);
    embedding_forward(x, &token, p[wte_], table != nullptr ? table + pos * Dim : nullptr, 1, 1,
                      Dim, vocab_size());
    for (std::size_t l = 0; l < Layers; ++l)
      blocks_[l].forward_step(x, cache.keys(l), cache.values(l), pos, cache.scratch(), store_);
    ws_.step_ln.resize(Dim);
    ws_.step_logits.resize(vocab_size());
    S mean, rstd;
    layernorm_forward(ws_.step_ln.data(), &mean, &rstd, x, p[ln_f_w_], p[ln_f_b_], 1, Dim);
    linear_forward(ws_.step_logits.data(), ws_.step_ln.data(), p[lm_head_w_], p[lm_head_b_], 1, Dim,
                   vocab_size());
    cache.advance();
    return view_of<const S>(ws_.step_logits.data(), {vocab_size()});
  }

  void zero_grad() { store_.grads.fill(S(0)); }

  // zero_grad, loss, backward and one optimizer step; returns the batch's loss before the step.
  S train_step(const Tokens& inputs, const Tokens& targets, Optimizer& optimizer) {
    zero_grad();
    const S value = loss(inputs, targets);
    backward();
    optimizer.step(store_);
    return value;
  }

  Optimizer make_optimizer(const AdamWConfig& config = {}) const { return Optimizer(table_, config); }

  std::size_t parameter_count() const { return table_->total_size(); }
  std::size_t vocab_size() const { return config_.vocab_size; }
  std::size_t context() const { return config_.context; }
  std::size_t max_context() const { return max_context_; }
  const ModelConfig& config() const { return config_; }
  static constexpr std::string_view encoding_name() { return PosEnc::name; }

  const ParameterTable& parameter_table() const { return *table_; }
  ParameterBuffer<S>& parameters() { return store_.values; }
  const ParameterBuffer<S>& parameters() const { return store_.values; }
  ParameterBuffer<S>& gradients() { return store_.grads; }
  const ParameterBuffer<S>& gradients() const { return store_.grads; }
  ParameterStore<S>& store() { return store_; }
  TensorView<S> parameter(std::string_view name) { return store_.values.view(name); }
  TensorView<S> gradient(std::string_view name) { return store_.grads.view(name); }

 private:
  struct Workspace {
    std::size_t B = 0, T = 0;
    bool has_loss = false;
    std::vector<TokenId> inputs, targets;          // (B,T)
    std::vector<S> residual;                       // (Layers+1, B,T,D): x[0] embeddings, x[l+1] block l
    std::vector<BlockActivations<S>> blocks;       // one per layer
    std::vector<S> lnf, lnf_mean, lnf_rstd;        // (B,T,D), (B,T), (B,T)
    std::vector<S> logits, probs;                  // (B,T,V)
    std::vector<S> dlogits, dlnf, dx, dx_next;     // backward
    std::vector<S> step_ln, step_logits;           // forward_step: (D), (V)
    BlockScratch<S> scratch;
  };

  static ModelConfig checked(const ModelConfig& c) {
    if (c.vocab_size == 0) fail("CharTransformer: vocab_size must be positive");
    if (c.vocab_size > static_cast<std::size_t>(std::numeric_limits<TokenId>::max()))
      fail("CharTransformer: vocab_size ", c.vocab_size, " does not fit a token id");
    if (c.context == 0) fail("CharTransformer: context must be positive");
    if (c.max_context != 0 && c.max_context < c.context)
      fail("CharTransformer: max_context ", c.max_context, " is shorter than the context ",
           c.context);
    return c;
  }

  static std::vector<Block> make_blocks(ParameterTable& table, std::size_t context, bool causal) {
    std::vector<Block> blocks;
    blocks.reserve(Layers);
    for (std::size_t l = 0; l < Layers; ++l) blocks.emplace_back(table, l, context, causal);
    return blocks;
  }

  void check_tokens(const Tokens& tokens, const char* what) const {
    const std::size_t B = tokens.shape()[0], T = tokens.shape()[1];
    if (B == 0 || T == 0)
      fail("CharTransformer: ", what, " shape (", B, ",", T, ") is empty; expected (B,T) with B, T ≥ 1");
    if (T > max_context_) {
      if (max_context_ == position_.max_positions())
        fail("CharTransformer<", PosEnc::name, ">: ", what, " length ", T,
             " exceeds the learned position table (", max_context_, " rows)");
      fail("CharTransformer<", PosEnc::name, ">: ", what, " length ", T,
           " exceeds the model's maximum context ", max_context_, " (raise ModelConfig::max_context)");
    }
    for (std::size_t b = 0; b < B; ++b)
      for (std::size_t t = 0; t < T; ++t) {
        const TokenId id = tokens(b, t);
        if (id < 0 || static_cast<std::size_t>(id) >= vocab_size())
          fail("CharTransformer: ", what, " token id ", id, " at (b=", b, ", t=", t,
               ") is outside the vocabulary [0, ", vocab_size(), ")");
      }
  }

  S* residual(std::size_t l) { return ws_.residual.data() + l * ws_.B * ws_.T * Dim; }

  void run_forward(const Tokens& inputs) {
    check_tokens(inputs, "inputs");
    const std::size_t B = inputs.shape()[0], T = inputs.shape()[1], N = B * T;
    const std::size_t V = vocab_size();
    ws_.B = B;
    ws_.T = T;
    ws_.has_loss = false;
    ws_.inputs.assign(inputs.begin(), inputs.end());
    ws_.residual.resize((Layers + 1) * N * Dim);
    ws_.blocks.resize(Layers);
    for (auto& act : ws_.blocks) act.resize(B, T, Dim, Heads);
    ws_.lnf.resize(N * Dim);
    ws_.lnf_mean.resize(N);
    ws_.lnf_rstd.resize(N);
    ws_.logits.resize(N * V);
    const auto& p = store_.values;
    embedding_forward(residual(0), ws_.inputs.data(), p[wte_], position_.positions(store_, T), B,
                      T, Dim, V);
    for (std::size_t l = 0; l < Layers; ++l)
      blocks_[l].forward(residual(l + 1), residual(l), ws_.blocks[l], store_, B, T);
    layernorm_forward(ws_.lnf.data(), ws_.lnf_mean.data(), ws_.lnf_rstd.data(), residual(Layers),
                      p[ln_f_w_], p[ln_f_b_], N, Dim);
    linear_forward(ws_.logits.data(), ws_.lnf.data(), p[lm_head_w_], p[lm_head_b_], N, Dim, V);
  }

  ModelConfig config_;
  std::shared_ptr<ParameterTable> table_;
  Slot wte_;
  typename PosEnc::template Embedding<S, Dim> position_;
  std::vector<Block> blocks_;
  Slot ln_f_w_, ln_f_b_, lm_head_w_, lm_head_b_;
  ParameterStore<S> store_;
  std::size_t max_context_ = 0;
  Workspace ws_;
};

}  // namespace posenc
