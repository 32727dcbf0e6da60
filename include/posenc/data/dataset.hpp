// TextDataset and BatchSampler: a tokenized corpus split 90/10 into train and validation, and a seeded window sampler.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "posenc/config.hpp"
#include "posenc/data/batches.hpp"
#include "posenc/data/tokenizer.hpp"
#include "posenc/random.hpp"
#include "posenc/tensor.hpp"

namespace posenc {

// The whole file as bytes; names the file in the error when it cannot be read or is empty.
inline std::string read_text_file(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error))
    fail("data file '", path, "' is a directory; expected a text file (e.g. data/tinyshakespeare/input.txt)");
  // a device, pipe or socket may never end (/dev/zero) and cannot be read again on --resume
  if (std::filesystem::exists(path, error) && !std::filesystem::is_regular_file(path, error))
    fail("data file '", path, "' is not a regular file (a device, pipe or socket); expected a text file");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot open data file '", path, "' for reading");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) fail("cannot read data file '", path, "'");
  std::string text = std::move(buffer).str();
  if (text.empty()) fail("data file '", path, "' is empty; expected a text corpus");
  return text;
}

// Whether `path` is a token folder (io/token_folder.hpp): a folder that holds a meta.json.
inline bool is_token_folder(const std::string& path) {
  std::error_code error;
  return std::filesystem::is_directory(path, error) &&
         std::filesystem::exists(std::filesystem::path(path) / "meta.json");
}

// A corpus: a file's bytes, or a folder's files (every regular file under it, hidden ones and
// those in hidden folders left out) joined in the byte order of their paths, with nothing between
// them, so the same folder always gives the same corpus. An empty folder is an error naming it.
// Several files or folders are joined with ':' as PATH joins folders ("a.txt:b.txt"), read in the
// order given; a path that exists is one path, ':' and all.
inline std::string read_corpus(const std::string& path) {
  std::error_code error;
  if (path.find(':') != std::string::npos && !std::filesystem::exists(path, error)) {
    std::string text;
    for (std::size_t start = 0; start <= path.size();) {
      const std::size_t end = std::min(path.find(':', start), path.size());
      const std::string part = path.substr(start, end - start);
      if (part.empty()) fail("data '", path, "': an empty path between ':'s; expected FILE:FILE…");
      text += read_corpus(part);
      start = end + 1;
    }
    return text;
  }
  if (!std::filesystem::is_directory(path, error)) return read_text_file(path);
  if (is_token_folder(path))
    fail("data folder '", path, "' is a token folder (shakespeare prepare), not text: read_token_folder reads it");
  std::vector<std::filesystem::path> files;
  const auto options = std::filesystem::directory_options::skip_permission_denied;
  for (auto it = std::filesystem::recursive_directory_iterator(path, options, error);
       !error && it != std::filesystem::recursive_directory_iterator(); it.increment(error)) {
    if (it->path().filename().string().starts_with(".")) {
      if (it->is_directory(error)) it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file(error)) files.push_back(it->path());
  }
  if (error) fail("data folder '", path, "': cannot list its files: ", error.message());
  std::sort(files.begin(), files.end());
  std::string text;
  for (const std::filesystem::path& file : files) {
    if (std::filesystem::is_empty(file, error)) continue;
    text += read_text_file(file.string());
  }
  if (text.empty()) fail("data folder '", path, "' holds no file with any bytes; expected text files");
  return text;
}

// How many bytes of `text` are control bytes a text file does not hold: NUL and the other
// C0 controls but tab, newline, vertical tab, form feed and carriage return, and DEL.
inline std::size_t control_byte_count(std::string_view text) {
  std::size_t count = 0;
  for (const unsigned char c : text)
    if ((c < 0x20 && !(c >= '\t' && c <= '\r')) || c == 0x7f) ++count;
  return count;
}

// Draws batches of B windows of T+1 consecutive tokens, each start uniform over the split;
// inputs are a window's first T tokens and targets its last T.
class BatchSampler final : public BatchStream {
 public:
  BatchSampler(const std::vector<TokenId>& tokens, std::size_t batch, std::size_t context,
               std::uint64_t seed, std::string_view split_name = "split")
      : tokens_(&tokens), batch_(batch), context_(context), rng_(seed) {
    if (batch == 0) fail("BatchSampler: batch size must be positive");
    if (context == 0) fail("BatchSampler: context must be positive");
    if (tokens.size() < context + 1)
      fail("BatchSampler: the ", split_name, " has ", tokens.size(),
           " tokens, shorter than one window of context + 1 = ", context + 1, " tokens");
  }

  void sample(Tokens& inputs, Tokens& targets) {
    if (inputs.shape() != Tokens::shape_type{batch_, context_}) inputs.resize({batch_, context_});
    if (targets.shape() != Tokens::shape_type{batch_, context_}) targets.resize({batch_, context_});
    const std::size_t starts = tokens_->size() - context_;  // windows of T+1 tokens
    for (std::size_t b = 0; b < batch_; ++b) {
      const std::size_t s = rng_.uniform_index(starts);
      for (std::size_t t = 0; t < context_; ++t) {
        inputs(b, t) = (*tokens_)[s + t];
        targets(b, t) = (*tokens_)[s + t + 1];
      }
    }
  }
  void sample(Batch& batch) override {
    sample(batch.inputs, batch.targets);
    batch.mask.reset();  // a corpus scores every target
  }

