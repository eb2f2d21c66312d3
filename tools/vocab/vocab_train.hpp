// Vocabulary training with the real SentencePiece library: a joint source +
// target vocabulary whose special ids are libmt's (pad 0, bos 1, eos 2, unk 3).
// Used by mt_vocab and the trainer; libmt itself never links SentencePiece.
#pragma once

#include <string>
#include <vector>

#include "mt/status.hpp"
#include "mt/vocabulary.hpp"

namespace mt::vocab {

// What TrainOptions::normalization may name (mt_vocab's and mt_train's
// --normalization): SentencePiece's rules, and nmt_nfkc_cjk, nmt_nfkc
// keeping full-width punctuation (，？！) as written.
inline constexpr const char* kNormalizations[] = {"nmt_nfkc", "nfkc", "nmt_nfkc_cf", "nfkc_cf", "identity",
                                                  "nmt_nfkc_cjk"};

struct TrainOptions {
  std::vector<std::string> inputs;  // text files, one sentence per line (all languages together)
  int vocab_size = 8000;
  VocabularyType type = VocabularyType::unigram;
  bool byte_fallback = false;
  float character_coverage = 1.0f;  // SentencePiece suggests 0.9995 for CJK-rich text
  int max_sentences = 0;            // sample this many input sentences; 0: all
  std::string normalization = "nmt_nfkc";  // one of kNormalizations
  int threads = 2;
  unsigned seed = 1;
  // Train to at most vocab_size pieces when the corpus cannot fill it (small
  // corpora and large vocabularies) instead of failing.
  bool soft_limit = false;
};

// Trains and returns the vocabulary; the SentencePiece model's bytes (a
// .model file) in *model_proto when given.
Expected<VocabularyData> train(const TrainOptions& options, std::string* model_proto = nullptr);

}  // namespace mt::vocab
