#include "support/atomic_file.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace mt::detail {

Status write_file_atomically(const std::string& path, std::span<const uint8_t> bytes) {
  std::string tmp = path + ".tmp.XXXXXX";
  const int fd = ::mkstemp(tmp.data());
  // Errors name the file asked for, never the temporary one beside it.
  if (fd < 0) return Status::error(Errc::io_error, "cannot write '%s': %s", path.c_str(), std::strerror(errno));
  // mkstemp makes the file 0600; give it the mode a new file gets.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  (void)::fchmod(fd, 0666 & ~mask);
  std::FILE* f = ::fdopen(fd, "wb");
  if (f == nullptr) {
    const int err = errno;
    ::close(fd);
    std::remove(tmp.c_str());
    return Status::error(Errc::io_error, "cannot write '%s': %s", path.c_str(), std::strerror(err));
  }
  const bool written = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  const int write_errno = errno;
  const bool closed = std::fclose(f) == 0;
  if (!written || !closed || std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = !written ? write_errno : errno;
    std::remove(tmp.c_str());
    return Status::error(Errc::io_error, "cannot write '%s': %s", path.c_str(), std::strerror(err));
  }
  return {};
}

}  // namespace mt::detail
