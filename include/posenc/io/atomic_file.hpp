// write_file_atomically(): writes a whole file under a temporary name and renames it into place.
#pragma once

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>

#include <unistd.h>

#include "posenc/config.hpp"

namespace posenc {

// An interrupted write leaves whatever was at `path` before intact: the bytes go to
// "<path>.tmp.<pid>.<n>" in the same directory, which is renamed over `path` once complete.
// Errors name the path and what it is ("cannot save safetensors file 'x': …").
inline void write_file_atomically(const std::string& path, std::string_view content,
                                  std::string_view what = "file") {
  static std::atomic<unsigned long> counter{0};
  const std::string tmp = detail::concat(path, ".tmp.", ::getpid(), ".", counter++);
  struct RemoveUnlessRenamed {
    const std::string& tmp;
    bool renamed = false;
    ~RemoveUnlessRenamed() {
      std::error_code ignored;
      if (!renamed) std::filesystem::remove(tmp, ignored);
    }
  } guard{tmp};
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) fail("cannot save ", what, " '", path, "': cannot open '", tmp, "' for writing");
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    out.flush();
    if (!out) fail("cannot save ", what, " '", path, "': writing '", tmp, "' failed (disk full?)");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) fail("cannot save ", what, " '", path, "': renaming '", tmp, "' into place failed: ", ec.message());
  guard.renamed = true;
}

}  // namespace posenc
