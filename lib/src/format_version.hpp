// Which model file format a config needs: the writer writes the oldest
// version that holds a file, and the loader refuses a file that claims an
// older version than its config needs (schema/model.fbs lists the versions).
#pragma once

#include <cstdint>

#include "mt/model.hpp"

namespace mt::detail {

// The first field of `config` that only version 3 can hold, or null.
const char* version_3_feature(const ModelConfig& config);

// The oldest version that holds a file with this config (int8 tensors need 2,
// which it never goes below).
inline uint32_t oldest_format_version(const ModelConfig& config) {
  return version_3_feature(config) != nullptr ? 3 : 2;
}

}  // namespace mt::detail
