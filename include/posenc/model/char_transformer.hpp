// CharTransformer<PosEnc, Layers, Dim, Heads, S>: the decoder-only character model — forward, loss and backward.
#pragma once

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "posenc/config.hpp"
#include "posenc/encodings/concept.hpp"
#include "posenc/encodings/rope_scaling.hpp"
#include "posenc/kernels/cross_entropy.hpp"
#include "posenc/kernels/dropout.hpp"
#include "posenc/kernels/embedding.hpp"
#include "posenc/kernels/fast_cross_entropy.hpp"
#include "posenc/kernels/fast_layernorm.hpp"
#include "posenc/kernels/fast_linear.hpp"
#include "posenc/kernels/gemm.hpp"
#include "posenc/kernels/gemm_report.hpp"
#include "posenc/kernels/layernorm.hpp"
#include "posenc/kernels/linear.hpp"
#include "posenc/kernels/profile.hpp"
#include "posenc/model/decoder_block.hpp"
#include "posenc/model/kv_cache.hpp"
#include "posenc/parameters.hpp"
#include "posenc/tensor.hpp"
#include "posenc/threads.hpp"

namespace posenc {

struct ModelConfig {
  std::size_t vocab_size = 0;
  std::size_t context = 0;      // the training context; Learned's table has exactly this many rows
  std::size_t max_context = 0;  // the longest sequence accepted; 0 means 16 × context
  std::uint64_t seed = 1337;    // initialisation
  bool causal = true;           // false: bidirectional attention, for tests of what the mask hides
  // The std of the embedding tables' normal start (tokens and a learned position table); none: the
  // init scheme's, GPT-2's 0.02 (normal) or nn.Embedding's 1 (pytorch). config() holds the value used.
  std::optional<double> embedding_std = std::nullopt;
  // Which rule starts every tensor: posenc's N(0, 0.02) (normal), or each PyTorch module's default
  // (pytorch).
  InitScheme init = InitScheme::normal;
  // lm_head.weight is transformer.wte.weight, as nanoGPT ties them: vocab_size × Dim fewer
  // parameters, and the table's gradient is the sum of both uses. lm_head keeps its bias.
  bool tie_weights = false;
  // nanoGPT's dropout probability, at its four places (the embeddings, the attention probabilities,
  // each branch's output before its residual add), applied only in training passes (see
  // CharTransformer::set_dropout_pass); never in evaluation or generation.
  double dropout = 0;
  // Sequences per forward/backward pass: a batch of B is processed in ⌈B/chunk⌉ passes, so the
  // saved activations (most of the memory) are those of `chunk` sequences whatever B is, and
  // evaluation keeps only one chunk's. Gradients are the batch's either way (up to rounding).
  // 0 means the whole batch in one pass.
  std::size_t chunk = 8;
  // The linear layers' GEMMs in forward and backward (bf16: operands rounded to bfloat16, float
  // accumulation; parameters, optimizer and losses stay Scalar). Generation always uses Scalar.
  Precision precision = Precision::fp32;
  // A rotary policy's base and stretch past the trained context (linear, NTK, dynamic NTK, YaRN;
  // encodings/rope_scaling.hpp). The default changes nothing; other policies refuse anything else.
  RopeScaling rope = {};
  // Randomized positions (Ruoss et al. 2023). 0: a sequence's index t is at position t. Otherwise
  // every pass reads its sequences at an ordered random subset of [0, position_range) (the
  // trainer's draw for each micro-batch, set_positions, or else one drawn from the pass's tokens),
  // so that a model trained on short sequences has seen the positions of sequences up to
  // position_range long: the longest it accepts, and the rows of a learned table.
  std::size_t position_range = 0;
};

// token embedding + the policy's position signal → Layers × DecoderBlock → final LN → lm_head.
template <class PosEnc, std::size_t Layers, std::size_t Dim, std::size_t Heads, std::floating_point Scalar = float>
class CharTransformer {
  static_assert(Layers > 0, "CharTransformer: Layers must be at least 1");
  static_assert(Heads > 0 && Dim % Heads == 0,
                "CharTransformer: Dim must be divisible by Heads (each head gets Dim / Heads dimensions)");
  static_assert(check_positional_encoding<PosEnc, Scalar, Dim, Heads>);  // names what PosEnc misses

