// DirectoryLock: one process at a time writes a run or study directory; another is refused, told who holds it.
#pragma once

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

#include "posenc/config.hpp"

namespace posenc {

// An exclusive flock() on "<dir>/lock", held until destruction. The kernel releases it when the
// process ends however it ends, so a killed run leaves no stale lock to clean up. The file holds
// the holder's process id and host, for the refusal's message, and is left in place (deleting it
// would let two processes lock two different files of the same name).
// A file system without flock (some network mounts) cannot be locked: the lock is then not held
// and held() says so, rather than refusing every run there.
class DirectoryLock {
 public:
  explicit DirectoryLock(const std::filesystem::path& dir) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) fail("cannot create the directory '", dir.string(), "': ", ec.message());
    const std::string path = (dir / "lock").string();
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) fail("cannot open the lock file '", path, "': ", std::strerror(errno));
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      const int error = errno;
      if (error == ENOLCK || error == EOPNOTSUPP || error == ENOSYS) {
        held_ = false;
        return;
      }
      const std::string holder = read_holder();
      ::close(fd_);
      fd_ = -1;
      if (error == EWOULDBLOCK)
        fail("the directory '", dir.string(), "' is in use by another process",
             holder.empty() ? std::string() : " (" + holder + ")",
             "; wait for it to end or stop it, or choose another directory");
      fail("cannot lock '", path, "': ", std::strerror(error));
    }
    char host[256] = "unknown host";
    ::gethostname(host, sizeof host - 1);
    const std::string holder = detail::concat("process ", ::getpid(), " on ", host, "\n");
    if (::ftruncate(fd_, 0) == 0) {
      const ssize_t ignored = ::pwrite(fd_, holder.data(), holder.size(), 0);  // only for the message
      (void)ignored;
    }
  }
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;
  ~DirectoryLock() {
    if (fd_ >= 0) ::close(fd_);  // releases the flock
  }
  bool held() const { return held_; }

 private:
  std::string read_holder() const {
    char text[512] = {};
    const ssize_t n = ::pread(fd_, text, sizeof text - 1, 0);
    std::string holder(text, n > 0 ? static_cast<std::size_t>(n) : 0);
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == '\0')) holder.pop_back();
    return holder;
  }

  int fd_ = -1;
  bool held_ = true;
};

}  // namespace posenc
