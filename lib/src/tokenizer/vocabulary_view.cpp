#include "tokenizer/vocabulary_view.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "tokenizer/normalizer.hpp"

namespace mt::detail {

bool is_byte_piece(std::string_view text, int* value) {
  // Exactly SentencePiece's ByteToPiece format: <0x%02X>.
  const auto hex = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1; };
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return false;
  const int hi = hex(text[3]), lo = hex(text[4]);
  if (hi < 0 || lo < 0) return false;
  *value = hi * 16 + lo;
  return true;
}

Status VocabularyView::validate() const {
  if (type != VocabularyType::unigram && type != VocabularyType::bpe)
    return Status::error(Errc::invalid_model, "vocabulary: unknown type %d", static_cast<int>(type));
  const size_t n = piece_ends.size();
  if (n == 0) return Status::error(Errc::invalid_model, "vocabulary: no pieces");
  if (n > 0x7FFFFFFF) return Status::error(Errc::invalid_model, "vocabulary: %zu pieces is too many", n);
  if (piece_scores.size() != n || piece_types.size() != n) {
    return Status::error(Errc::invalid_model, "vocabulary has %zu piece ends but %zu scores and %zu types", n,
                         piece_scores.size(), piece_types.size());
  }
  if (!model_ids.empty() && model_ids.size() != n)
    return Status::error(Errc::invalid_model, "vocabulary has %zu pieces but %zu model ids", n, model_ids.size());
  for (size_t id = 0; id < model_ids.size(); ++id) {
    if (model_ids[id] < 0)
      return Status::error(Errc::invalid_model, "vocabulary piece %zu has model id %d", id, model_ids[id]);
  }
  if (unknown_ends.size() != unknown_model_ids.size())
    return Status::error(Errc::invalid_model, "vocabulary has %zu unknown texts but %zu of their ids",
                         unknown_ends.size(), unknown_model_ids.size());
  if (language_codes && model_ids.empty())
    return Status::error(Errc::invalid_model, "vocabulary reads language codes but has no model ids");
  if (!unknown_ends.empty() && model_ids.empty())
    return Status::error(Errc::invalid_model, "vocabulary has ids of unknown texts but no model ids");
  for (size_t i = 0; i < unknown_ends.size(); ++i) {
    const uint32_t begin = i == 0 ? 0 : unknown_ends[i - 1];
    if (unknown_ends[i] < begin || unknown_ends[i] > unknown_text.size())
      return Status::error(Errc::invalid_model, "vocabulary unknown text %zu ends at byte %u, outside [%u, %zu]", i,
                           unknown_ends[i], begin, unknown_text.size());
    if (unknown_model_ids[i] < 0)
      return Status::error(Errc::invalid_model, "vocabulary unknown text %zu has model id %d", i, unknown_model_ids[i]);
    if (i > 0 && !(unknown(i - 1) < unknown(i)))
      return Status::error(Errc::invalid_model, "vocabulary unknown text %zu is duplicated or out of order", i);
  }
  if (normalized_expansion > VocabularyData::kMaxNormalizedExpansion)
    return Status::error(Errc::invalid_model,
                         "vocabulary: normalized_expansion %u is implausible (at most %u bytes per byte)",
                         normalized_expansion, VocabularyData::kMaxNormalizedExpansion);

  bool bytes_found[256] = {};
  size_t unknown = 0, matchable = 0;
  uint32_t begin = 0;
  for (size_t id = 0; id < n; ++id) {
    const uint32_t end = piece_ends[id];
    if (end < begin || end > piece_text.size()) {
      return Status::error(Errc::invalid_model, "vocabulary piece %zu ends at byte %u, outside [%u, %zu]", id, end,
                           begin, piece_text.size());
    }
    const std::string_view text(piece_text.data() + begin, end - begin);
    begin = end;
    if (text.empty()) return Status::error(Errc::invalid_model, "vocabulary: piece %zu is empty", id);
    // Segmentation sums and compares scores: a NaN or infinity makes every
    // comparison with it false and the chosen pieces arbitrary.
    if (!std::isfinite(piece_scores[id])) {
      return Status::error(Errc::invalid_model, "vocabulary: piece %zu (\"%.40s\") has score %g; scores must be finite",
                           id, std::string(text).c_str(), double(piece_scores[id]));
    }
    switch (piece_type(id)) {
      case PieceType::unknown:
        ++unknown;
        break;
      case PieceType::normal:
      case PieceType::user_defined:
      case PieceType::unused:
        ++matchable;
        break;
      case PieceType::byte: {
        int value = 0;
        if (!byte_fallback)
          return Status::error(Errc::invalid_model, "vocabulary: byte piece %zu although byte_fallback is off", id);
        if (!is_byte_piece(text, &value))
          return Status::error(Errc::invalid_model, "vocabulary: byte piece %zu (\"%.40s\") is not <0xHH>", id,
                               std::string(text).c_str());
        bytes_found[value] = true;
        break;
      }
      case PieceType::control:
        break;
      default:
        return Status::error(Errc::invalid_model, "vocabulary: piece %zu has unknown type %d", id,
                             int(piece_types[id]));
    }
  }
  // One search over all the pieces' bytes: a NUL would never match in the tries.
  if (const void* nul = std::memchr(piece_text.data(), 0, begin)) {
    const size_t at = size_t(static_cast<const char*>(nul) - piece_text.data());
    const size_t id = size_t(std::upper_bound(piece_ends.begin(), piece_ends.end(), uint32_t(at)) - piece_ends.begin());
    return Status::error(Errc::invalid_model, "vocabulary: piece %zu contains a NUL byte", id);
  }
  if (unknown != 1)
    return Status::error(Errc::invalid_model, "vocabulary: %zu unknown pieces, expected exactly 1", unknown);
  if (type == VocabularyType::unigram && matchable == 0)
    return Status::error(Errc::invalid_model, "vocabulary: a unigram model needs normal or user-defined pieces");
  if (byte_fallback) {
    for (int b = 0; b < 256; ++b) {
      if (!bytes_found[b])
        return Status::error(Errc::invalid_model, "vocabulary: byte_fallback is on but piece <0x%02X> is missing", b);
    }
  }
  // The charsmap's trie is walked once, by the writer or when the tokenizer
  // is built without a known expansion; here only its layout is checked.
  if (!precompiled_charsmap.empty()) MT_RETURN_IF_ERROR(check_charsmap_layout(precompiled_charsmap));
  return {};
}