 public:
  using S = Scalar;
  using scalar_type = Scalar;
  using encoding = PosEnc;
  using Block = DecoderBlock<PosEnc, Dim, Heads, Scalar>;
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
        // tied, the table is nanoGPT's lm_head.weight (wte.weight = lm_head.weight): an nn.Linear's
        wte_(table_->add("transformer.wte.weight", {config.vocab_size, Dim}, Init::embedding, 0,
                         config.tie_weights ? TorchInit::linear(Dim) : TorchInit{})),
        position_(*table_, config.position_range != 0 ? config.position_range : config.context),
        blocks_(make_blocks(*table_, config.context, config.causal, config.precision)),
        ln_f_w_(table_->add("transformer.ln_f.weight", {Dim}, Init::ones)),
        ln_f_b_(table_->add("transformer.ln_f.bias", {Dim}, Init::zeros)),
        lm_head_w_(config.tie_weights ? wte_
                                      : table_->add("lm_head.weight", {config.vocab_size, Dim}, Init::normal, 0,
                                                    TorchInit::linear(Dim))),
        lm_head_b_(table_->add("lm_head.bias", {config.vocab_size}, Init::zeros, 0, TorchInit::linear(Dim))),
        store_(table_) {
    const std::size_t requested = config.max_context != 0     ? config.max_context
                                  : config.position_range != 0 ? config.position_range
                                                               : default_max_context_factor * config.context;
    max_context_ = std::min({requested, position_.max_positions(), position_limit()});
    store_.initialize(config.seed, *config_.embedding_std, config.init);
    set_rope_scaling(config.rope);
    num_threads();  // applies the default thread count if the program has not chosen one
    warn_once_about_slow_gemm();
  }

  // logits (B,T,V) for inputs (B,T); the view stays valid until the next forward. Keeps nothing
  // for a backward: one layer's activations at a time, and attention's tiles.
  TensorView<const S> forward(const Tokens& inputs) {
    begin_batch(inputs, nullptr, nullptr, false);
    for (std::size_t b0 = 0; b0 < ws_.B; b0 += ws_.chunk) chunk_forward(b0, false);
    return view_of<const S>(ws_.logits.data(), {ws_.B, ws_.T, vocab_size()});
  }

  // The attention probabilities (B,H,T,T) of block `layer` (0 the first) for inputs (B,T): [b,h,i,j]
  // the weight query i of head h gives key j, 0 where the causal mask hides it — what each encoding
  // attends to. The blocks before it run as in forward() (dropout only in a training pass); the
  // result takes B·H·T² scalars.
  Tensor<S, 4> attention_probabilities(const Tokens& inputs, std::size_t layer) {
    if (layer >= Layers)
      fail("CharTransformer::attention_probabilities: no layer ", layer, " in a model of ", Layers,
           " layers (0 to ", Layers - 1, ")");
    begin_batch(inputs, nullptr, nullptr, false);
    const std::size_t T = ws_.T;
    Tensor<S, 4> att = Tensor<S, 4>::from_shape({ws_.B, Heads, T, T});
    for (std::size_t b0 = 0; b0 < ws_.B; b0 += ws_.chunk)
      blocks_[layer].attention_probabilities(att.data() + b0 * Heads * T * T, chunk_through_blocks(b0, layer, false),
                                             ws_.blocks[0], store_, chunk_size(b0), T, batch_positions());
    return att;
  }

