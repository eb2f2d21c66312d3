// The vocabulary a model file carries: a SentencePiece model (unigram or BPE),
// whole, so no other file is needed at translation time. libmt tokenizes with
// its own implementation (lib/src/tokenizer/), identical to SentencePiece's.
#pragma once

#include "mt/export.h"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "mt/status.hpp"

namespace mt {

enum class VocabularyType : uint8_t { none = 0, unigram = 1, bpe = 2 };
enum class PieceType : uint8_t { normal = 0, unknown = 1, control = 2, user_defined = 3, byte = 4, unused = 5 };

struct VocabularyPiece {
  std::string text;  // UTF-8; U+2581 stands for a space
  float score = 0.0f;
  PieceType type = PieceType::normal;
};

struct MT_API VocabularyData {
  VocabularyType type = VocabularyType::none;
  std::vector<VocabularyPiece> pieces;  // index = token id
  // SentencePiece's compiled normalization rules (e.g. nmt_nfkc): a
  // double-array trie over UTF-8 plus the replacement strings. Empty: identity.
  std::vector<uint8_t> precompiled_charsmap;
  std::string normalization_name;
  bool add_dummy_prefix = true;
  bool remove_extra_whitespaces = true;
  bool escape_whitespaces = true;
  bool treat_whitespace_as_suffix = false;
  bool byte_fallback = false;
  std::string unk_surface = " \xE2\x81\x87 ";  // what an unknown piece decodes to
  // Most bytes one input byte can normalize to, for planning memory; 0: not
  // known, computed from the charsmap when the tokenizer is built (a walk of
  // the whole trie, ~10 ms for nmt_nfkc). ModelWriter fills it in so loading
  // skips that walk. A value too small makes encoding fail cleanly
  // (capacity_exceeded), never overflow: every access is bounds-checked.
  uint32_t normalized_expansion = 0;
  // The model id of each piece, for models whose ids are not the
  // SentencePiece model's (OPUS-MT's vocab.json, fairseq dictionaries):
  // encoding yields model_ids[piece]; a piece the model lacks maps to its
  // unk_id. Empty: the piece index is the model id. Such a vocabulary only
  // encodes: the model file then holds a target vocabulary for decoding.
  std::vector<int32_t> model_ids;
  // With model_ids: model ids of texts that encode as the unknown piece
  // (normalized text, U+2581 for spaces), sorted by text. An unknown run
  // whose text is here gets that id instead of unk, as OPUS-MT's tokenizers
  // do (they look every piece's text up in vocab.json).
  struct UnknownText {
    std::string text;
    int32_t model_id = 0;
  };
  std::vector<UnknownText> unknown_ids;
  // Marian language codes (">>fra<<"), read as transformers' MarianTokenizer
  // reads them: every span matching the regex >>.+<< (greedy, within a line)
  // is removed from the text, and one at its very start is a token of its
  // own, whose id is its entry in unknown_ids (else unk).
  bool language_codes = false;
  // More than this is refused (by validate() and by the charsmap check): no
  // real rule set comes near it, and session plans multiply by it.
  static constexpr uint32_t kMaxNormalizedExpansion = 1024;

  // Reads a SentencePiece model (the bytes of a .model file: a serialized
  // ModelProto). Errors name the field at fault.
  static Expected<VocabularyData> from_sentencepiece(std::span<const uint8_t> model_proto);

  // The SentencePiece model (a serialized ModelProto, what a .model file
  // holds) that from_sentencepiece reads back as this vocabulary, and that
  // SentencePiece itself tokenizes with as libmt does: pieces, model type,
  // normalization rules and the flags above. model_ids, unknown_ids and
  // language_codes are libmt's own and are not in it.
  std::vector<uint8_t> to_sentencepiece() const;

  // Structural checks: known type, pieces non-empty and unique, at most one
  // unknown piece, byte pieces present when byte_fallback is on...
  Status validate() const;
};

}  // namespace mt
