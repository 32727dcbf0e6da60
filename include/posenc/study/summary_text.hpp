// Text helpers of the study summaries: fixed-point numbers, p-values, signed differences, lists.
#pragma once

#include <cstddef>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace posenc {

namespace detail {
inline std::string fixed(double x, int digits = 4) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(digits);
  out << x;
  return out.str();
}
// " [2 seeds]" after a cell that rests on fewer seeds than the design has (a run or its
// evaluation missing), so a mean of two does not pass for a mean of three; "" otherwise.
inline std::string fewer_seeds_text(std::size_t n, std::size_t design_seeds) {
  return n > 0 && n < design_seeds ? " [" + std::to_string(n) + (n == 1 ? " seed]" : " seeds]") : "";
}
// "the 3 comparisons with a test (of 5)": Holm's family, which leaves out entries without a test.
template <class Cells>
std::string tested_family_text(const Cells& cells, const char* noun) {
  std::size_t tested = 0;
  for (const auto& c : cells) tested += c.paired.has_value();
  return "the " + std::to_string(tested) + " " + noun + (tested == 1 ? "" : "s") + " with a test (of " +
         std::to_string(cells.size()) + ")";
}
inline std::string p_text(const std::optional<double>& p) {
  if (!p) return "—";
  std::ostringstream out;
  if (*p < 1e-4) {
    out.precision(1);
    out << std::scientific << *p;
  } else {
    out.setf(std::ios::fixed);
    out.precision(4);
    out << *p;
  }
  return out.str();
}

// "+0.0123", "-0.0456" or "—".
inline std::string signed_text(const std::optional<double>& x) {
  return x ? (*x >= 0 ? "+" : "") + fixed(*x) : std::string("—");
}

inline nlohmann::json optional_json(const std::optional<double>& x) {
  return x ? nlohmann::json(*x) : nlohmann::json(nullptr);
}
inline std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : sep) + item;
  return out;
}
}  // namespace detail

}  // namespace posenc