  // The mean cross-entropy of predicting targets (B,T) from inputs (B,T), keeping nothing for a
  // backward (as forward(); an evaluation's memory is one layer's activations of one chunk).
  // backward() then gives its gradient, recomputing the activations: loss_and_backward() does not.
  S loss(const Tokens& inputs, const Tokens& targets) { return scored_loss(inputs, targets, nullptr); }
  // ... over the targets `mask` (B,T) scores only, as PyTorch's ignore_index leaves the others out
  // (a task's prompt and padding); a mask that scores none is an error.
  S loss(const Tokens& inputs, const Tokens& targets, const TargetMask& mask) {
    return scored_loss(inputs, targets, &mask);
  }

  // Adds d(loss)/d(parameter) into the gradients, for the batch of the last loss().
  void backward() {
    if (!ws_.has_loss) fail("CharTransformer::backward: call loss(inputs, targets) first");
    size_workspace(true);
    for (std::size_t b0 = 0; b0 < ws_.B; b0 += ws_.chunk) {
      chunk_forward(b0, true);
      chunk_loss(b0);
      chunk_backward(b0);
    }
  }

  // An empty key/value cache for one sequence, holding up to `capacity` positions (by default and
  // at most max_context()).
  KVCache<S> make_cache(std::size_t capacity = 0) const {
    if (capacity > max_context_)
      fail("CharTransformer::make_cache: a capacity of ", capacity, " positions exceeds the model's maximum context ",
           max_context_);
    return KVCache<S>(Layers, capacity == 0 ? max_context_ : capacity, Dim);
  }

  // Whether a full cache rolls on: forward_step evicts its oldest position and continues, so each
  // token attends to the last capacity() tokens at the cost of one position. True when positions
  // enter only inside attention (relative policies and NoPE), whose scores depend on where keys
  // lie relative to the query: each held key keeps the state it was computed with, as llama.cpp's
  // context shift does. A policy that adds positions to the embeddings (learned, sinusoidal)
  // cannot: its cached states carry absolute positions a shifted window would contradict.
  static constexpr bool cache_rolls =
      std::is_same_v<typename PosEnc::template Embedding<S, Dim>, NoPositionSignal<S, Dim>>;

  // Appends `token` to the cache and returns the logits (V) for the token after it: the same
  // numbers forward() gives for the last position of the whole sequence, at the cost of one
  // position. On a full cache, policies that roll (cache_rolls) attend to the last capacity()
  // tokens: the bias is that of the window's positions, oldest first, as forward() of the window
  // would add it; rotations continue at the sequence's positions, moved back by the capacity
  // (turn_keys_again) whenever they reach twice it, so tables stay bounded.
  TensorView<const S> forward_step(TokenId token, KVCache<S>& cache) {
    if (token < 0 || static_cast<std::size_t>(token) >= vocab_size())
      fail("CharTransformer::forward_step: token id ", token, " is outside the vocabulary [0, ",
           vocab_size(), ")");
    if (config_.rope.depends_on_length())
      fail("CharTransformer::forward_step: dynamic NTK turns every key again as the sequence grows, which cached "
           "keys cannot follow; generate() recomputes the window for it (SamplingOptions::use_cache is ignored)");
    [[maybe_unused]] const GemmSignalHold signals_held{};  // once for the token's ~40 small products
    if (cache.full()) {
      if constexpr (!cache_rolls) {
        fail("CharTransformer::forward_step: the cache holds its capacity of ", cache.capacity(), " positions and ",
             PosEnc::name, " adds absolute positions to the embeddings; clear it and encode a shorter window");
      } else {
        cache.evict_oldest();
        if (cache.next_position() == 2 * cache.capacity()) {
          cache.rebase(cache.capacity());
          const std::size_t first = cache.next_position() - cache.length();
          for (std::size_t l = 0; l < Layers; ++l)
            blocks_[l].turn_keys_again(cache.keys(l), cache.unturned_keys(l), cache.window(), first, store_);
        }
      }
    }
    const std::size_t pos = cache.next_position();
    const auto& p = store_.values;
    S* x = cache.residual().data();
    const S* table = position_.positions(store_, pos + 1);
    embedding_forward(x, &token, p[wte_], table != nullptr ? table + pos * Dim : nullptr, 1, 1,
                      Dim, vocab_size());
    for (std::size_t l = 0; l < Layers; ++l)
      blocks_[l].forward_step(x, cache.keys(l), cache.values(l), cache.unturned_keys(l), pos, cache.window(true),
                              cache.scratch(), store_);
    ws_.step_ln.resize(Dim);
    ws_.step_logits.resize(vocab_size());
    S mean, rstd;
    layernorm_forward(ws_.step_ln.data(), &mean, &rstd, x, p[ln_f_w_], p[ln_f_b_], 1, Dim);
    linear_forward(ws_.step_logits.data(), ws_.step_ln.data(), p[lm_head_w_], p[lm_head_b_], 1, Dim,
                   vocab_size());
    cache.advance();
    return view_of<const S>(ws_.step_logits.data(), {vocab_size()});
  }

