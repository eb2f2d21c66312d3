// BPE encoding as SentencePiece 0.1.97 (bpe_model.cc, Model::SampleEncode
// without dropout): split the normalized text into characters (user-defined
// symbols stay whole and never merge), then repeatedly merge the adjacent
// pair whose concatenation is the highest-scoring piece, leftmost first on
// ties. A merge into an unused piece is undone at the end by re-splitting it
// the way its most recently proposed pair was formed (SentencePiece's
// rev_merge table). Symbols that are no piece become <unk>.
#pragma once

#include <cstddef>
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

class BpeEncoder {
 public:
  // `trie` holds every piece (value = id), `user_symbols` the user-defined
  // ones; both must outlive the encoder.
  BpeEncoder(const VocabularyView& vocabulary, const PieceTrie& trie, const PieceTrie& user_symbols);

  // Scratch bytes encode() takes for `normalized_bytes` of normalized text.
  static size_t workspace_bytes(size_t normalized_bytes);

  // Splits `normalized` (non-empty) into pieces; `pieces` holds at least
  // normalized.size() entries.
  Status encode(std::string_view normalized, Scratch& scratch, std::span<EncodedPiece> pieces, size_t* count) const;

 private:
  // Id of `text` as SentencePiece's PieceToId: any piece, else <unk>.
  int32_t piece_id(std::string_view text) const;

  const PieceTrie* trie_;
  const PieceTrie* user_symbols_;
  std::span<const uint8_t> types_;  // the vocabulary's, PieceType values
  std::span<const float> scores_;
  int32_t unk_id_ = 0;
};

}  // namespace mt::detail
