// The tokenizer's read-only form of a vocabulary: flat arrays that point
// into a mapped model file (loading copies no piece) or into a
// FlatVocabulary made from a VocabularyData.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mt/status.hpp"
#include "mt/vocabulary.hpp"
#include "tokenizer/piece_trie.hpp"

namespace mt::detail {

struct VocabularyView {
  VocabularyType type = VocabularyType::none;
  // Piece i is piece_text[piece_ends[i - 1] .. piece_ends[i]) (from 0 for i = 0).
  std::span<const char> piece_text;
  std::span<const uint32_t> piece_ends;
  std::span<const float> piece_scores;
  std::span<const uint8_t> piece_types;  // PieceType values
  std::span<const uint8_t> precompiled_charsmap;
  std::string_view normalization_name;
  std::string_view unk_surface = " \xE2\x81\x87 ";
  bool add_dummy_prefix = true;
  bool remove_extra_whitespaces = true;
  bool escape_whitespaces = true;
  bool treat_whitespace_as_suffix = false;
  bool byte_fallback = false;
  uint32_t normalized_expansion = 0;
  bool language_codes = false;         // VocabularyData::language_codes
  std::span<const int32_t> model_ids;  // empty: ids are piece indices (VocabularyData::model_ids)
  // VocabularyData::unknown_ids as flat arrays: text i is
  // unknown_text[unknown_ends[i - 1] .. unknown_ends[i]).
  std::span<const char> unknown_text;
  std::span<const uint32_t> unknown_ends;
  std::span<const int32_t> unknown_model_ids;
  std::string_view unknown(size_t i) const {
    const uint32_t begin = i == 0 ? 0 : unknown_ends[i - 1];
    return {unknown_text.data() + begin, unknown_ends[i] - begin};
  }
  // The model id of an unknown run's text, or -1 (binary search, no allocation).
  int32_t unknown_model_id(std::string_view text) const;

  size_t size() const { return piece_ends.size(); }
  // Valid once validate() has passed.
  std::string_view piece(size_t id) const {
    const uint32_t begin = id == 0 ? 0 : piece_ends[id - 1];
    return {piece_text.data() + begin, piece_ends[id] - begin};
  }
  float score(size_t id) const { return piece_scores[id]; }
  PieceType piece_type(size_t id) const { return static_cast<PieceType>(piece_types[id]); }

  // What VocabularyData::validate checks, but that pieces are distinct: the
  // piece trie proves that (PieceTrie::build and PieceTrie::verify).
  Status validate() const;
  // An owning copy, for Model::vocabulary(). The piece arrays must have
  // passed validate().
  VocabularyData to_data() const;
  // The same without the pieces: the settings and strings alone, which need
  // no validation (a version 1 file keeps its pieces elsewhere).
  VocabularyData settings() const;
};

// The flat arrays of a VocabularyData, which view() points into.
class FlatVocabulary {
 public:
  explicit FlatVocabulary(VocabularyData data);
  FlatVocabulary(const FlatVocabulary&) = delete;
  FlatVocabulary& operator=(const FlatVocabulary&) = delete;
  const VocabularyView& view() const { return view_; }

 private:
  VocabularyData data_;  // the charsmap and strings
  std::string text_;
  std::vector<uint32_t> ends_;
  std::vector<float> scores_;
  std::vector<uint8_t> types_;
  std::string unknown_text_;
  std::vector<uint32_t> unknown_ends_;
  std::vector<int32_t> unknown_model_ids_;
  VocabularyView view_;
};

// The trie of every piece (or of the user-defined ones), value = id: an
// error names a piece defined twice. The view must have passed validate().
Expected<PieceTrie> piece_trie_of(const VocabularyView& v, bool user_defined_only);

// SentencePiece's byte piece spelling, <0xHH>: true and its value, or false.
bool is_byte_piece(std::string_view text, int* value);

}  // namespace mt::detail