  std::size_t batch() const { return batch_; }
  std::size_t context() const { return context_; }
  Rng& rng() override { return rng_; }  // its state is the sampler's position, for resuming

 private:
  const std::vector<TokenId>* tokens_;
  std::size_t batch_;
  std::size_t context_;
  Rng rng_;
};

// A corpus as tokens: its bytes cut at train_fraction into a training and a validation part, each
// encoded on its own (so a BPE chunk never straddles the cut, and every tokenizer scores the same
// validation bytes), with how many bytes each part's targets stand for (bits per byte).
class TextDataset final : public TrainingData {
 public:
  // Characters: the corpus's distinct bytes, one token each.
  explicit TextDataset(std::string_view corpus, double train_fraction = 0.9)
      : TextDataset(corpus, TokenizerSpec{}, train_fraction) {}

  // The tokenizer `spec` asks for: char from the whole corpus (a validation byte is always in the
  // vocabulary), bpe trained on the training part only.
  TextDataset(std::string_view corpus, const TokenizerSpec& spec, double train_fraction = 0.9)
      : TextDataset(corpus, make_tokenizer(corpus, spec, train_fraction), train_fraction) {}

  // The corpus encoded with a given tokenizer (a checkpoint's); for char, a byte outside its
  // vocabulary is an error.
  TextDataset(std::string_view corpus, Tokenizer tokenizer, double train_fraction = 0.9)
      : tokenizer_(std::move(tokenizer)) {
    const std::size_t cut = train_bytes(corpus, train_fraction);
    train_ = tokenizer_.encode(corpus.substr(0, cut));
    val_ = tokenizer_.encode(corpus.substr(cut));
  }

  // Parts encoded before (a token folder's): each id must be in the tokenizer's vocabulary.
  TextDataset(Tokenizer tokenizer, std::vector<TokenId> train, std::vector<TokenId> val)
      : tokenizer_(std::move(tokenizer)), train_(std::move(train)), val_(std::move(val)) {
    for (const std::vector<TokenId>* part : {&train_, &val_})
      for (std::size_t i = 0; i < part->size(); ++i)
        if ((*part)[i] < 0 || static_cast<std::size_t>((*part)[i]) >= tokenizer_.vocab_size())
          fail("TextDataset: token ", i, " of the ", part == &train_ ? "training" : "validation", " part is ",
               (*part)[i], ", outside the vocabulary [0, ", tokenizer_.vocab_size(), ")");
  }

  const Tokenizer& tokenizer() const override { return tokenizer_; }
  const std::vector<TokenId>& train() const { return train_; }
  const std::vector<TokenId>& val() const { return val_; }
  const std::vector<TokenId>& split(Split which) const { return which == Split::train ? train_ : val_; }

  // The mean bytes a scored target of the split stands for: its tokens after the first (every
  // evaluation's targets) decoded, over their count; 1 for char and byte.
  double bytes_per_target(Split which) const {
    const std::vector<TokenId>& tokens = split(which);
    if (tokens.size() < 2) return 1;
    const std::size_t bytes = tokenizer_.byte_count(tokens.data() + 1, tokens.data() + tokens.size());
    return static_cast<double>(bytes) / static_cast<double>(tokens.size() - 1);
  }

  // Windows of `context` tokens from the split (a BatchSampler).
  std::unique_ptr<BatchStream> batches(Split which, std::size_t batch, std::size_t context,
                                       std::uint64_t seed) const override {
    return std::make_unique<BatchSampler>(split(which), batch, context, seed, split_name(which));
  }

 private:
  static std::size_t train_bytes(std::string_view corpus, double train_fraction) {
    if (corpus.empty()) fail("TextDataset: the corpus is empty; expected at least one byte");
    if (!(train_fraction > 0 && train_fraction < 1))
      fail("TextDataset: train_fraction must lie in (0, 1), got ", train_fraction);
    return static_cast<std::size_t>(static_cast<double>(corpus.size()) * train_fraction);
  }
  static Tokenizer make_tokenizer(std::string_view corpus, const TokenizerSpec& spec, double train_fraction) {
    if (spec.kind == TokenizerKind::character) return Tokenizer::make(spec, corpus);
    return Tokenizer::make(spec, corpus.substr(0, train_bytes(corpus, train_fraction)));
  }

  Tokenizer tokenizer_;
  std::vector<TokenId> train_;
  std::vector<TokenId> val_;
};

// How many bytes a target of each split stands for, on average.
struct BytesPerTarget {
  double train = 1, validation = 1;
  bool operator==(const BytesPerTarget&) const = default;
};

// Bits per byte of a loss in nats per target whose targets stand for `bytes_per_target` bytes
// each: the scale on which char, byte and BPE models, and any two corpora, compare.
inline double bits_per_byte(double nats_per_target, double bytes_per_target) {
  return nats_per_target / (bytes_per_target * 0.69314718055994530942);
}

}  // namespace posenc
