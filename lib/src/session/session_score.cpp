// Session::score and score_text: forced decoding. One teacher-forced pass of
// the decoder over given targets, each token's log-probability read from
// the same log-softmax the search reads, so that scoring a translation's
// tokens gives back its token_log_probs.
#include <algorithm>
#include <limits>

#include "search/search_steps.hpp"
#include "session/session_impl.hpp"

namespace mt {

namespace {

// The options score reads; the others (search, streaming, cache) left at
// their defaults, so that they are neither checked nor used.
TranslateOptions scoring_options(const TranslateOptions& o) {
  TranslateOptions s;
  s.source_prefix = o.source_prefix;
  s.target_prefix = o.target_prefix;
  s.min_decoding_length = o.min_decoding_length;
  s.length_penalty = o.length_penalty;
  s.truncate_long_sources = o.truncate_long_sources;
  return s;
}

}  // namespace

Status Session::Impl::check_targets(size_t sources, std::span<const std::span<const int32_t>> targets,
                                    const TranslateOptions& options) const {
  const ModelConfig& cfg = model->config();
  if (cuda != nullptr) return Status::error(Errc::unsupported, "score runs on CPU sessions only");
  if (targets.size() != sources) {
    return Status::error(Errc::invalid_argument, "score needs one target per source: %zu sources, %zu targets",
                         sources, targets.size());
  }
  const std::span<const int32_t> forced = options.target_prefix;
  for (size_t b = 0; b < targets.size(); ++b) {
    const std::span<const int32_t> target = targets[b];
    if (target.size() >= size_t(plan.T)) {  // room for EOS (not size + 1: the caller's size may be SIZE_MAX)
      return Status::error(Errc::capacity_exceeded,
                           "target %zu has %zu tokens; the session allows %d with EOS (max_target_length)", b,
                           target.size(), plan.T);
    }
    for (size_t i = 0; i < target.size(); ++i) {
      if (target[i] < 0 || target[i] >= cfg.target_vocab_size || target[i] == cfg.eos_id) {
        return Status::error(Errc::invalid_argument,
                             "target %zu token %zu has id %d: must be in [0, %d) and not eos_id %d (given without EOS)",
                             b, i, int(target[i]), cfg.target_vocab_size, cfg.eos_id);
      }
    }
    if (target.size() < forced.size() || !std::equal(forced.begin(), forced.end(), target.begin())) {
      return Status::error(Errc::invalid_argument, "target %zu does not start with the options' target_prefix", b);
    }
  }
  return {};
}

void Session::Impl::force_targets(int B, const TranslateOptions& options,
                                  std::span<const std::span<const int32_t>> targets) {
  const ModelConfig& cfg = model->config();
  const size_t V = size_t(cfg.target_vocab_size), T = size_t(plan.T), K = size_t(plan.K);
  const size_t forced = options.target_prefix.size();
  int* live = at<int>(plan.live_slots);
  int32_t* tokens = at<int32_t>(plan.live_tokens);
  float* logits = at<float>(plan.logits);
  int32_t* rows = at<int32_t>(plan.finished_tokens);      // the targets, copied: results own their tokens
  float* log_probs = at<float>(plan.finished_log_probs);  // sentence b's at row b * K
  detail::DecoderState state = decoder_state(1);
  state.row_slot = live;  // slot b and sentence b are both the sentence's index
  state.row_source = live;
  state.alignment_row = live;
  float* alignments = plan.finished_alignments != 0 ? at<float>(plan.finished_alignments) : nullptr;
  const size_t S = size_t(plan.S);
  const detail::DecoderBuffers buffers = decoder_buffers();
  size_t steps = 0;
  for (int b = 0; b < B; ++b) {
    steps = std::max(steps, targets[size_t(b)].size() + 1);
    std::copy(targets[size_t(b)].begin(), targets[size_t(b)].end(), rows + size_t(b) * K * T);
  }
  for (size_t t = 0; t < steps; ++t) {
    int n = 0;
    for (int b = 0; b < B; ++b) {
      const std::span<const int32_t> target = targets[size_t(b)];
      if (t > target.size()) continue;
      live[n] = b;
      tokens[n++] = t == 0 ? cfg.start_id() : target[t - 1];
    }
    ++decoder_steps;
    if (alignments != nullptr) {  // row t of each sentence's first finished slot
      state.alignment = alignments + t * S;
      state.alignment_stride = K * T * S;
    }
    transformer->decode_step(tokens, n, int(t), state, buffers, logits);
    pool->parallel_for(n, [&](int i, int) {
      const int b = live[i];
      const std::span<const int32_t> target = targets[size_t(b)];
      float* row = logits + size_t(i) * V;
      float& out = log_probs[size_t(b) * K * T + t];
      if (t < forced) {  // forced target_prefix tokens: 0, as translate gives them
        out = 0.0f;
        return;
      }
      if (int(t) < options.min_decoding_length) row[cfg.eos_id] = -std::numeric_limits<float>::infinity();
      kernels->log_softmax_f32(row, row, int(V));
      out = row[t < target.size() ? target[t] : cfg.eos_id];
    });
  }
  Hypothesis* hypotheses = at<Hypothesis>(plan.hypotheses);
  int* counts = at<int>(plan.hypothesis_counts);
  for (int b = 0; b < B; ++b) {
    const size_t length = targets[size_t(b)].size(), row = size_t(b) * K * T;
    float sum = 0.0f;  // in order, as the search sums
    for (size_t t = 0; t <= length; ++t) sum += log_probs[row + t];
    const float score =
        detail::normalized_score(sum, int(length) + 1 + length_offset, options.length_penalty);
    hypotheses[size_t(b) * K] = {{rows + row, length}, score, sum, {log_probs + row, length + 1}, {}};
    if (alignments != nullptr) {
      const int* offsets = at<int>(plan.source_offsets);
      hypotheses[size_t(b) * K].alignment = {alignments + row * S, length + 1, size_t(offsets[b + 1] - offsets[b]), S};
    }
    counts[b] = 1;
  }
}

Status Session::score(std::span<const std::span<const int32_t>> sources,
                      std::span<const std::span<const int32_t>> targets, const TranslateOptions& options,
                      Translations* results) {
  Impl& s = *impl_;
  if (results == nullptr) return Status::error(Errc::invalid_argument, "results must not be null");
  *results = Translations{};
  MT_RETURN_IF_ERROR(s.check_targets(sources.size(), targets, options));
  std::fill_n(s.at<int>(s.plan.truncated), s.plan.B, 0);
  const TranslateOptions scoring = scoring_options(options);
  MT_RETURN_IF_ERROR(s.load_sources(sources, scoring));
  const int B = int(sources.size());
  if (B == 0) return {};
  MT_RETURN_IF_ERROR(s.run(B, scoring, targets));
  s.id_results(B, results);
  return {};
}

Status Session::score_text(std::span<const std::string_view> sources, std::span<const std::string_view> targets,
                           const TranslateOptions& options, TextTranslations* results) {
  Impl& s = *impl_;
  if (results == nullptr) return Status::error(Errc::invalid_argument, "results must not be null");
  *results = TextTranslations{};
  if (targets.size() != sources.size()) {
    return Status::error(Errc::invalid_argument, "score needs one target per source: %zu sources, %zu targets",
                         sources.size(), targets.size());
  }
  const TranslateOptions scoring = scoring_options(options);
  MT_RETURN_IF_ERROR(s.encode_source_texts(sources, scoring));
  MT_RETURN_IF_ERROR(s.encode_target_texts(targets, "target"));
  const size_t B = sources.size();
  const std::span<const std::span<const int32_t>> ids{s.at<std::span<const int32_t>>(s.plan.target_id_spans), B};
  MT_RETURN_IF_ERROR(s.check_targets(B, ids, scoring));
  MT_RETURN_IF_ERROR(s.load_sources({s.at<std::span<const int32_t>>(s.plan.source_spans), B}, scoring));
  if (B == 0) return {};
  MT_RETURN_IF_ERROR(s.run(int(B), scoring, ids));
  return s.text_results(int(B), results, scoring.source_prefix.size());
}

}  // namespace mt
