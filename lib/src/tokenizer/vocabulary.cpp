// Reads a SentencePiece ModelProto (sentencepiece_model.proto, proto2) from
// its wire format without protobuf: varint tags, then a varint, a fixed32
// or a length-delimited payload per field. Only the fields tokenization needs
// are kept; others are skipped. Absent fields take their proto2 defaults, a
// repeated singular field keeps its last value and a repeated sub-message is
// merged, as protobuf does; an enum value this reader does not know leaves
// the field as it was (protobuf keeps it aside as an unknown field).
//
// Refused: WORD and CHAR models, and a denormalizer_spec with rules (libmt
// does not denormalize decoded text); and any malformed byte sequence.
#include <cstring>
#include <string_view>

#include "mt/vocabulary.hpp"
#include "tokenizer/normalizer.hpp"
#include "tokenizer/vocabulary_view.hpp"

namespace mt {
namespace {

enum Wire : uint32_t { kVarint = 0, kFixed64 = 1, kBytes = 2, kFixed32 = 5 };

struct Field {
  uint32_t number = 0;
  uint32_t wire = 0;
  uint64_t varint = 0;
  uint32_t fixed32 = 0;
  std::span<const uint8_t> bytes;
};

class WireReader {
 public:
  WireReader(std::span<const uint8_t> data, const char* message) : data_(data), message_(message) {}
  bool done() const { return pos_ == data_.size(); }

  Status next(Field* f) {
    uint64_t tag = 0;
    MT_RETURN_IF_ERROR(varint(&tag, "tag"));
    f->number = static_cast<uint32_t>(tag >> 3);
    f->wire = static_cast<uint32_t>(tag & 7);
    if (f->number == 0 || (tag >> 3) > 0x1FFFFFFF)
      return Status::error(Errc::corrupt_model, "SentencePiece model: %s has an invalid field number at byte %zu",
                           message_, pos_);
    switch (f->wire) {
      case kVarint:
        return varint(&f->varint, "varint");
      case kFixed64:
        return skip(8, f);
      case kFixed32: {
        MT_RETURN_IF_ERROR(skip(4, f));
        const uint8_t* p = f->bytes.data();
        f->fixed32 = uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
        return {};
      }
      case kBytes: {
        uint64_t length = 0;
        MT_RETURN_IF_ERROR(varint(&length, "length"));
        return skip(length, f);
      }
      default:
        return Status::error(Errc::corrupt_model, "SentencePiece model: field %u of %s has unsupported wire type %u",
                             f->number, message_, f->wire);
    }
  }

  // Error for a known field carried with the wrong wire type.
  Status expect(const Field& f, uint32_t wire, const char* name) const {
    if (f.wire == wire) return {};
    return Status::error(Errc::corrupt_model, "SentencePiece model: %s.%s (field %u) has wire type %u, expected %u",
                         message_, name, f.number, f.wire, wire);
  }

 private:
  Status varint(uint64_t* value, const char* what) {
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      if (pos_ == data_.size())
        return Status::error(Errc::corrupt_model, "SentencePiece model: %s truncated inside a %s", message_, what);
      const uint8_t b = data_[pos_++];
      if (shift == 63 && b > 1)
        return Status::error(Errc::corrupt_model, "SentencePiece model: %s has a %s longer than 64 bits", message_,
                             what);
      v |= uint64_t(b & 0x7F) << shift;
      if ((b & 0x80) == 0) {
        *value = v;
        return {};
      }
    }
    return Status::error(Errc::corrupt_model, "SentencePiece model: %s has a %s longer than 64 bits", message_, what);
  }

  Status skip(uint64_t length, Field* f) {
    if (length > data_.size() - pos_)
      return Status::error(Errc::corrupt_model, "SentencePiece model: field %u of %s runs %llu bytes past the end",
                           f->number, message_, static_cast<unsigned long long>(length - (data_.size() - pos_)));
    f->bytes = data_.subspan(pos_, length);
    pos_ += length;
    return {};
  }

