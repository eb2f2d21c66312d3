// Unigram encoding as SentencePiece 0.1.97's default encoder
// (unigram_model.cc, Model::EncodeOptimized): a Viterbi pass over byte
// positions keeping the best path that ends at each one. Ties keep the path
// found first; user-defined pieces score length * max_score - 0.1 (in
// bytes); a character no piece starts with becomes <unk>, scored
// min_score - 10. The float/double mix of the original is kept on purpose:
// it decides near-ties. sample() draws a segmentation at random instead
// (subword regularization, for training).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "mt/status.hpp"
#include "mt/vocabulary.hpp"
#include "tokenizer/vocabulary_view.hpp"
#include "tokenizer/encoded_piece.hpp"
#include "tokenizer/piece_trie.hpp"
#include "tokenizer/scratch.hpp"

namespace mt::detail {

class UnigramEncoder {
 public:
  // `trie` holds every piece (value = id) and must outlive the encoder.
  UnigramEncoder(const VocabularyView& vocabulary, const PieceTrie& trie);

  // Scratch bytes encode() takes for `normalized_bytes` of normalized text.
  static size_t workspace_bytes(size_t normalized_bytes);

  // Splits `normalized` (non-empty) into pieces; `pieces` holds at least
  // normalized.size() entries.
  Status encode(std::string_view normalized, Scratch& scratch, std::span<EncodedPiece> pieces, size_t* count) const;

  // Subword regularization (Kudo 2018): one segmentation x of `normalized`
  // drawn with probability proportional to exp(alpha * score(x)), score(x)
  // the sum of its pieces' scores as encode() counts them (log P(x) for
  // normal pieces; a user-defined piece scored as SentencePiece's sampling
  // lattice scores it), over every segmentation: SentencePiece's
  // SampleEncode with nbest_size -1 samples from the same distribution. alpha > 0; the
  // larger, the closer to encode()'s best path. The draws are uniforms of
  // a counter-based stream of `seed`: the same seed, the same pieces.
  // Scratch: sample_workspace_bytes().
  static constexpr double kMaxSamplingAlpha = 1000.0;  // past it every draw is the best path anyway
  static size_t sample_workspace_bytes(size_t normalized_bytes);
  Status sample(std::string_view normalized, double alpha, uint64_t seed, Scratch& scratch,
                std::span<EncodedPiece> pieces, size_t* count) const;

 private:
  const PieceTrie* trie_;
  std::span<const uint8_t> types_;  // the vocabulary's, PieceType values
  std::span<const float> scores_;
  float min_score_;
  float max_score_;
  int32_t unk_id_ = 0;

  // Calls edge(end, id, score, unknown) for every piece the lattice has at
  // byte `starts_at` (the unknown piece when no piece is one character
  // long), scored as SentencePiece's Viterbi does (a user-defined piece by
  // its length in bytes) or, with length_in_characters, as its sampling
  // lattice does; returns the character's length in bytes.
  template <class Edge>
  size_t for_each_piece_at(std::string_view normalized, size_t starts_at, bool length_in_characters, Edge&& edge) const;
};

}  // namespace mt::detail
