// A unigram vocabulary trained on tests/data/text/corpus.txt (MT_TEXT_DATA_DIR),
// for tests that need real pieces. Each caller keeps its own in a static:
// training takes a moment.
#pragma once

#include <string>

#include <catch2/catch.hpp>

#include "mt/vocabulary.hpp"
#include "vocab/vocab_train.hpp"

namespace mt::test {

inline VocabularyData train_corpus_vocabulary(int vocab_size, bool byte_fallback) {
  vocab::TrainOptions o;
  o.inputs = {std::string(MT_TEXT_DATA_DIR) + "/corpus.txt"};
  o.vocab_size = vocab_size;
  o.byte_fallback = byte_fallback;
  o.soft_limit = true;
  auto v = vocab::train(o);
  INFO(v.status().message());
  REQUIRE(v.ok());
  return v.value();
}

}  // namespace mt::test
