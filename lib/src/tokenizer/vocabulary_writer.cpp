// VocabularyData::to_sentencepiece: the protobuf wire format of SentencePiece's
// ModelProto (sentencepiece_model.proto), written by hand as vocabulary.cpp
// reads it, so that no protobuf library is needed.
#include <cstring>

#include "mt/vocabulary.hpp"

namespace mt {
namespace {

class WireWriter {
 public:
  void varint(uint32_t field, uint64_t value) {
    tag(field, 0);
    raw_varint(value);
  }
  void fixed32(uint32_t field, float value) {
    tag(field, 5);
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    for (int i = 0; i < 4; ++i) out_.push_back(uint8_t(bits >> (8 * i)));
  }
  void bytes(uint32_t field, const void* data, size_t size) {
    tag(field, 2);
    raw_varint(size);
    const auto* p = static_cast<const uint8_t*>(data);
    out_.insert(out_.end(), p, p + size);
  }
  void bytes(uint32_t field, const std::string& s) { bytes(field, s.data(), s.size()); }
  void message(uint32_t field, const WireWriter& m) { bytes(field, m.out_.data(), m.out_.size()); }
  std::vector<uint8_t>& data() { return out_; }

 private:
  void tag(uint32_t field, uint32_t wire) { raw_varint((uint64_t(field) << 3) | wire); }
  void raw_varint(uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(uint8_t(v | 0x80));
      v >>= 7;
    }
    out_.push_back(uint8_t(v));
  }
  std::vector<uint8_t> out_;
};

// SentencePiece::Type: NORMAL 1, UNKNOWN 2, CONTROL 3, USER_DEFINED 4, UNUSED 5, BYTE 6.
uint64_t piece_type(PieceType t) {
  switch (t) {
    case PieceType::unknown:
      return 2;
    case PieceType::control:
      return 3;
    case PieceType::user_defined:
      return 4;
    case PieceType::unused:
      return 5;
    case PieceType::byte:
      return 6;
    case PieceType::normal:
      break;
  }
  return 1;
}

}  // namespace

std::vector<uint8_t> VocabularyData::to_sentencepiece() const {
  WireWriter model;
  for (const VocabularyPiece& p : pieces) {
    WireWriter piece;
    piece.bytes(1, p.text);
    piece.fixed32(2, p.score);
    piece.varint(3, piece_type(p.type));
    model.message(1, piece);
  }
  WireWriter trainer;                                      // TrainerSpec: what tokenizing reads
  trainer.varint(3, type == VocabularyType::bpe ? 2 : 1);  // model_type
  trainer.varint(4, pieces.size());                        // vocab_size
  if (treat_whitespace_as_suffix) trainer.varint(24, 1);
  if (byte_fallback) trainer.varint(35, 1);
  // The special ids SentencePiece reports (it finds unk by its piece type).
  const auto id_of = [&](PieceType wanted, const char* text) -> int64_t {
    for (size_t i = 0; i < pieces.size(); ++i) {
      if (pieces[i].type == wanted && (text == nullptr || pieces[i].text == text)) return int64_t(i);
    }
    return -1;
  };
  const int64_t unk = id_of(PieceType::unknown, nullptr), bos = id_of(PieceType::control, "<s>"),
                eos = id_of(PieceType::control, "</s>"), pad = id_of(PieceType::control, "<pad>");
  trainer.varint(40, uint64_t(unk < 0 ? 0 : unk));
  trainer.varint(41, uint64_t(bos));  // -1 (absent) as protobuf writes a negative int32
  trainer.varint(42, uint64_t(eos));
  trainer.varint(43, uint64_t(pad));
  trainer.bytes(44, unk_surface);
  model.message(2, trainer);
  WireWriter normalizer;
  if (!normalization_name.empty()) normalizer.bytes(1, normalization_name);
  if (!precompiled_charsmap.empty()) normalizer.bytes(2, precompiled_charsmap.data(), precompiled_charsmap.size());
  normalizer.varint(3, add_dummy_prefix);
  normalizer.varint(4, remove_extra_whitespaces);
  normalizer.varint(5, escape_whitespaces);
  model.message(3, normalizer);
  return std::move(model.data());
}

}  // namespace mt