Expected<PieceTrie> piece_trie_of(const VocabularyView& v, bool user_defined_only) {
  std::vector<PieceTrie::Key> keys;
  keys.reserve(user_defined_only ? 0 : v.size());
  for (size_t id = 0; id < v.size(); ++id) {
    if (!user_defined_only || v.piece_type(id) == PieceType::user_defined) keys.push_back({v.piece(id), int32_t(id)});
  }
  auto trie = PieceTrie::build(keys);
  if (!trie) return Status::error(trie.status().code(), "vocabulary: %s", trie.status().message());
  return trie;
}

VocabularyData VocabularyView::to_data() const {
  VocabularyData v = settings();
  v.pieces.reserve(size());
  for (size_t id = 0; id < size(); ++id) v.pieces.push_back({std::string(piece(id)), score(id), piece_type(id)});
  return v;
}

VocabularyData VocabularyView::settings() const {
  VocabularyData v;
  v.type = type;
  v.precompiled_charsmap.assign(precompiled_charsmap.begin(), precompiled_charsmap.end());
  v.normalization_name = normalization_name;
  v.add_dummy_prefix = add_dummy_prefix;
  v.remove_extra_whitespaces = remove_extra_whitespaces;
  v.escape_whitespaces = escape_whitespaces;
  v.treat_whitespace_as_suffix = treat_whitespace_as_suffix;
  v.byte_fallback = byte_fallback;
  v.language_codes = language_codes;
  v.unk_surface = unk_surface;
  v.normalized_expansion = normalized_expansion;
  v.model_ids.assign(model_ids.begin(), model_ids.end());
  for (size_t i = 0; i < unknown_ends.size(); ++i)
    v.unknown_ids.push_back({std::string(unknown(i)), unknown_model_ids[i]});
  return v;
}

FlatVocabulary::FlatVocabulary(VocabularyData data) : data_(std::move(data)) {
  ends_.reserve(data_.pieces.size());
  scores_.reserve(data_.pieces.size());
  types_.reserve(data_.pieces.size());
  for (const VocabularyPiece& p : data_.pieces) {
    text_ += p.text;
    ends_.push_back(static_cast<uint32_t>(text_.size()));
    scores_.push_back(p.score);
    types_.push_back(static_cast<uint8_t>(p.type));
  }
  view_.type = data_.type;
  view_.piece_text = text_;
  view_.piece_ends = ends_;
  view_.piece_scores = scores_;
  view_.piece_types = types_;
  view_.precompiled_charsmap = data_.precompiled_charsmap;
  view_.normalization_name = data_.normalization_name;
  view_.unk_surface = data_.unk_surface;
  view_.add_dummy_prefix = data_.add_dummy_prefix;
  view_.remove_extra_whitespaces = data_.remove_extra_whitespaces;
  view_.escape_whitespaces = data_.escape_whitespaces;
  view_.treat_whitespace_as_suffix = data_.treat_whitespace_as_suffix;
  view_.byte_fallback = data_.byte_fallback;
  view_.language_codes = data_.language_codes;
  view_.normalized_expansion = data_.normalized_expansion;
  view_.model_ids = data_.model_ids;
  for (const VocabularyData::UnknownText& u : data_.unknown_ids) {
    unknown_text_ += u.text;
    unknown_ends_.push_back(static_cast<uint32_t>(unknown_text_.size()));
    unknown_model_ids_.push_back(u.model_id);
  }
  view_.unknown_text = unknown_text_;
  view_.unknown_ends = unknown_ends_;
  view_.unknown_model_ids = unknown_model_ids_;
}

int32_t VocabularyView::unknown_model_id(std::string_view text) const {
  size_t low = 0, high = unknown_ends.size();
  while (low < high) {
    const size_t mid = low + (high - low) / 2;
    const int order = unknown(mid).compare(text);
    if (order == 0) return unknown_model_ids[mid];
    if (order < 0)
      low = mid + 1;
    else
      high = mid;
  }
  return -1;
}

}  // namespace mt::detail
