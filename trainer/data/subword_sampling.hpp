// Subword regularization for training (Kudo 2018): every epoch sees the
// training text in segmentations drawn anew, P(x)^alpha over all unigram
// segmentations of each side (detail::Tokenizer::encode_sampled), instead of
// always the best one; the model meets each word split several ways, which
// regularizes small corpora. Which pairs train is decided once, on the best
// segmentations (read_parallel_corpus's filter); a drawn side longer than
// that filter allows keeps its best segmentation.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/parallel_corpus.hpp"

namespace mt::detail {
class Tokenizer;
}

namespace mt::train {

class SegmentationSampler {
 public:
  // Reads the two files the pairs came from (a pair names its line).
  // Errors: a BPE vocabulary, alpha outside (0, 1000], max_tokens < 1,
  // unreadable or misaligned files.
  static Expected<std::unique_ptr<SegmentationSampler>> create(const std::string& source_path,
                                                               const std::string& target_path,
                                                               const VocabularyData& vocabulary, double alpha,
                                                               int max_tokens);
  ~SegmentationSampler();

  // Both sides of every pair segmented for `epoch` of a run seeded `seed`:
  // a function of (seed, epoch, line) alone, so a resumed run, and every
  // rank, draws the same. Returns the sides drawn too long, which kept their
  // best segmentation.
  Expected<size_t> resegment(uint64_t seed, int epoch, std::vector<SentencePair>* pairs);

 private:
  SegmentationSampler() = default;
  Status encode(const std::string& text, const double* alpha, uint64_t seed, std::vector<int32_t>* ids);

  std::unique_ptr<const detail::Tokenizer> tokenizer_;
  std::vector<std::string> sources_, targets_;
  double alpha_ = 0.0;
  int max_tokens_ = 0;
  std::vector<std::byte> workspace_;
  std::vector<int32_t> ids_;
};

}  // namespace mt::train
