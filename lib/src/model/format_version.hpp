// Which model file format a config needs: the writer writes the oldest
// version that holds a file, and the loader refuses a file that claims an
// older version than its config needs (schema/model.fbs lists the versions).
#pragma once

#include "mt/model.hpp"

namespace mt::detail {

// The first field of `config` that only version 3 can hold, or null (the
// writer adds the vocabulary's version 3 parts: ModelWriter::format_version).
const char* version_3_feature(const ModelConfig& config);

}  // namespace mt::detail
