// A model's default non-breaking prefixes, worked out once when it loads.
#pragma once

#include "mt/model.hpp"
#include "mt/sentence_splitter.hpp"

namespace mt::detail {

// The metadata's "nonbreaking_prefixes" list, else libmt's list for its
// source_language ("en", "eng", "en-US", ...), else none. Error: a malformed
// list in the metadata (Errc::invalid_model, naming the key).
Expected<NonBreakingPrefixes> nonbreaking_prefixes_for(const ModelMetadata& metadata);

}  // namespace mt::detail