  // A rotary policy's base and stretch from the next pass on (ModelConfig::rope); throws
  // posenc::Error for settings out of range or a policy that does not rotate.
  void set_rope_scaling(const RopeScaling& scaling) {
    scaling.validate();
    for (auto& block : blocks_) block.set_rope_scaling(scaling);
    config_.rope = scaling;
  }
  static constexpr bool rotary = Block::rotary;

  // Makes the following loss/backward passes training passes, with dropout masks drawn from
  // `pass` (a trainer's key of its seed and step) and each sequence's index in the pass's whole
  // batch: the batch given to a loss is its sequences first_sequence…, so micro-batches and
  // data-parallel shards of one step draw the masks the whole batch would. No effect with
  // ModelConfig::dropout 0.
  void set_dropout_pass(std::uint64_t pass, std::uint64_t first_sequence = 0) {
    dropout_ = config_.dropout > 0 ? DropoutMask{pass, config_.dropout} : DropoutMask{};
    dropout_first_sequence_ = first_sequence;
  }
  // Back to evaluation passes: no dropout.
  void clear_dropout_pass() { dropout_ = {}; }

  // The positions the following passes read every sequence at: index t at positions[t] (strictly
  // increasing, below position_range, or below a learned table's rows without one; a pass of T
  // indices uses the first T). Rotations, biases and position tables all see them; generation
  // (forward_step) reads 0, 1, 2, … still.
  void set_positions(std::vector<std::size_t> positions) {
    check_positions(positions, position_limit(), "CharTransformer::set_positions");
    given_positions_ = std::move(positions);
  }
  // Back to the default: 0…T−1, or a draw from each pass's tokens under a position_range.
  void clear_positions() { given_positions_.clear(); }

  void zero_grad() {
    POSENC_PROFILE_SCOPE("optimizer: zero_grad");
    store_.grads.fill(S(0));
  }

  // loss() then backward() in one pass: each chunk's forward is followed by its backward, so
  // nothing is computed twice. Adds into the gradients; returns the mean loss.
  S loss_and_backward(const Tokens& inputs, const Tokens& targets) {
    return scored_loss_and_backward(inputs, targets, nullptr);
  }
  // ... over the targets `mask` scores; the gradient added is gradient_scale × the mean's, as
  // PyTorch's (gradient_scale * loss).backward() (a data-parallel shard's share of its batch).
  S loss_and_backward(const Tokens& inputs, const Tokens& targets, const TargetMask& mask, S gradient_scale = S(1)) {
    return scored_loss_and_backward(inputs, targets, &mask, gradient_scale);
  }

