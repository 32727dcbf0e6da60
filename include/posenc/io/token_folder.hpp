// save_token_folder / read_token_folder: a corpus tokenized once (as nanoGPT's prepare.py), its tokenizer and tokens.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "posenc/config.hpp"
#include "posenc/data/dataset.hpp"
#include "posenc/data/tokenizer.hpp"
#include "posenc/io/atomic_file.hpp"
#include "posenc/io/tokenizer_metadata.hpp"
#include "posenc/tensor.hpp"

namespace posenc {

inline constexpr const char* token_folder_format = "posenc-tokens-1";

// A folder of a tokenized corpus: meta.json (format, the tokenizer as a checkpoint's metadata
// stores it, dtype, token counts, the corpus's digest and path) and the two parts' token ids,
// train.bin and val.bin, little-endian uint16 (as nanoGPT's, for a vocabulary of at most 65,536)
// or uint32, readable with numpy.memmap.
struct TokenFolder {
  TextDataset data;
  std::string corpus_digest;  // of the text it was made from: a run on it is a run on that text
  std::string source;         // the text's path, as given to prepare
};

namespace detail {

inline std::size_t token_bytes(std::size_t vocab_size) { return vocab_size <= 65536 ? 2 : 4; }

inline std::string encode_tokens(const std::vector<TokenId>& tokens, std::size_t width) {
  std::string bytes(tokens.size() * width, '\0');
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    auto value = static_cast<std::uint32_t>(tokens[i]);
    for (std::size_t b = 0; b < width; ++b, value >>= 8) bytes[i * width + b] = static_cast<char>(value & 0xFF);
  }
  return bytes;
}

inline std::vector<TokenId> read_tokens(const std::filesystem::path& file, std::size_t count, std::size_t width,
                                        const std::string& where) {
  std::error_code error;
  const auto size = std::filesystem::file_size(file, error);
  if (error) fail(where, ": cannot read '", file.filename().string(), "': ", error.message());
  if (size % width != 0 || size / width != count)  // not count × width, which a huge count wraps
    fail(where, ": '", file.filename().string(), "' holds ", size, " bytes, not the ", count, " tokens × ", width,
         " bytes meta.json says");
  std::ifstream in(file, std::ios::binary);
  std::string bytes(size, '\0');
  if (!in.read(bytes.data(), static_cast<std::streamsize>(size)))
    fail(where, ": cannot read '", file.filename().string(), "'");
  std::vector<TokenId> tokens(count);
  for (std::size_t i = 0; i < count; ++i) {
    std::uint32_t value = 0;
    for (std::size_t b = width; b-- > 0;) value = (value << 8) | static_cast<unsigned char>(bytes[i * width + b]);
    tokens[i] = static_cast<TokenId>(value);
  }
  return tokens;
}

}  // namespace detail

// Writes `data`'s tokenizer and parts into `folder` (created if missing); meta.json goes last, so
// a folder cut off while writing is never taken for a complete one.
inline void save_token_folder(const std::string& folder, const TextDataset& data, const std::string& corpus_digest,
                              const std::string& source) {
  std::error_code error;
  std::filesystem::create_directories(folder, error);
  if (error) fail("cannot create token folder '", folder, "': ", error.message());
  const std::filesystem::path dir(folder);
  const std::size_t width = detail::token_bytes(data.vocab_size());
  write_file_atomically((dir / "train.bin").string(), detail::encode_tokens(data.train(), width), "token file");
  write_file_atomically((dir / "val.bin").string(), detail::encode_tokens(data.val(), width), "token file");
  nlohmann::json meta = {{"format", token_folder_format},
                         {"dtype", width == 2 ? "uint16" : "uint32"},
                         {"vocab_size", data.vocab_size()},
                         {"train_tokens", data.train().size()},
                         {"val_tokens", data.val().size()},
                         {"corpus_digest", corpus_digest},
                         {"source", source}};
  for (const auto& [key, value] : tokenizer_metadata(data.tokenizer())) meta[key] = value;
  write_file_atomically((dir / "meta.json").string(), meta.dump(2) + "\n", "token folder metadata");
}

// Reads what save_token_folder wrote; anything missing, mistyped or inconsistent (a file of
// another length, an id outside the vocabulary) is an error naming the folder.
inline TokenFolder read_token_folder(const std::string& folder) {
  const std::string where = "token folder '" + folder + "'";
  const std::filesystem::path dir(folder);
  std::ifstream in(dir / "meta.json");
  if (!in) fail(where, ": cannot open meta.json");
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json meta = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (!meta.is_object()) fail(where, ": meta.json is not a JSON object");
  try {
    if (meta.value("format", "") != token_folder_format)
      fail("meta.json's format is ", meta.contains("format") ? meta.at("format").dump() : "missing", ", not '",
           token_folder_format, "'");
    const std::string dtype = meta.at("dtype").get<std::string>();
    if (dtype != "uint16" && dtype != "uint32") fail("meta.json's dtype is '", dtype, "', not uint16 or uint32");
    Metadata strings;
    for (const char* key : {"tokenizer", "vocab", "merges"})
      if (meta.contains(key)) strings[key] = meta.at(key).get<std::string>();
    Tokenizer tokenizer = read_tokenizer_metadata(strings, where);
    if (meta.at("vocab_size").get<std::size_t>() != tokenizer.vocab_size())
      fail("meta.json's vocab_size ", meta.at("vocab_size").dump(), " is not its tokenizer's ", tokenizer.vocab_size());
    const std::size_t width = dtype == "uint16" ? 2 : 4;
    std::vector<TokenId> train =
        detail::read_tokens(dir / "train.bin", meta.at("train_tokens").get<std::size_t>(), width, where);
    std::vector<TokenId> val =
        detail::read_tokens(dir / "val.bin", meta.at("val_tokens").get<std::size_t>(), width, where);
    return {TextDataset(std::move(tokenizer), std::move(train), std::move(val)),
            meta.at("corpus_digest").get<std::string>(), meta.at("source").get<std::string>()};
  } catch (const nlohmann::json::exception& e) {
    fail(where, ": meta.json: ", e.what());
  } catch (const Error& e) {
    const std::string message = e.what();
    if (message.starts_with(where)) throw;
    fail(where, ": ", message);
  }
}

}  // namespace posenc