  std::span<const uint8_t> data_;
  const char* message_;
  size_t pos_ = 0;
};

std::string to_string(std::span<const uint8_t> bytes) {
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

float to_float(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

Status parse_piece(std::span<const uint8_t> data, VocabularyPiece* piece) {
  WireReader r(data, "SentencePiece");
  while (!r.done()) {
    Field f;
    MT_RETURN_IF_ERROR(r.next(&f));
    switch (f.number) {
      case 1:
        MT_RETURN_IF_ERROR(r.expect(f, kBytes, "piece"));
        piece->text = to_string(f.bytes);
        break;
      case 2:
        MT_RETURN_IF_ERROR(r.expect(f, kFixed32, "score"));
        piece->score = to_float(f.fixed32);
        break;
      case 3:
        MT_RETURN_IF_ERROR(r.expect(f, kVarint, "type"));
        switch (static_cast<int32_t>(f.varint)) {
          case 1:
            piece->type = PieceType::normal;
            break;
          case 2:
            piece->type = PieceType::unknown;
            break;
          case 3:
            piece->type = PieceType::control;
            break;
          case 4:
            piece->type = PieceType::user_defined;
            break;
          case 5:
            piece->type = PieceType::unused;
            break;
          case 6:
            piece->type = PieceType::byte;
            break;
          default:
            break;
        }
        break;
      default:
        break;
    }
  }
  return {};
}

Status parse_trainer_spec(std::span<const uint8_t> data, int32_t* model_type, VocabularyData* v) {
  WireReader r(data, "TrainerSpec");
  while (!r.done()) {
    Field f;
    MT_RETURN_IF_ERROR(r.next(&f));
    switch (f.number) {
      case 3: {
        MT_RETURN_IF_ERROR(r.expect(f, kVarint, "model_type"));
        const auto t = static_cast<int32_t>(f.varint);
        if (t >= 1 && t <= 4) *model_type = t;
        break;
      }
      case 24:
        MT_RETURN_IF_ERROR(r.expect(f, kVarint, "treat_whitespace_as_suffix"));
        v->treat_whitespace_as_suffix = f.varint != 0;
        break;
      case 35:
        MT_RETURN_IF_ERROR(r.expect(f, kVarint, "byte_fallback"));
        v->byte_fallback = f.varint != 0;
        break;
      case 44: {
        MT_RETURN_IF_ERROR(r.expect(f, kBytes, "unk_surface"));
        // SentencePiece hands it on as a C string: it ends at a NUL.
        const std::string s = to_string(f.bytes);
        v->unk_surface = s.substr(0, s.find('\0'));
        break;
      }
      default:
        break;
    }
  }
  return {};
}

struct NormalizerSpec {
  std::string name;
  std::vector<uint8_t> charsmap;
  bool add_dummy_prefix = true;
  bool remove_extra_whitespaces = true;
  bool escape_whitespaces = true;
};

Status parse_normalizer_spec(std::span<const uint8_t> data, const char* message, NormalizerSpec* spec) {
  WireReader r(data, message);
  while (!r.done()) {
    Field f;
    MT_RETURN_IF_ERROR(r.next(&f));
    switch (f.number) {
      case 1:
        MT_RETURN_IF_ERROR(r.expect(f, kBytes, "name"));
        spec->name = to_string(f.bytes);
        break;
      case 2:
        MT_RETURN_IF_ERROR(r.expect(f, kBytes, "precompiled_charsmap"));
        spec->charsmap.assign(f.bytes.begin(), f.bytes.end());
        break;
      case 3:
        MT_RETURN_IF_ERROR(r.expect(f, kVarint, "add_dummy_prefix"));
        spec->add_dummy_prefix = f.varint != 0;
        break;
      case 4:
        MT_RETURN_IF_ERROR(r.expect(f, kVarint, "remove_extra_whitespaces"));
        spec->remove_extra_whitespaces = f.varint != 0;
        break;
      case 5:
        MT_RETURN_IF_ERROR(r.expect(f, kVarint, "escape_whitespaces"));
        spec->escape_whitespaces = f.varint != 0;
        break;
      default:
        break;
    }
  }
  return {};
}

}  // namespace

Expected<VocabularyData> VocabularyData::from_sentencepiece(std::span<const uint8_t> model_proto) {
  VocabularyData v;
  int32_t model_type = 1;  // UNIGRAM, the proto2 default
  NormalizerSpec normalizer, denormalizer;
  WireReader r(model_proto, "ModelProto");
  while (!r.done()) {
    Field f;
    MT_RETURN_IF_ERROR(r.next(&f));
    switch (f.number) {
      case 1: {
        MT_RETURN_IF_ERROR(r.expect(f, kBytes, "pieces"));
        VocabularyPiece piece;
        MT_RETURN_IF_ERROR(parse_piece(f.bytes, &piece));
        v.pieces.push_back(std::move(piece));
        break;
      }
      case 2:
        MT_RETURN_IF_ERROR(r.expect(f, kBytes, "trainer_spec"));
        MT_RETURN_IF_ERROR(parse_trainer_spec(f.bytes, &model_type, &v));
        break;
      case 3:
        MT_RETURN_IF_ERROR(r.expect(f, kBytes, "normalizer_spec"));
        MT_RETURN_IF_ERROR(parse_normalizer_spec(f.bytes, "NormalizerSpec", &normalizer));
        break;
      case 5:
        MT_RETURN_IF_ERROR(r.expect(f, kBytes, "denormalizer_spec"));
        MT_RETURN_IF_ERROR(parse_normalizer_spec(f.bytes, "denormalizer NormalizerSpec", &denormalizer));
        break;
      default:
        break;  // self_test_data (4) and anything newer
    }
  }

  if (model_type == 3 || model_type == 4)
    return Status::error(Errc::invalid_model,
                         "SentencePiece model: model_type %s is not supported (only UNIGRAM and BPE)",
                         model_type == 3 ? "WORD" : "CHAR");
  if (!denormalizer.charsmap.empty())
    return Status::error(Errc::invalid_model, "SentencePiece model: denormalizer_spec rules are not supported");
  v.type = model_type == 2 ? VocabularyType::bpe : VocabularyType::unigram;
  v.precompiled_charsmap = std::move(normalizer.charsmap);
  v.normalization_name = std::move(normalizer.name);
  v.add_dummy_prefix = normalizer.add_dummy_prefix;
  v.remove_extra_whitespaces = normalizer.remove_extra_whitespaces;
  v.escape_whitespaces = normalizer.escape_whitespaces;
  MT_RETURN_IF_ERROR(v.validate());
  return v;
}

Status VocabularyData::validate() const {
  const detail::FlatVocabulary flat(*this);
  MT_RETURN_IF_ERROR(flat.view().validate());
  return detail::piece_trie_of(flat.view(), /*user_defined_only=*/false).status();
}

}  // namespace mt
