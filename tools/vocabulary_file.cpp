#include "vocabulary_file.hpp"

#include <cstring>
#include <fstream>

#include "cli_files.hpp"
#include "mt/model.hpp"

namespace mt::cli {

// A FlatBuffers file names itself at bytes 4..8: libmt models say LMT1.
bool is_libmt_model(const std::string& path) {
  char head[8] = {};
  std::ifstream f(path, std::ios::binary);
  return f.read(head, sizeof head) && std::memcmp(head + 4, "LMT1", 4) == 0;
}

Expected<VocabularyData> read_vocabulary(const std::string& path) {
  if (std::string why = unreadable_file(path); !why.empty()) return Status::error(Errc::io_error, "%s", why.c_str());
  if (is_libmt_model(path)) {  // mapped by Model::load, never read whole
    auto model = Model::load(path);
    if (!model) return model.status();
    const VocabularyData* v = (*model)->vocabulary();
    if (v == nullptr) {
      return Status::error(Errc::invalid_argument,
                           "'%s' is a libmt model without a vocabulary (it translates token ids)", path.c_str());
    }
    return *v;
  }
  std::string bytes, error;
  if (!read_file(path, &bytes, &error)) return Status::error(Errc::io_error, "%s", error.c_str());
  auto v = VocabularyData::from_sentencepiece(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
  if (!v) {
    return Status::error(v.status().code(), "'%s' is neither a SentencePiece .model nor a libmt model (%s)",
                         path.c_str(), v.status().message());
  }
  return v;
}

}  // namespace mt::cli
