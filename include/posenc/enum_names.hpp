// EnumNames: an enumeration's values and their names listed once; name, parse and the choice list derive from it.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "posenc/config.hpp"

namespace posenc {

// The names of enumeration E's values, in the order of its enumerators: the one table that the
// JSON, the command line's choices and the error messages read. `what` names the setting in an
// error ("learning-rate schedule").
template <class E, std::size_t N>
struct EnumNames {
  std::string_view what;
  std::array<std::pair<E, std::string_view>, N> entries;

  // Whether the table lists E's enumerators 0 … N−1 in order, each once: a static_assert of each
  // table, so an enumerator added in the middle without its name is a compile error.
  constexpr bool in_order() const {
    for (std::size_t i = 0; i < N; ++i)
      if (static_cast<std::size_t>(entries[i].first) != i || entries[i].second.empty()) return false;
    return true;
  }
  constexpr std::string_view name(E value) const { return entries[static_cast<std::size_t>(value)].second; }
  // The value named `text`; an error listing the names otherwise.
  E parse(std::string_view text) const {
    for (const auto& [value, name] : entries)
      if (name == text) return value;
    fail("unknown ", what, " '", text, "' (known: ", known(), ")");
  }
  std::vector<std::string> names() const {
    std::vector<std::string> list;
    for (const auto& entry : entries) list.emplace_back(entry.second);
    return list;
  }
  // "constant, cosine, linear, wsd"
  std::string known() const {
    std::string text;
    for (const auto& entry : entries) text += (text.empty() ? "" : ", ") + std::string(entry.second);
    return text;
  }
};

}  // namespace posenc
