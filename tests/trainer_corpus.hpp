// The trainer tests' corpus: tests/data/text/corpus.txt (English and German
// lines alternating) with a 200-piece vocabulary trained on it, read as
// training pairs. Built once per test program (each MPI rank its own).
#pragma once

#include <fstream>
#include <string>
#include <vector>

#include "data/parallel_corpus.hpp"
#include "test_util.hpp"
#include "vocab/vocab_train.hpp"

namespace mt::test {

struct TrainerCorpus {
  VocabularyData vocab;
  std::vector<train::SentencePair> pairs;
};

inline const TrainerCorpus& trainer_corpus() {
  static const TrainerCorpus d = [] {
    TrainerCorpus out;
    vocab::TrainOptions o;
    o.inputs = {std::string(MT_TEXT_DATA_DIR) + "/corpus.txt"};
    o.vocab_size = 200;
    o.soft_limit = true;
    out.vocab = vocab::train(o).value();
    std::ifstream in(std::string(MT_TEXT_DATA_DIR) + "/corpus.txt");
    std::ofstream en(scratch_path("t.en")), de(scratch_path("t.de"));
    std::string a, b;
    while (std::getline(in, a) && std::getline(in, b)) en << a << "\n", de << b << "\n";
    en.close();
    de.close();
    out.pairs = train::read_parallel_corpus(scratch_path("t.en"), scratch_path("t.de"), out.vocab, {}, nullptr).value();
    return out;
  }();
  return d;
}

}  // namespace mt::test
