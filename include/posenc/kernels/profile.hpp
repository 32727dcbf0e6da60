// ProfileScope, POSENC_PROFILE_SCOPE and profiled(): wall-clock time per named region, when POSENC_PROFILE is defined.
#pragma once

#include <chrono>
#include <cstddef>
#include <string_view>
#include <vector>

namespace posenc {

struct ProfileEntry {
  const char* name;      // a string literal: entries are told apart by its address
  double seconds = 0;
  std::size_t calls = 0;
};

// Every region timed so far in this process, in the order first seen. Not thread-safe: regions
// are timed on the thread that drives the model, around (not inside) parallel kernels.
inline std::vector<ProfileEntry>& profile_entries() {
  static std::vector<ProfileEntry> entries;
  return entries;
}
inline void profile_reset() { profile_entries().clear(); }

class ProfileScope {
 public:
  explicit ProfileScope(const char* name) : name_(name), start_(Clock::now()) {}
  ProfileScope(const ProfileScope&) = delete;
  ProfileScope& operator=(const ProfileScope&) = delete;
  ~ProfileScope() {
    const double s = std::chrono::duration<double>(Clock::now() - start_).count();
    auto& entries = profile_entries();
    for (auto& e : entries)
      if (e.name == name_) {
        e.seconds += s;
        ++e.calls;
        return;
      }
    entries.push_back(ProfileEntry{name_, s, 1});
  }

 private:
  using Clock = std::chrono::steady_clock;
  const char* name_;
  Clock::time_point start_;
};

}  // namespace posenc

#define POSENC_PROFILE_CONCAT_(a, b) a##b
#define POSENC_PROFILE_CONCAT(a, b) POSENC_PROFILE_CONCAT_(a, b)
#if defined(POSENC_PROFILE)
// Times the rest of the enclosing block under `name` (a string literal).
#define POSENC_PROFILE_SCOPE(name) \
  ::posenc::ProfileScope POSENC_PROFILE_CONCAT(posenc_profile_scope_, __LINE__)(name)
#else
#define POSENC_PROFILE_SCOPE(name) static_cast<void>(0)
#endif

namespace posenc {

// Runs step(), timed under `name` (a string literal) when POSENC_PROFILE is defined, so a layer's
// steps read as one call each: profiled("forward: gelu", [&] { gelu_forward(...); }).
template <class Step>
void profiled([[maybe_unused]] const char* name, Step&& step) {
  POSENC_PROFILE_SCOPE(name);
  step();
}

}  // namespace posenc
