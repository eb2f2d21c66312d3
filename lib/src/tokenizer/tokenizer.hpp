// libmt's own SentencePiece-compatible tokenizer: normalization (precompiled
// charsmap + whitespace rules), unigram Viterbi and BPE encoding, decoding.
// Built once per model; encode/decode work in caller memory and never allocate.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "mt/status.hpp"
#include "mt/vocabulary.hpp"
#include "tokenizer/piece_trie.hpp"
#include "tokenizer/vocabulary_view.hpp"

namespace mt::detail {

class Tokenizer {
 public:
  // Builds the lookup structures (piece trie, normalizer). Allocates; called at model load.
  // Takes the vocabulary by value: callers that are done with theirs move it in.
  static Expected<std::unique_ptr<const Tokenizer>> create(VocabularyData vocabulary);
  // Over arrays that outlive the tokenizer (a mapped model file): no piece
  // is copied, and the piece trie, when stored with them, is checked
  // instead of built.
  static Expected<std::unique_ptr<const Tokenizer>> create(const VocabularyView& vocabulary,
                                                           const PieceTrie::Stored* trie);
  ~Tokenizer();

  const VocabularyView& vocabulary() const;
  int size() const;  // number of pieces

  // Scratch bytes encode() needs for an input of at most `max_input_bytes`
  // bytes, and the most ids it can produce for such an input.
  size_t encode_workspace_bytes(size_t max_input_bytes) const;
  size_t max_encoded_ids(size_t max_input_bytes) const;
  // The most bytes decode() writes for `ids` ids.
  size_t max_decoded_bytes(size_t ids) const;

  // UTF-8 text -> ids (no BOS/EOS), exactly as SentencePiece 0.1.97's Encode,
  // then mapped to model ids when the vocabulary has them.
  // Invalid UTF-8 bytes are treated as SentencePiece does (each becomes U+FFFD).
  // Errors: input longer than the workspace was sized for, ids capacity too small.
  Status encode(std::string_view text, std::span<std::byte> workspace, std::span<int32_t> ids, size_t* count) const;

  // Subword regularization, for training (Kudo 2018): encode() with the
  // unigram segmentation drawn at random, P(x)^alpha over every segmentation
  // (UnigramEncoder::sample; the same seed, the same ids), the rest
  // (normalization, language codes, unknown pieces) as encode(); the same
  // workspace. Errors: as encode(), a BPE vocabulary (can_sample() false),
  // alpha not finite and > 0.
  bool can_sample() const;
  Status encode_sampled(std::string_view text, double alpha, uint64_t seed, std::span<std::byte> workspace,
                        std::span<int32_t> ids, size_t* count) const;

  // ids (piece indices) -> UTF-8 text, exactly as SentencePiece's Decode (control ids decode
  // to nothing, unknown to unk_surface, byte pieces to bytes with invalid
  // sequences replaced by U+FFFD). Error if an id is out of range or `out` is too small.
  Status decode(std::span<const int32_t> ids, std::span<char> out, size_t* length) const;

 private:
  struct Impl;
  struct Sampling {
    double alpha;
    uint64_t seed;
  };
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  // encode() and encode_sampled(): the best segmentation when `sampling` is null.
  Status encode_with(std::string_view text, const Sampling* sampling, std::span<std::byte> workspace,
                     std::span<int32_t> ids, size_t* count) const;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mt::detail
