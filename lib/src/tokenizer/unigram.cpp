#include "tokenizer/unigram.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>

#include "tokenizer/utf8.hpp"
#include "support/splitmix64.hpp"

namespace mt::detail {
namespace {

constexpr float kUnknownPenalty = 10.0f;

// The best path ending at one byte position.
struct BestPath {
  int32_t id;
  float score;
  int32_t starts_at;  // -1: no path yet
};

// The sampler's uniforms: a counter-based stream of the seed.
double uniform(uint64_t seed, uint64_t draw) { return double(splitmix64(splitmix64(seed) + draw) >> 11) * 0x1.0p-53; }

// log(exp(a) + exp(b)), -inf meaning no path.
double log_add(double a, double b) {
  if (a == -HUGE_VAL) return b;
  if (b == -HUGE_VAL) return a;
  const double hi = std::max(a, b), lo = std::min(a, b);
  return hi + std::log1p(std::exp(lo - hi));
}

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

template <class Edge>
size_t UnigramEncoder::for_each_piece_at(std::string_view normalized, size_t starts_at, bool length_in_characters,
                                         Edge&& edge) const {
  const size_t size = normalized.size();
  const size_t char_length = std::min(utf8_char_length(static_cast<uint8_t>(normalized[starts_at])), size - starts_at);
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
    // SentencePiece's Viterbi counts a user-defined piece's length in bytes, its sampling lattice in characters.
    size_t units = length;
    if (type == PieceType::user_defined && length_in_characters) {
      units = 0;
      for (size_t i = starts_at; i < key_pos; i += utf8_char_length(static_cast<uint8_t>(normalized[i]))) ++units;
    }
    const double score = type == PieceType::user_defined ? static_cast<float>(units) * max_score_ - 0.1
                                                         : static_cast<double>(scores_[id]);
    edge(key_pos, id, score, /*unknown=*/false);
    if (length == char_length) has_single_char = true;
  }
  if (!has_single_char) edge(starts_at + char_length, unk_id_, double(min_score_ - kUnknownPenalty), /*unknown=*/true);
  return char_length;
}

Status UnigramEncoder::encode(std::string_view normalized, Scratch& scratch, std::span<EncodedPiece> pieces,
                              size_t* count) const {
  const size_t size = normalized.size();
  BestPath* best = scratch.take<BestPath>(size + 1);
  if (best == nullptr || pieces.size() < size)
    return Status::error(Errc::capacity_exceeded, "unigram: workspace too small for %zu normalized bytes", size);
  std::fill(best, best + size + 1, BestPath{-1, 0.0f, -1});

  for (size_t starts_at = 0; starts_at < size;) {
    const float best_here = best[starts_at].score;
    starts_at +=
        for_each_piece_at(normalized, starts_at, false, [&](size_t end, int32_t id, double score, bool unknown) {
          BestPath& target = best[end];
          // The unknown piece's sum is taken in float, the others' in double, as SentencePiece does.
          const double candidate = unknown ? double(float(score) + best_here) : score + best_here;
          if (target.starts_at == -1 || candidate > target.score) {
            target = {id, static_cast<float>(candidate), static_cast<int32_t>(starts_at)};
          }
        });
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

size_t UnigramEncoder::sample_workspace_bytes(size_t normalized_bytes) {
  return scratch_bytes<double>(normalized_bytes + 1) + scratch_bytes<uint8_t>(normalized_bytes + 1);
}

Status UnigramEncoder::sample(std::string_view normalized, double alpha, uint64_t seed, Scratch& scratch,
                              std::span<EncodedPiece> pieces, size_t* count) const {
  const size_t size = normalized.size();
  if (!(alpha > 0.0 && alpha <= kMaxSamplingAlpha))
    return Status::error(Errc::invalid_argument, "unigram: sampling needs an alpha in (0, %g], got %g",
                         kMaxSamplingAlpha, alpha);
  // rest[i]: log of the sum over the paths from byte i to the end of
  // exp(alpha score); -inf where no path starts (inside a character).
  double* rest = scratch.take<double>(size + 1);
  uint8_t* char_start = scratch.take<uint8_t>(size + 1);
  if (rest == nullptr || char_start == nullptr || pieces.size() < size)
    return Status::error(Errc::capacity_exceeded, "unigram: workspace too small for %zu normalized bytes", size);
  std::fill(char_start, char_start + size + 1, uint8_t(0));
  for (size_t i = 0; i < size;) {
    char_start[i] = 1;
    i += std::min(utf8_char_length(static_cast<uint8_t>(normalized[i])), size - i);
  }
  std::fill(rest, rest + size + 1, -HUGE_VAL);
  rest[size] = 0.0;
  for (size_t i = size; i-- > 0;) {
    if (!char_start[i]) continue;
    double sum = -HUGE_VAL;
    for_each_piece_at(normalized, i, true,
                      [&](size_t end, int32_t, double score, bool) { sum = log_add(sum, alpha * score + rest[end]); });
    rest[i] = sum;
  }
  if (rest[0] == -HUGE_VAL) return Status::error(Errc::internal, "unigram: no path covers the text");

  // Forward, each piece drawn with its share of the paths that go on from here.
  size_t n = 0;
  for (size_t at = 0; at < size;) {
    const double u = uniform(seed, n);
    double cumulative = 0.0;
    size_t chosen_end = 0;
    int32_t chosen_id = -1;
    for_each_piece_at(normalized, at, true, [&](size_t end, int32_t id, double score, bool) {
      if (chosen_id >= 0 && cumulative > u) return;
      const double share = std::exp(alpha * score + rest[end] - rest[at]);
      if (!(share > 0.0)) return;  // no path on from `end`, or a share too small to draw
      cumulative += share;
      chosen_end = end, chosen_id = id;  // the last piece with a share takes what rounding leaves
    });
    if (chosen_id < 0) return Status::error(Errc::internal, "unigram: no path goes on from byte %zu", at);
    pieces[n++] = {static_cast<uint32_t>(at), static_cast<uint32_t>(chosen_end - at), chosen_id};
    at = chosen_end;
  }
  *count = n;
  return {};
}

}  // namespace mt::detail
