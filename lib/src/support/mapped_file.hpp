// A whole file mapped read-only (or, with `copy`, read into anonymous
// memory), unmapped on destruction.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "mt/status.hpp"

namespace mt::detail {

class MappedFile {
 public:
  MappedFile() = default;
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  static Expected<MappedFile> open(const std::string& path, bool copy = false);
  std::span<const uint8_t> bytes() const { return {static_cast<const uint8_t*>(data_), size_}; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace mt::detail
