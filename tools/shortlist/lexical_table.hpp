// What mt_shortlist build learns from a parallel corpus: IBM Model 1's
// lexical translation probabilities p(target id | source id) (Brown et al.
// 1993, section 4), over the ids of the model's own tokenizers, and the
// shortlist chosen from them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mt/model.hpp"

namespace mt::shortlist {

struct SentencePair {
  std::vector<int32_t> source, target;
};

// p(t | s) for every pair of ids that co-occur in a sentence pair: row s
// (source ids [0, source_vocab), then the empty word) holds its targets,
// ascending, and their probabilities.
struct LexicalTable {
  std::vector<uint32_t> row_ends;
  std::vector<int32_t> targets;
  std::vector<float> probabilities;
};

// `iterations` rounds of expectation-maximisation from uniform probabilities.
LexicalTable learn_ibm1(const std::vector<SentencePair>& corpus, int source_vocab, int iterations);

// Each source id's `k` most probable targets (ties: the lower id), plus
// with `copies` the source id itself (models whose source and target share
// one vocabulary: names and numbers are copied piece for piece), and the
// `frequent` target ids seen most often in the corpus.
ShortlistData choose_shortlist(const LexicalTable& table, const std::vector<SentencePair>& corpus, int source_vocab,
                               int target_vocab, int k, int frequent, bool copies);

// A shortlist of `k` seeded random targets per source id and `frequent`
// random frequent ids (benchmarks: the speed of a shortlist of that size).
ShortlistData random_shortlist(int source_vocab, int target_vocab, int k, int frequent, uint64_t seed);

}  // namespace mt::shortlist
