// Version macros and posenc::Error, the one exception type that every bad input throws.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

#define POSENC_VERSION_MAJOR 0
#define POSENC_VERSION_MINOR 1
#define POSENC_VERSION_PATCH 0
#define POSENC_VERSION_TEXT_(x) #x
#define POSENC_VERSION_TEXT(x) POSENC_VERSION_TEXT_(x)

namespace posenc {

// "MAJOR.MINOR.PATCH", from the macros above (which CMake's project version is read from too).
inline constexpr const char* version_string = POSENC_VERSION_TEXT(POSENC_VERSION_MAJOR) "." POSENC_VERSION_TEXT(
    POSENC_VERSION_MINOR) "." POSENC_VERSION_TEXT(POSENC_VERSION_PATCH);

// Thrown for bad input: the message names the file, tensor or argument and what was expected.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {
template <class... Parts>
std::string concat(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}
}  // namespace detail

// Throws posenc::Error with the parts streamed into one message.
template <class... Parts>
[[noreturn]] void fail(const Parts&... parts) {
  throw Error(detail::concat(parts...));
}

}  // namespace posenc
