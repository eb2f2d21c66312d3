#include "tokenizer/unigram.hpp"

#include <algorithm>
#include <cfloat>

#include "tokenizer/utf8.hpp"

namespace mt::detail {
namespace {

constexpr float kUnknownPenalty = 10.0f;

// The best path ending at one byte position.
struct BestPath {
  int32_t id;
  float score;
  int32_t starts_at;  // -1: no path yet
};

}  // namespace

UnigramEncoder::UnigramEncoder(const VocabularyView& vocabulary, const PieceTrie& trie) : trie_(&trie) {
  // As SentencePiece: extremes over normal pieces only, from FLT_MAX/FLT_MIN.
  min_score_ = FLT_MAX;
  max_score_ = FLT_MIN;
  types_ = vocabulary.piece_types;
  scores_ = vocabulary.piece_scores;
  for (size_t id = 0; id < vocabulary.size(); ++id) {
    const PieceType type = vocabulary.piece_type(id);
    if (type == PieceType::normal) {
      min_score_ = std::min(min_score_, scores_[id]);
      max_score_ = std::max(max_score_, scores_[id]);
    }
    if (type == PieceType::unknown) unk_id_ = static_cast<int32_t>(id);
  }
}

size_t UnigramEncoder::workspace_bytes(size_t normalized_bytes) {
  return scratch_bytes<BestPath>(normalized_bytes + 1);
}

Status UnigramEncoder::encode(std::string_view normalized, Scratch& scratch, std::span<EncodedPiece> pieces,
                              size_t* count) const {
  const size_t size = normalized.size();
  BestPath* best = scratch.take<BestPath>(size + 1);
  if (best == nullptr || pieces.size() < size)
    return Status::error(Errc::capacity_exceeded, "unigram: workspace too small for %zu normalized bytes", size);
  std::fill(best, best + size + 1, BestPath{-1, 0.0f, -1});
  const float unk_score = min_score_ - kUnknownPenalty;

  size_t starts_at = 0;
  while (starts_at < size) {
    const float best_here = best[starts_at].score;
    const size_t char_length =
        std::min(utf8_char_length(static_cast<uint8_t>(normalized[starts_at])), size - starts_at);
    bool has_single_char = false;
    int32_t node = PieceTrie::root();
    for (size_t key_pos = starts_at; key_pos < size;) {
      node = trie_->next(node, static_cast<uint8_t>(normalized[key_pos]));
      if (node == PieceTrie::kNone) break;
      ++key_pos;
      const int32_t id = trie_->value(node);
      if (id == PieceTrie::kNone) continue;
      const auto type = static_cast<PieceType>(types_[id]);
      // SentencePiece's trie holds normal, user-defined and unused pieces; unused never match.
      if (type != PieceType::normal && type != PieceType::user_defined) continue;
      const size_t length = key_pos - starts_at;
      const double score = type == PieceType::user_defined ? static_cast<float>(length) * max_score_ - 0.1
                                                           : static_cast<double>(scores_[id]);
      const double candidate = score + best_here;
      BestPath& target = best[key_pos];
      if (target.starts_at == -1 || candidate > target.score) {
        target = {id, static_cast<float>(candidate), static_cast<int32_t>(starts_at)};
      }
      if (length == char_length) has_single_char = true;
    }
    if (!has_single_char) {
      const float candidate = unk_score + best_here;
      BestPath& target = best[starts_at + char_length];
      if (target.starts_at == -1 || candidate > target.score) {
        target = {unk_id_, candidate, static_cast<int32_t>(starts_at)};
      }
    }
    starts_at += char_length;
  }

  // Backtrack from the end, then put the pieces in text order.
  size_t n = 0;
  for (size_t ends_at = size; ends_at > 0;) {
    const BestPath& p = best[ends_at];
    if (p.starts_at < 0 || static_cast<size_t>(p.starts_at) >= ends_at)
      return Status::error(Errc::internal, "unigram: no path reaches byte %zu", ends_at);
    pieces[n++] = {static_cast<uint32_t>(p.starts_at), static_cast<uint32_t>(ends_at - p.starts_at), p.id};
    ends_at = static_cast<size_t>(p.starts_at);
  }
  std::reverse(pieces.begin(), pieces.begin() + n);
  *count = n;
  return {};
}

}  // namespace mt::detail
