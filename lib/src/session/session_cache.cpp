// TranslateOptions::cache in a session: keys, lookups before decoding (a
// sentence found is given an empty source, which costs no step), and
// insertions after.
#include <algorithm>
#include <cstring>

#include "cache/translation_cache_impl.hpp"
#include "access.hpp"
#include "session/session_impl.hpp"

namespace mt {

bool Session::Impl::cache_key(int b, std::span<const int32_t> source, const TranslateOptions& o) {
  // o passed validate (the prefixes fit the session); a sentence's own
  // prefix is checked only by load_sources, after this: one too long for
  // the session is not keyed (the key's slot is sized for one that fits),
  // and load_sources refuses it.
  const std::span<const int32_t> given =
      size_t(b) < o.prefixes.size() ? o.prefixes[size_t(b)] : std::span<const int32_t>();
  if (given.size() >= size_t(plan.T) - o.target_prefix.size()) return false;
  const size_t room = size_t(plan.S) - 1 - o.source_prefix.size();
  if (source.size() > room) {
    if (!o.truncate_long_sources) return false;
    source = source.first(room);
  }
  // The whole file's hash, once per model: two files that differ in any
  // byte (one weight retuned) never share entries.
  const uint64_t model_fingerprint = detail::Access::content_fingerprint(*model);
  std::byte* key = at<std::byte>(plan.cache_keys) + size_t(b) * plan.cache_key_stride;
  size_t n = 0;
  const auto put = [&](const void* data, size_t bytes) {
    if (bytes == 0) return;  // an empty span's data may be null
    std::memcpy(key + n, data, bytes);
    n += bytes;
  };
  const auto put_int = [&](int64_t v) { put(&v, sizeof(v)); };
  float penalty = o.length_penalty, ratio = o.max_length_ratio;
  put(&model_fingerprint, sizeof(model_fingerprint));
  // Everything that changes a translation: the session's lengths, the options, the source.
  put_int(plan.S), put_int(options.max_target_length), put_int(o.beam_size), put_int(o.num_hypotheses);
  put(&penalty, sizeof(penalty)), put(&ratio, sizeof(ratio));
  put_int(o.max_decoding_length), put_int(o.max_length_offset), put_int(o.min_decoding_length);
  put_int(length_offset), put_int(int64_t(o.source_prefix.size())), put_int(int64_t(o.target_prefix.size()));
  put(o.source_prefix.data(), o.source_prefix.size_bytes());
  put(o.target_prefix.data(), o.target_prefix.size_bytes());
  float repetition = o.repetition_penalty;
  put_int(o.alternatives), put_int(o.no_repeat_ngram_size), put(&repetition, sizeof(repetition));
  put_int(uses_shortlist() ? 1 : 0);
  put_int(int64_t(given.size())), put(given.data(), given.size_bytes());
  put(source.data(), source.size_bytes());
  at<size_t>(plan.cache_key_lengths)[b] = n;
  return true;
}

Status Session::Impl::translate_spans(std::span<const std::span<const int32_t>> sources,
                                      const TranslateOptions& options) {
  TranslationCache* cache = options.cache;
  const int B = int(sources.size());
  if (cache == nullptr || options.on_token || options.cancel != nullptr || B > plan.B) {
    MT_RETURN_IF_ERROR(load_sources(sources, options));
    return B == 0 ? Status{} : run(B, options);
  }
  MT_RETURN_IF_ERROR(options.validate(this->options));
  TranslationCache::Impl& store = *cache->impl();
  auto* masked = at<std::span<const int32_t>>(plan.source_spans);  // may be `sources` itself
  int* hits = at<int>(plan.cache_hits);
  Hypothesis* found = at<Hypothesis>(plan.cache_hypotheses);
  int* found_counts = at<int>(plan.cache_counts);
  int* truncated = at<int>(plan.truncated);
  int32_t* rows = at<int32_t>(plan.finished_tokens);
  float* log_prob_rows = at<float>(plan.finished_log_probs);
  const size_t* key_lengths = at<size_t>(plan.cache_key_lengths);
  int misses = 0;
  for (int b = 0; b < B; ++b) {
    const std::span<const int32_t> source = sources[size_t(b)];
    hits[b] = 0;
    if (cache_key(b, source, options)) {
      const std::span<const std::byte> key{at<std::byte>(plan.cache_keys) + size_t(b) * plan.cache_key_stride,
                                           key_lengths[b]};
      hits[b] = store.lookup(key, [&](const std::byte* value, int count) {
        found_counts[b] = std::min(count, plan.K);
        for (int k = 0; k < found_counts[b]; ++k) {
          TranslationCache::Impl::StoredHypothesis h;
          std::memcpy(&h, value, sizeof(h));
          value += sizeof(h);
          const size_t length = std::min<size_t>(h.length, size_t(plan.T));
          const size_t row = (size_t(b) * plan.K + size_t(k)) * size_t(plan.T);
          std::memcpy(rows + row, value, length * sizeof(int32_t));
          value += h.length * sizeof(int32_t);
          const size_t log_probs = std::min<size_t>(h.log_prob_count, size_t(plan.T));
          std::memcpy(log_prob_rows + row, value, log_probs * sizeof(float));
          value += h.log_prob_count * sizeof(float);
          Hypothesis& hit = found[size_t(b) * plan.K + size_t(k)];
          hit = Hypothesis{};
          hit.tokens = {rows + row, length};
          hit.score = h.score;
          hit.log_prob = h.log_prob;
          hit.token_log_probs = {log_prob_rows + row, log_probs};
        }
      });
    } else {
      at<size_t>(plan.cache_key_lengths)[b] = 0;  // not stored
    }
    // A hit reports this call's own cut, not the stored entry's: the key
    // holds the source as translated, which a longer text or id list cut to
    // the same tokens shares (a text's byte cut is marked already). Now,
    // while `source` is whole: masked may be `sources` itself.
    if (hits[b] && source.size() > size_t(plan.S) - 1 - options.source_prefix.size()) truncated[b] = 1;
    misses += hits[b] == 0;
    masked[b] = hits[b] ? std::span<const int32_t>() : source;  // found: nothing to decode
  }
  MT_RETURN_IF_ERROR(load_sources({masked, size_t(B)}, options));
  if (misses > 0) MT_RETURN_IF_ERROR(run(B, options));
  Hypothesis* hypotheses = at<Hypothesis>(plan.hypotheses);
  int* counts = at<int>(plan.hypothesis_counts);
  int* stopped = at<int>(plan.stopped);
  for (int b = 0; b < B; ++b) {
    const size_t first = size_t(b) * plan.K;
    if (hits[b]) {
      std::copy_n(found + first, found_counts[b], hypotheses + first);
      counts[b] = found_counts[b];
      stopped[b] = 0;
      continue;
    }
    if (key_lengths[b] == 0) continue;
    TranslationCache::Impl::StoredHypothesis stored[256];  // count <= K <= 256
    std::span<const int32_t> tokens[256];
    std::span<const float> log_probs[256];
    for (int k = 0; k < counts[b]; ++k) {
      const Hypothesis& h = hypotheses[first + size_t(k)];
      stored[k] = {h.score, h.log_prob, uint32_t(h.tokens.size()), uint32_t(h.token_log_probs.size())};
      tokens[k] = h.tokens;
      log_probs[k] = h.token_log_probs;
    }
    store.insert({at<std::byte>(plan.cache_keys) + size_t(b) * plan.cache_key_stride, key_lengths[b]}, stored, tokens,
                 log_probs, counts[b]);
  }
  return {};
}

}  // namespace mt

namespace mt::detail {
uint64_t decoder_steps(Session& s) { return Access::impl(s)->decoder_steps; }
}  // namespace mt::detail
