// The comma-separated lists options take ("rope,alibi", "128,256"), split into their items.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "posenc/config.hpp"

namespace posenc {

// The comma-separated items of `text`, each without the spaces around it; none for an empty text.
// An empty item is an error (a typo, not a missing value), and so are spaces inside one: "13 37"
// is not 1337. Errors start with `option`.
inline std::vector<std::string> split_list(std::string_view text, std::string_view option) {
  std::vector<std::string> items;
  if (text.empty()) return items;
  for (std::size_t begin = 0;;) {
    const std::size_t end = std::min(text.find(',', begin), text.size());
    std::string_view item = text.substr(begin, end - begin);
    const std::size_t first = item.find_first_not_of(' ');
    if (first == std::string_view::npos) fail(option, ": an empty item in '", text, "'");
    item = item.substr(first, item.find_last_not_of(' ') - first + 1);
    if (item.find(' ') != std::string_view::npos) fail(option, ": '", item, "' has a space inside");
    items.emplace_back(item);
    if (end == text.size()) return items;
    begin = end + 1;
  }
}

}  // namespace posenc
