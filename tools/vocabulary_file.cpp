#include "vocabulary_file.hpp"

#include <cstring>

#include "cli_files.hpp"
#include "mt/model.hpp"

namespace mt::cli {

Expected<VocabularyData> read_vocabulary(const std::string& path) {
  std::string bytes, error;
  if (!read_file(path, &bytes, &error)) return Status::error(Errc::io_error, "%s", error.c_str());
  // A FlatBuffers file names itself at bytes 4..8: libmt models say LMT1.
  if (bytes.size() >= 8 && std::memcmp(bytes.data() + 4, "LMT1", 4) == 0) {
    auto model = Model::load(path);
    if (!model) return model.status();
    const VocabularyData* v = (*model)->vocabulary();
    if (v == nullptr) {
      return Status::error(Errc::invalid_argument,
                           "'%s' is a libmt model without a vocabulary (it translates token ids)", path.c_str());
    }
    return *v;
  }
  auto v = VocabularyData::from_sentencepiece(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
  if (!v) {
    return Status::error(v.status().code(), "'%s' is neither a SentencePiece .model nor a libmt model (%s)",
                         path.c_str(), v.status().message());
  }
  return v;
}

}  // namespace mt::cli
