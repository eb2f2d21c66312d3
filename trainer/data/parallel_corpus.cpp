#include "data/parallel_corpus.hpp"

#include <algorithm>
#include <fstream>
#include <functional>
#include <numeric>
#include <random>

#include "cli_files.hpp"
#include "tokenizer/tokenizer.hpp"

namespace mt::train {

namespace {

// Tokenizes with scratch sized for the longest line seen so far.
class Encoder {
 public:
  explicit Encoder(const detail::Tokenizer& t) : tokenizer_(t) {}
  Status encode(const std::string& text, std::vector<int32_t>* ids) {
    if (text.size() > capacity_) {
      capacity_ = std::max(text.size(), 2 * capacity_);
      workspace_.resize(tokenizer_.encode_workspace_bytes(capacity_));
      ids_.resize(tokenizer_.max_encoded_ids(capacity_));
    }
    size_t n = 0;
    MT_RETURN_IF_ERROR(tokenizer_.encode(text, workspace_, ids_, &n));
    ids->assign(ids_.begin(), ids_.begin() + long(n));
    return {};
  }

 private:
  const detail::Tokenizer& tokenizer_;
  size_t capacity_ = 0;
  std::vector<std::byte> workspace_;
  std::vector<int32_t> ids_;
};

}  // namespace

namespace {

using TextEncoder = std::function<Status(const std::string&, std::vector<int32_t>*)>;

Expected<std::vector<SentencePair>> read_pairs(const std::string& source_path, const std::string& target_path,
                                               const TextEncoder& encode_source, const TextEncoder& encode_target,
                                               const CorpusFilter& filter, CorpusStats* stats) {
  auto sources = cli::read_lines(source_path);
  if (!sources) return sources.status();
  auto targets = cli::read_lines(target_path);
  if (!targets) return targets.status();
  if (sources->size() != targets->size()) {
    return Status::error(Errc::invalid_argument, "'%s' has %zu lines but '%s' has %zu: the files must be aligned",
                         source_path.c_str(), sources->size(), target_path.c_str(), targets->size());
  }
  CorpusStats s;
  s.lines = sources->size();
  std::vector<SentencePair> pairs;
  pairs.reserve(sources->size());
  for (size_t i = 0; i < sources->size(); ++i) {
    SentencePair p;
    p.line = uint32_t(i + 1);
    MT_RETURN_IF_ERROR(encode_source((*sources)[i], &p.source));
    MT_RETURN_IF_ERROR(encode_target((*targets)[i], &p.target));
    const size_t ls = p.source.size(), lt = p.target.size();
    if (filter.drop_empty && (ls == 0 || lt == 0)) {
      ++s.dropped_empty;
      continue;
    }
    if (int(ls) > filter.max_tokens || int(lt) > filter.max_tokens) {
      ++s.dropped_long;
      continue;
    }
    if (filter.max_ratio > 0.0f && ls > 0 && lt > 0 &&
        (float(ls) > filter.max_ratio * float(lt) || float(lt) > filter.max_ratio * float(ls))) {
      ++s.dropped_ratio;
      continue;
    }
    s.source_tokens += ls;
    s.target_tokens += lt;
    pairs.push_back(std::move(p));
  }
  s.kept = pairs.size();
  if (stats != nullptr) *stats = s;
  return pairs;
}

}  // namespace

Expected<std::vector<SentencePair>> read_parallel_corpus(const std::string& source_path, const std::string& target_path,
                                                         const VocabularyData& vocabulary, const CorpusFilter& filter,
                                                         CorpusStats* stats) {
  auto tokenizer = detail::Tokenizer::create(vocabulary);
  if (!tokenizer) return tokenizer.status();
  Encoder encoder(**tokenizer);
  const TextEncoder encode = [&](const std::string& text, std::vector<int32_t>* ids) {
    return encoder.encode(text, ids);
  };
  return read_pairs(source_path, target_path, encode, encode, filter, stats);
}

Expected<std::vector<SentencePair>> read_parallel_corpus(const std::string& source_path, const std::string& target_path,
                                                         const Model& model, std::span<const int32_t> source_prefix,
                                                         std::span<const int32_t> target_prefix,
                                                         const CorpusFilter& filter, CorpusStats* stats) {
  // A side's prefix (its tokens counted by the filter), then the text's ids;
  // an empty text stays empty (the filter drops it).
  const auto prefixed = [](std::span<const int32_t> prefix, std::vector<int32_t>* ids, std::vector<int32_t>* text_ids) {
    ids->clear();
    if (text_ids->empty()) return;
    ids->assign(prefix.begin(), prefix.end());
    ids->insert(ids->end(), text_ids->begin(), text_ids->end());
  };
  std::vector<int32_t> text_ids;
  const TextEncoder encode_source = [&](const std::string& text, std::vector<int32_t>* ids) {
    MT_RETURN_IF_ERROR(model.encode(text, &text_ids));
    prefixed(source_prefix, ids, &text_ids);
    return Status();
  };
  const TextEncoder encode_target = [&](const std::string& text, std::vector<int32_t>* ids) {
    MT_RETURN_IF_ERROR(model.encode_target(text, &text_ids));
    prefixed(target_prefix, ids, &text_ids);
    return Status();
  };
  return read_pairs(source_path, target_path, encode_source, encode_target, filter, stats);
}

std::vector<std::vector<uint32_t>> make_batches(const std::vector<SentencePair>& corpus, const BatchingOptions& options,
                                                uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint32_t> order(corpus.size());
  std::iota(order.begin(), order.end(), 0u);
  std::shuffle(order.begin(), order.end(), rng);  // random ties in the stable sort below
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const auto& x = corpus[a];
    const auto& y = corpus[b];
    return x.target.size() != y.target.size() ? x.target.size() < y.target.size() : x.source.size() < y.source.size();
  });
  std::vector<std::vector<uint32_t>> batches;
  std::vector<uint32_t> current;
  size_t longest = 0;
  for (uint32_t i : order) {
    // Padded positions: EOS (or BOS) adds one to each side.
    const size_t len = std::max(corpus[i].source.size(), corpus[i].target.size()) + 1;
    const size_t grown = std::max(longest, len) * (current.size() + 1);
    const bool full = !current.empty() && (grown > size_t(options.max_tokens) ||
                                           (options.max_sentences > 0 && int(current.size()) >= options.max_sentences));
    if (full) {
      batches.push_back(std::move(current));
      current.clear();
      longest = 0;
    }
    current.push_back(i);
    longest = std::max(longest, len);
  }
  if (!current.empty()) batches.push_back(std::move(current));
  std::shuffle(batches.begin(), batches.end(), rng);
  return batches;
}

