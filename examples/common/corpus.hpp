// load_corpus: the text (a file, a folder of files, or a token folder) a checkpoint is evaluated on, in its tokens.
#pragma once

#include <string>
#include <utility>

#include <posenc/transformer.hpp>

namespace examples {

// A token folder must hold the checkpoint's tokens; a text is encoded with them. An error names the
// path.
inline posenc::TextDataset load_corpus(const std::string& path, const posenc::Tokenizer& tokenizer) {
  if (posenc::is_token_folder(path)) {
    posenc::TokenFolder folder = posenc::read_token_folder(path);
    if (!(folder.data.tokenizer() == tokenizer))
      posenc::fail("token folder '", path, "' holds tokens of ", folder.data.tokenizer().describe(),
                   ", not of the checkpoint's ", tokenizer.describe(), "; give its text instead");
    return std::move(folder.data);
  }
  const std::string text = posenc::read_corpus(path);
  try {
    return posenc::TextDataset(text, tokenizer);
  } catch (const posenc::Error& e) {
    posenc::fail("data file '", path, "': ", e.what());
  }
}

}  // namespace examples
