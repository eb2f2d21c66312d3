// Writing a file so that readers see the old one or the whole new one:
// ModelWriter::write and Model::save both replace model files this way
// (model.hpp says why a mapped model file must never be rewritten in place).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "mt/status.hpp"

namespace mt::detail {

// Writes `bytes` to a new temporary file beside `path` (unique, so concurrent
// writers never share one; mode 0666 less the umask, as any new file) and
// renames it over `path`. On failure nothing is left behind and `path` is
// untouched.
Status write_file_atomically(const std::string& path, std::span<const uint8_t> bytes);
// The same for text.
inline Status write_file_atomically(const std::string& path, std::string_view text) {
  return write_file_atomically(path, {reinterpret_cast<const uint8_t*>(text.data()), text.size()});
}

}  // namespace mt::detail
