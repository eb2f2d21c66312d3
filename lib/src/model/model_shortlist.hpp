// The model file's vocabulary shortlist: checked and read in place at load,
// and written by ModelWriter.
#pragma once

#include <optional>

#include "model_generated.h"
#include "mt/model.hpp"

namespace mt::detail {

// The file's shortlist (nullopt when it has none), every id checked against
// the config: rows ascending and in the target vocabulary, one row per source id.
Expected<std::optional<ShortlistView>> read_shortlist(const fb::Shortlist* shortlist, const ModelConfig& config);

// A shortlist as ModelWriter stores it, after the same checks.
Status check_shortlist(const ShortlistData& shortlist, const ModelConfig& config);
flatbuffers::Offset<fb::Shortlist> build_shortlist(flatbuffers::FlatBufferBuilder& b, const ShortlistData& shortlist);

}  // namespace mt::detail