Batch assemble_batch(const std::vector<SentencePair>& corpus, const std::vector<uint32_t>& pairs,
                     const SpecialIds& ids) {
  Batch b;
  b.B = int(pairs.size());
  b.pairs = pairs;
  // Without source EOS an empty source would attend over nothing: it keeps
  // one EOS (mt_train's filter drops empty pairs before they get here).
  const auto source_length = [&](const SentencePair& p) {
    return int(p.source.size()) + (ids.source_eos || p.source.empty() ? 1 : 0);
  };
  for (uint32_t i : pairs) {
    b.S = std::max(b.S, source_length(corpus[i]));
    b.T = std::max(b.T, int(corpus[i].target.size()) + 1);
  }
  b.source.assign(size_t(b.B) * b.S, ids.pad);
  b.target_input.assign(size_t(b.B) * b.T, ids.pad);
  b.target_output.assign(size_t(b.B) * b.T, ids.pad);
  for (int r = 0; r < b.B; ++r) {
    const SentencePair& p = corpus[pairs[size_t(r)]];
    int32_t* src = b.source.data() + size_t(r) * b.S;
    std::copy(p.source.begin(), p.source.end(), src);
    if (source_length(p) > int(p.source.size())) src[p.source.size()] = ids.eos;
    b.source_lengths.push_back(int32_t(source_length(p)));
    int32_t* in = b.target_input.data() + size_t(r) * b.T;
    int32_t* out = b.target_output.data() + size_t(r) * b.T;
    in[0] = ids.bos;
    std::copy(p.target.begin(), p.target.end(), in + 1);
    std::copy(p.target.begin(), p.target.end(), out);
    out[p.target.size()] = ids.eos;
    b.target_lengths.push_back(int32_t(p.target.size()) + 1);
    b.target_tokens += int(p.target.size()) + 1;
  }
  return b;
}

}  // namespace mt::train