  std::size_t parameter_count() const { return table_->total_size(); }
  std::size_t vocab_size() const { return config_.vocab_size; }
  std::size_t context() const { return config_.context; }
  std::size_t max_context() const { return max_context_; }
  // Whether max_context() is where the encoding's position table ends (Learned's rows), which no
  // ModelConfig::max_context can raise.
  bool context_bounded_by_position_table() const { return max_context_ == position_.max_positions(); }
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
    std::size_t B = 0, T = 0;                      // the batch
    std::size_t chunk = 0;                         // sequences per pass (≤ B)
    std::size_t rows = 0;                          // chunk·T: the positions of one full chunk
    bool has_loss = false;
    std::vector<TokenId> inputs, targets;          // (B,T)
    std::vector<std::size_t> positions;            // (T) every sequence's positions; empty: 0…T−1
    bool masked = false;                           // whether `mask` chooses the scored targets
    std::vector<std::uint8_t> mask;                // (B,T) when masked
    std::size_t scored = 0;                        // targets the loss averages over
    S gradient_scale = S(1);                       // of the loss whose gradient backward adds
    std::vector<S> logits;                         // (B,T,V)
    // one chunk (n ≤ chunk sequences, N = n·T positions):
    // for a backward x[0] the embeddings, x[l+1] block l's output; without one x[l % 2] the same
    std::vector<S> residual;                       // (Layers+1, N,D), without a backward (2, N,D)
    std::vector<BlockActivations<S>> blocks;       // one per layer, without a backward one for all
    std::vector<S> lnf, lnf_mean, lnf_rstd;        // (N,D), (N), (N)
    std::vector<S> probs, dlogits;                 // (N,V)
    std::vector<S> dlnf, dx, dx_next;              // (N,D) backward
    std::vector<S> step_ln, step_logits;           // forward_step: (D), (V)
    BlockScratch<S> scratch;
  };

  S scored_loss(const Tokens& inputs, const Tokens& targets, const TargetMask* mask) {
    begin_batch(inputs, &targets, mask, false);
    double total = 0;  // summed over the scored targets
    for (std::size_t b0 = 0; b0 < ws_.B; b0 += ws_.chunk) {
      chunk_forward(b0, false);
      total += chunk_loss(b0);
    }
    ws_.has_loss = true;
    return static_cast<S>(total / static_cast<double>(ws_.scored));
  }

  S scored_loss_and_backward(const Tokens& inputs, const Tokens& targets, const TargetMask* mask,
                             S gradient_scale = S(1)) {
    begin_batch(inputs, &targets, mask, true);
    ws_.gradient_scale = gradient_scale;
    double total = 0;
    for (std::size_t b0 = 0; b0 < ws_.B; b0 += ws_.chunk) {
      chunk_forward(b0, true);
      total += chunk_loss(b0);
      chunk_backward(b0);
    }
    ws_.has_loss = true;
    return static_cast<S>(total / static_cast<double>(ws_.scored));
  }

  // The first of a chunk's targets' mask entries, or nullptr when every target is scored.
  const std::uint8_t* chunk_mask(std::size_t b0) const {
    return ws_.masked ? ws_.mask.data() + b0 * ws_.T : nullptr;
  }
  static constexpr std::uint64_t embedding_site = 0;  // block l's masks are at site 1 + l

  static ModelConfig checked(const ModelConfig& c) {
    if (c.vocab_size == 0) fail("CharTransformer: vocab_size must be positive");
    if (c.vocab_size > static_cast<std::size_t>(std::numeric_limits<TokenId>::max()))
      fail("CharTransformer: vocab_size ", c.vocab_size, " does not fit a token id");
    if (c.context == 0) fail("CharTransformer: context must be positive");
    if (c.max_context != 0 && c.max_context < c.context)
      fail("CharTransformer: max_context ", c.max_context, " is shorter than the context ",
           c.context);
    if (!(c.dropout >= 0 && c.dropout < 1))
      fail("CharTransformer: dropout must lie in [0, 1), got ", c.dropout);
    if (c.position_range != 0 && c.position_range < c.context)
      fail("CharTransformer: position_range ", c.position_range, " is shorter than the context ", c.context,
           "; randomized positions are drawn from a range at least as long as the sequences");
    if (c.embedding_std && !(std::isfinite(*c.embedding_std) && *c.embedding_std > 0))
      fail("CharTransformer: embedding_std must be a positive finite number, got ", *c.embedding_std);
    if (c.precision == Precision::bf16) {
      if constexpr (!std::is_same_v<S, float>) fail("CharTransformer: bf16 precision needs a float model");
      if (const auto reason = bf16_unsupported_reason()) fail("CharTransformer: ", *reason);
    }
    ModelConfig resolved = c;
    if (!resolved.embedding_std) resolved.embedding_std = default_embedding_std(c.init);
    return resolved;
  }

