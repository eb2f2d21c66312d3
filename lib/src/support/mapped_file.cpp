#include "support/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace mt::detail {

MappedFile::~MappedFile() {
  if (data_ != nullptr) munmap(data_, size_);
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) munmap(data_, size_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

Expected<MappedFile> MappedFile::open(const std::string& path, bool copy) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return Status::error(Errc::io_error, "cannot open '%s': %s", path.c_str(), std::strerror(errno));
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::error(Errc::io_error, "'%s' is not a regular file", path.c_str());
  }
  MappedFile file;
  file.size_ = size_t(st.st_size);
  if (file.size_ == 0) {
    ::close(fd);
    return Status::error(Errc::corrupt_model, "'%s' is empty", path.c_str());
  }
  if (copy) {
    // Anonymous memory filled by reading: later changes to the file, even in
    // place, cannot reach it.
    void* data = mmap(nullptr, file.size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (data == MAP_FAILED) {
      ::close(fd);
      file.size_ = 0;
      return Status::error(Errc::out_of_memory, "cannot allocate %zu bytes to read '%s'", size_t(st.st_size),
                           path.c_str());
    }
    file.data_ = data;
    for (size_t done = 0; done < file.size_;) {
      const ssize_t got = ::pread(fd, static_cast<char*>(data) + done, file.size_ - done, off_t(done));
      if (got <= 0) {
        const int read_errno = got < 0 ? errno : 0;
        ::close(fd);
        return Status::error(Errc::io_error, "cannot read '%s': %s", path.c_str(),
                             got < 0 ? std::strerror(read_errno) : "the file shrank while it was read");
      }
      done += size_t(got);
    }
    ::close(fd);
    mprotect(data, file.size_, PROT_READ);
    return file;
  }
  void* data = mmap(nullptr, file.size_, PROT_READ, MAP_PRIVATE, fd, 0);
  const int map_errno = errno;
  ::close(fd);  // the mapping keeps the file alive
  if (data == MAP_FAILED) {
    file.size_ = 0;
    return Status::error(Errc::io_error, "cannot map '%s': %s", path.c_str(), std::strerror(map_errno));
  }
  file.data_ = data;
  return file;
}

}  // namespace mt::detail
