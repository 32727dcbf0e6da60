// format_duration(): seconds as "4m07s" or "1h02m03s", for progress lines and ETAs.
#pragma once

#include <cstdio>
#include <string>

namespace examples {

inline std::string format_duration(double seconds) {
  const auto s = static_cast<long long>(seconds + 0.5);
  char text[32];
  if (s >= 3600)
    std::snprintf(text, sizeof text, "%lldh%02lldm%02llds", s / 3600, s / 60 % 60, s % 60);
  else
    std::snprintf(text, sizeof text, "%lldm%02llds", s / 60, s % 60);
  return text;
}

}  // namespace examples
