// A vocabulary named on the command line: a SentencePiece .model file, or a
// libmt model file, whose embedded vocabulary is taken.
#pragma once

#include <string>

#include "mt/vocabulary.hpp"

namespace mt::cli {

// Errors name the path and what it is ("'x' is a libmt model without a
// vocabulary", "not a SentencePiece model: ...").
Expected<VocabularyData> read_vocabulary(const std::string& path);

// Whether the file is a libmt model (by its FlatBuffers identifier).
bool is_libmt_model(const std::string& path);

}  // namespace mt::cli
