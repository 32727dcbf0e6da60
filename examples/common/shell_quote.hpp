// shell_quote: a word as a POSIX shell reads it back unchanged, for the commands a program prints.
#pragma once

#include <string>
#include <string_view>

namespace examples {

// `word` as is when it holds only characters no shell treats specially, else in single quotes
// (a quote inside as '\''), so "r/my run" or "a;rm -rf x" stays one argument.
inline std::string shell_quote(std::string_view word) {
  const auto plain = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view("_-./:=@%+,").find(c) != std::string_view::npos;
  };
  bool safe = !word.empty();
  for (const char c : word) safe = safe && plain(c);
  if (safe) return std::string(word);
  std::string quoted = "'";
  for (const char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

}  // namespace examples