  static std::vector<Block> make_blocks(ParameterTable& table, std::size_t context, bool causal,
                                        Precision precision) {
    std::vector<Block> blocks;
    blocks.reserve(Layers);
    for (std::size_t l = 0; l < Layers; ++l) blocks.emplace_back(table, l, context, causal, precision);
    return blocks;
  }

  void check_tokens(const Tokens& tokens, const char* what) const {
    const std::size_t B = tokens.shape()[0], T = tokens.shape()[1];
    if (B == 0 || T == 0)
      fail("CharTransformer: ", what, " shape (", B, ",", T, ") is empty; expected (B,T) with B, T ≥ 1");
    if (T > max_context_) {
      if (context_bounded_by_position_table())
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

  S* residual(std::size_t l) { return ws_.residual.data() + l * ws_.rows * Dim; }
  std::size_t chunk_size(std::size_t b0) const { return std::min(ws_.chunk, ws_.B - b0); }

  // Checks and keeps a batch, and sizes the workspace for its chunks, with or without what a
  // backward needs.
  void begin_batch(const Tokens& inputs, const Tokens* targets, const TargetMask* mask, bool for_backward) {
    check_tokens(inputs, "inputs");
    adapt_num_threads();  // an adaptive count changes between this model's passes, not inside one
    if (targets != nullptr) {
      if (targets->shape() != inputs.shape())
        fail("CharTransformer::loss: targets shape (", targets->shape()[0], ",", targets->shape()[1],
             ") does not match inputs shape (", inputs.shape()[0], ",", inputs.shape()[1], ")");
      check_tokens(*targets, "targets");
    }
    ws_.gradient_scale = S(1);
    ws_.masked = mask != nullptr;
    ws_.scored = inputs.size();
    if (mask != nullptr) {
      if (mask->shape() != inputs.shape())
        fail("CharTransformer::loss: target mask shape (", mask->shape()[0], ",", mask->shape()[1],
             ") does not match inputs shape (", inputs.shape()[0], ",", inputs.shape()[1], ")");
      ws_.mask.assign(mask->begin(), mask->end());
      ws_.scored = scored_rows(ws_.mask.data(), ws_.mask.size());
      if (ws_.scored == 0) fail("CharTransformer::loss: the target mask scores no target of the batch");
    }
    const std::size_t B = inputs.shape()[0], T = inputs.shape()[1];
    const std::size_t V = vocab_size();
    ws_.B = B;
    ws_.T = T;
    ws_.chunk = config_.chunk == 0 ? B : std::min(config_.chunk, B);
    ws_.rows = ws_.chunk * T;
    ws_.has_loss = false;
    ws_.inputs.assign(inputs.begin(), inputs.end());
    if (targets != nullptr) ws_.targets.assign(targets->begin(), targets->end());
    choose_positions(T);
    ws_.logits.resize(B * T * V);
    size_workspace(for_backward);
  }

  // Sizes the buffers of one chunk: with a backward to follow each layer's activations and the
  // gradients' buffers, without one a single layer's (growing only: a vector keeps its memory).
  void size_workspace(bool for_backward) {
    const std::size_t N = ws_.rows, V = vocab_size();
    ws_.residual.resize((for_backward ? Layers + 1 : 2) * N * Dim);
    if (ws_.blocks.size() < (for_backward ? Layers : 1)) ws_.blocks.resize(for_backward ? Layers : 1);
    for (std::size_t l = 0; l < (for_backward ? Layers : 1); ++l)
      ws_.blocks[l].resize(ws_.chunk, ws_.T, Dim, Heads, for_backward, config_.precision == Precision::bf16);
    ws_.lnf.resize(N * Dim);
    ws_.lnf_mean.resize(N);
    ws_.lnf_rstd.resize(N);
    ws_.probs.resize(N * V);
    if (for_backward) {
      ws_.dlogits.resize(N * V);
      ws_.dlnf.resize(N * Dim);
      ws_.dx.resize(N * Dim);
      ws_.dx_next.resize(N * Dim);
      ws_.scratch.resize(ws_.chunk, ws_.T, Dim);
    }
  }

  // Positions past which set_positions and a position_range may not reach: the range, else a
  // learned table's rows.
  std::size_t position_limit() const {
    return config_.position_range != 0 ? config_.position_range : position_.max_positions();
  }

  // The batch's positions (empty: 0…T−1): those given, else under a range those drawn for its
  // tokens (draw_positions_for).
  void choose_positions(std::size_t T) {
    ws_.positions.clear();
    if (!given_positions_.empty()) {
      if (given_positions_.size() < T)
        fail("CharTransformer: set_positions gave ", given_positions_.size(), " positions for a sequence of ", T);
      ws_.positions.assign(given_positions_.begin(), given_positions_.begin() + static_cast<std::ptrdiff_t>(T));
    } else if (config_.position_range != 0) {
      ws_.positions = draw_positions_for(ws_.inputs, T, config_.position_range);
    }
  }
  PositionMap batch_positions() const { return {ws_.positions}; }
  const std::size_t* embedding_rows() const { return ws_.positions.empty() ? nullptr : ws_.positions.data(); }

  // Forward for sequences [b0, b0+n) of the batch: writes their logits, and with for_backward
  // saves their activations (residual(l), ws_.blocks[l]) for chunk_backward.
  void chunk_forward(std::size_t b0, bool for_backward) {
    const std::size_t N = chunk_size(b0) * ws_.T, V = vocab_size();
    const auto& p = store_.values;
    S* logits = ws_.logits.data() + b0 * ws_.T * V;
    const S* x = chunk_through_blocks(b0, Layers, for_backward);
    profiled("forward: layernorm", [&] { fast::layernorm_forward(ws_.lnf.data(), ws_.lnf_mean.data(),
                                         ws_.lnf_rstd.data(), x, p[ln_f_w_], p[ln_f_b_], N, Dim); });
    profiled("forward: linear lm_head", [&] {
      fast::linear_forward(logits, ws_.lnf.data(), p[lm_head_w_], p[lm_head_b_], N, Dim, V, config_.precision);
    });
  }

  // Embeds sequences [b0, b0+n) of the batch and runs them through the first `blocks` blocks;
  // returns the residual stream after them (n·T, D), x[blocks] of chunk_forward's.
  S* chunk_through_blocks(std::size_t b0, std::size_t blocks, bool for_backward) {
    const std::size_t n = chunk_size(b0), T = ws_.T, V = vocab_size();
    const auto& p = store_.values;
    const std::uint64_t first_sequence = dropout_first_sequence_ + b0;
    profiled("forward: embedding", [&] {
      embedding_forward(residual(0), ws_.inputs.data() + b0 * T, p[wte_],
                        position_.positions(store_, batch_positions().extent(T)), n, T, Dim, V, embedding_rows());
      dropout(residual(0), n * T * Dim, dropout_.at(embedding_site), first_sequence * T * Dim);
    });
    const auto x = [&](std::size_t l) { return residual(for_backward ? l : l % 2); };
    for (std::size_t l = 0; l < blocks; ++l)
      blocks_[l].forward(x(l + 1), x(l), ws_.blocks[for_backward ? l : 0], store_, n, T, dropout_.at(1 + l),
                         first_sequence, batch_positions(), for_backward);
    return x(blocks);
  }

  // The chunk's summed cross-entropy over its scored targets (double); leaves its softmax in
  // ws_.probs for backward.
  double chunk_loss(std::size_t b0) {
    POSENC_PROFILE_SCOPE("forward: cross-entropy");
    const std::size_t N = chunk_size(b0) * ws_.T, V = vocab_size();
    const S mean = fast::cross_entropy_forward(ws_.probs.data(), ws_.logits.data() + b0 * ws_.T * V,
                                               ws_.targets.data() + b0 * ws_.T, N, V, static_cast<S*>(nullptr),
                                               chunk_mask(b0));
    return static_cast<double>(mean) * static_cast<double>(scored_rows(chunk_mask(b0), N));
  }

  // Adds the chunk's share of d(batch loss)/d(parameter) into the gradients; needs the chunk's
  // activations (chunk_forward) and softmax (chunk_loss).
  void chunk_backward(std::size_t b0) {
    const std::size_t n = chunk_size(b0), T = ws_.T, N = n * T, V = vocab_size();
    const auto& p = store_.values;
    auto& g = store_.grads;
    const TokenId* inputs = ws_.inputs.data() + b0 * T;
    profiled("backward: zero scratch", [&] {
      std::fill(ws_.dlogits.begin(), ws_.dlogits.begin() + static_cast<std::ptrdiff_t>(N * V), S(0));
      std::fill(ws_.dlnf.begin(), ws_.dlnf.begin() + static_cast<std::ptrdiff_t>(N * Dim), S(0));
      std::fill(ws_.dx.begin(), ws_.dx.begin() + static_cast<std::ptrdiff_t>(N * Dim), S(0));
    });
    // loss = (1/M) Σ over the batch's M scored targets: the chunk's m carry weight m/M of its mean
    profiled("backward: cross-entropy", [&] {
      const std::uint8_t* mask = chunk_mask(b0);
      const S share = static_cast<S>(static_cast<double>(scored_rows(mask, N)) / static_cast<double>(ws_.scored));
      fast::cross_entropy_backward(ws_.dlogits.data(), ws_.probs.data(), ws_.targets.data() + b0 * T,
                                   N, V, share * ws_.gradient_scale, mask);
    });
    // logits = lm_head(lnf)
    profiled("backward: linear lm_head", [&] { fast::linear_backward(ws_.dlnf.data(), g[lm_head_w_], g[lm_head_b_],
                                               ws_.dlogits.data(), ws_.lnf.data(), p[lm_head_w_], N, Dim, V, false,
                                               config_.precision); });
    // lnf = ln_f(x[L])
    profiled("backward: layernorm", [&] { fast::layernorm_backward(ws_.dx.data(), g[ln_f_w_], g[ln_f_b_],
                                          ws_.dlnf.data(), residual(Layers), p[ln_f_w_], ws_.lnf_mean.data(),
                                          ws_.lnf_rstd.data(), N, Dim); });
    // x[l+1] = block_l(x[l])
    for (std::size_t l = Layers; l-- > 0;) {
      profiled("backward: zero scratch", [&] { std::fill(ws_.dx_next.begin(),
                                               ws_.dx_next.begin() + static_cast<std::ptrdiff_t>(N * Dim), S(0)); });
      blocks_[l].backward(ws_.dx_next.data(), ws_.dx.data(), residual(l), ws_.blocks[l], ws_.scratch, store_, n, T,
                          dropout_.at(1 + l), dropout_first_sequence_ + b0, batch_positions());
      std::swap(ws_.dx, ws_.dx_next);
    }
    // x[0] = dropout(wte[inputs] + position table)
    profiled("backward: embedding", [&] {
      dropout(ws_.dx.data(), N * Dim, dropout_.at(embedding_site), (dropout_first_sequence_ + b0) * T * Dim);
      embedding_backward(g[wte_], position_.position_grads(store_), ws_.dx.data(), inputs, n, T, Dim,
                         embedding_rows());
    });
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
  DropoutMask dropout_;  // of the current training pass; inactive outside them
  std::vector<std::size_t> given_positions_;  // set_positions'; empty: none given
  std::uint64_t dropout_first_sequence_ = 0;
};

}  // namespace posenc
