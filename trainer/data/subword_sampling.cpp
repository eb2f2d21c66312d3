#include "data/subword_sampling.hpp"

#include <cmath>

#include "cli_files.hpp"
#include "support/splitmix64.hpp"
#include "tokenizer/tokenizer.hpp"
#include "tokenizer/unigram.hpp"

namespace mt::train {

namespace {

// One draw's seed from the run's, the epoch, the line and the side.
uint64_t draw_seed(uint64_t seed, int epoch, uint32_t line, int side) {
  using detail::splitmix64;
  return splitmix64(splitmix64(splitmix64(seed) ^ uint64_t(uint32_t(epoch))) ^ (uint64_t(line) << 1 | uint64_t(side)));
}

}  // namespace

SegmentationSampler::~SegmentationSampler() = default;

Expected<std::unique_ptr<SegmentationSampler>> SegmentationSampler::create(const std::string& source_path,
                                                                           const std::string& target_path,
                                                                           const VocabularyData& vocabulary,
                                                                           double alpha, int max_tokens) {
  if (!(alpha > 0.0 && alpha <= detail::UnigramEncoder::kMaxSamplingAlpha))
    return Status::error(Errc::invalid_argument, "subword sampling: alpha must be in (0, %g], got %g",
                         detail::UnigramEncoder::kMaxSamplingAlpha, alpha);
  if (max_tokens < 1)
    return Status::error(Errc::invalid_argument, "subword sampling: max_tokens must be >= 1, got %d", max_tokens);
  auto tokenizer = detail::Tokenizer::create(vocabulary);
  if (!tokenizer) return tokenizer.status();
  if (!(*tokenizer)->can_sample())
    return Status::error(Errc::invalid_argument, "subword sampling needs a unigram vocabulary; this one is BPE");
  auto sources = cli::read_lines(source_path);
  if (!sources) return sources.status();
  auto targets = cli::read_lines(target_path);
  if (!targets) return targets.status();
  if (sources->size() != targets->size())
    return Status::error(Errc::invalid_argument, "'%s' has %zu lines but '%s' has %zu: the files must be aligned",
                         source_path.c_str(), sources->size(), target_path.c_str(), targets->size());
  std::unique_ptr<SegmentationSampler> s(new SegmentationSampler());
  s->tokenizer_ = std::move(tokenizer.value());
  s->sources_ = std::move(sources.value());
  s->targets_ = std::move(targets.value());
  s->alpha_ = alpha;
  s->max_tokens_ = max_tokens;
  return s;
}

Status SegmentationSampler::encode(const std::string& text, const double* alpha, uint64_t seed,
                                   std::vector<int32_t>* ids) {
  const size_t workspace = tokenizer_->encode_workspace_bytes(text.size());
  if (workspace > workspace_.size()) workspace_.resize(workspace);
  const size_t most = tokenizer_->max_encoded_ids(text.size());
  if (most > ids_.size()) ids_.resize(most);
  size_t n = 0;
  MT_RETURN_IF_ERROR(alpha != nullptr ? tokenizer_->encode_sampled(text, *alpha, seed, workspace_, ids_, &n)
                                      : tokenizer_->encode(text, workspace_, ids_, &n));
  ids->assign(ids_.begin(), ids_.begin() + long(n));
  return {};
}

Expected<size_t> SegmentationSampler::resegment(uint64_t seed, int epoch, std::vector<SentencePair>* pairs) {
  size_t kept_best = 0;
  for (SentencePair& p : *pairs) {
    if (p.line == 0 || p.line > sources_.size())
      return Status::error(Errc::invalid_argument, "subword sampling: pair of line %u is not in the files", p.line);
    for (int side = 0; side < 2; ++side) {
      const std::string& text = (side == 0 ? sources_ : targets_)[p.line - 1];
      std::vector<int32_t>& ids = side == 0 ? p.source : p.target;
      MT_RETURN_IF_ERROR(encode(text, &alpha_, draw_seed(seed, epoch, p.line, side), &ids));
      if (int(ids.size()) > max_tokens_) {
        MT_RETURN_IF_ERROR(encode(text, nullptr, 0, &ids));
        ++kept_best;
      }
    }
  }
  return kept_best;
}

}  // namespace mt::train
