#include "search/search_bookkeeping.hpp"

#include <algorithm>

namespace mt::detail {

SearchBookkeeping::SearchBookkeeping(const SearchBuffers& buffers, const SearchLimits& limits, int32_t bos_id,
                                     int32_t eos_id)
    : buffers_(buffers), limits_(limits), K_(limits.beam), bos_id_(bos_id), eos_id_(eos_id) {}

SentenceBeams SearchBookkeeping::sentence(int b) const {
  const SearchBuffers& f = buffers_;
  const size_t beams = size_t(b) * K_, finished = size_t(b) * f.capacity;
  SentenceBeams s;
  s.K = K_;
  s.T = f.T;
  s.scores = f.scores + beams;
  s.parents = f.parents + beams;
  s.step_tokens = f.step_tokens + beams;
  s.history = f.history + beams * f.T;
  s.scratch = f.history_scratch;
  s.candidates = f.candidates;
  s.length_offset = limits_.length_offset;
  s.finished = f.finished + finished;
  s.finished_tokens = f.finished_tokens + finished * f.T;
  s.finished_count = f.finished_counts + b;
  if (f.history_log_probs != nullptr) {
    s.history_log_probs = f.history_log_probs + beams * f.T;
    s.scratch_log_probs = f.history_log_probs_scratch;
    s.finished_log_probs = f.finished_log_probs + finished * f.T;
  }
  if (f.history_alignments != nullptr) {
    s.S = f.S;
    s.history_alignments = f.history_alignments + beams * f.T * size_t(f.S);
    s.scratch_alignments = f.alignment_scratch;
    s.finished_alignments = f.finished_alignments + finished * f.T * size_t(f.S);
    s.step_alignments = f.step_alignments + beams * size_t(f.S);
  }
  return s;
}

int SearchBookkeeping::start_greedy(int B) {
  int alive = B;
  max_steps_ = 0;
  for (int b = 0; b < B; ++b) {
    buffers_.done[b] = 0;
    buffers_.scores[b] = 0.0f;
    max_steps_ = std::max(max_steps_, buffers_.length_limits[b]);
    if (buffers_.length_limits[b] == 0) {  // an empty source
      buffers_.finished[size_t(b) * buffers_.capacity] = {0.0f, 0.0f, 0};
      buffers_.finished_counts[b] = 1;
      emit(b, 1);
      --alive;
    }
  }
  return alive;
}

bool SearchBookkeeping::advance_greedy(int b, int t, int32_t token, float token_log_prob) {
  float& log_prob = buffers_.scores[b];
  log_prob += token_log_prob;
  const bool eos = token == eos_id_;
  const size_t row = size_t(b) * buffers_.capacity;
  if (!eos) buffers_.finished_tokens[row * buffers_.T + t] = token;
  if (buffers_.finished_log_probs != nullptr) buffers_.finished_log_probs[row * buffers_.T + t] = token_log_prob;
  if (!eos && t + 1 < buffers_.length_limits[b]) return false;
  const int length = eos ? t : t + 1;
  buffers_.finished[row] = {normalized_score(log_prob, t + 1 + limits_.length_offset, limits_.length_penalty), log_prob,
                            length, eos ? 1 : 0};
  buffers_.finished_counts[b] = 1;
  emit(b, 1);
  return true;
}

int SearchBookkeeping::start_beam(int B) {
  int alive = B;
  max_steps_ = 0;
  for (int b = 0; b < B; ++b) {
    buffers_.done[b] = 0;
    max_steps_ = std::max(max_steps_, buffers_.length_limits[b]);
    const SentenceBeams s = sentence(b);
    start_sentence(s, bos_id_);
    if (buffers_.length_limits[b] == 0) {  // an empty source: one empty hypothesis
      finish_hypothesis(s, nullptr, 0, 0.0f, 0, limits_.length_penalty);
      emit(b, limits_.hypotheses);
      --alive;
    }
  }
  return alive;
}

bool SearchBookkeeping::advance_beam(int b, int count, int t) {
  if (!advance_sentence(sentence(b), count, t, buffers_.length_limits[b], eos_id_, limits_.length_penalty)) {
    return false;
  }
  emit(b, limits_.hypotheses);
  return true;
}

void SearchBookkeeping::emit(int b, int num_hypotheses) {
  const int count = buffers_.finished_counts[b], T = buffers_.T;
  const Finished* fin = buffers_.finished + size_t(b) * buffers_.capacity;
  const int32_t* tokens = buffers_.finished_tokens + size_t(b) * buffers_.capacity * T;
  const float* log_probs =
      buffers_.finished_log_probs != nullptr ? buffers_.finished_log_probs + size_t(b) * buffers_.capacity * T : nullptr;
  Hypothesis* out = buffers_.hypotheses + size_t(b) * buffers_.capacity;
  // Best first; equal scores keep the order they finished in.
  int order[256];  // count <= K <= 256 (SessionOptions::validate)
  for (int i = 0; i < count; ++i) order[i] = i;
  insertion_sort(order, count, [&](int x, int y) { return fin[x].score > fin[y].score; });
  const int n = std::min(count, num_hypotheses);
  for (int i = 0; i < n; ++i) {
    const Finished& f = fin[order[i]];
    out[i] = Hypothesis{};
    out[i].tokens = {tokens + size_t(order[i]) * T, size_t(f.length)};
    out[i].score = f.score;
    out[i].log_prob = f.log_prob;
    if (log_probs != nullptr) out[i].token_log_probs = {log_probs + size_t(order[i]) * T, size_t(f.length + f.eos)};
    if (buffers_.finished_alignments != nullptr) {
      const size_t S = size_t(buffers_.S);
      out[i].alignment = {buffers_.finished_alignments + (size_t(b) * buffers_.capacity + size_t(order[i])) * T * S,
                          size_t(f.length + f.eos),
                          size_t(buffers_.source_offsets[b + 1] - buffers_.source_offsets[b]), S};
    }
  }
  buffers_.finished_counts[b] = n;
  buffers_.done[b] = 1;
}

void SearchBookkeeping::stop(int b, const int32_t* tokens, const float* log_probs, int length,
                             const float* alignments) {
  const size_t row = size_t(b) * buffers_.capacity;
  int32_t* to = buffers_.finished_tokens + row * buffers_.T;
  if (tokens != to) copy_tokens(tokens, length, to);
  if (alignments != nullptr && buffers_.finished_alignments != nullptr) {
    float* al_to = buffers_.finished_alignments + row * buffers_.T * size_t(buffers_.S);
    if (alignments != al_to) copy_tokens(alignments, length * buffers_.S, al_to);
  }
  float log_prob = buffers_.scores[size_t(b) * K_];  // greedy: the running sum (beam: replaced below)
  if (log_probs != nullptr && buffers_.finished_log_probs != nullptr) {
    float* lp_to = buffers_.finished_log_probs + row * buffers_.T;
    if (log_probs != lp_to) copy_tokens(log_probs, length, lp_to);
    log_prob = 0.0f;  // summed in order, as the search summed them
    for (int i = 0; i < length; ++i) log_prob += lp_to[i];
  }
  buffers_.finished[row] = {normalized_score(log_prob, length + limits_.length_offset, limits_.length_penalty),
                            log_prob, length, 0};
  buffers_.finished_counts[b] = 1;
  emit(b, 1);
}

void SearchBookkeeping::stop_greedy(int b, int t) {
  const size_t row = size_t(b) * buffers_.capacity;
  stop(b, buffers_.finished_tokens + row * buffers_.T,
       buffers_.finished_log_probs != nullptr ? buffers_.finished_log_probs + row * buffers_.T : nullptr, t);
}

void SearchBookkeeping::stop_beam(int b, int t) {
  const SentenceBeams s = sentence(b);
  for (int k = 0; k < K_; ++k) {
    if (s.scores[k] == -INFINITY) continue;
    finish_hypothesis(s, s.history + size_t(k) * s.T, t, s.scores[k], t, limits_.length_penalty,
                      s.history_log_probs != nullptr ? s.history_log_probs + size_t(k) * s.T : nullptr, 0.0f,
                      beam_alignments(s, k));
  }
  emit(b, limits_.hypotheses);
}

SettledPrefix SearchBookkeeping::settled_prefix(int b, int t, int from) const {
  const SentenceBeams s = sentence(b);
  SettledPrefix p;
  for (int k = 0; k < K_ && p.tokens == nullptr; ++k) {
    if (s.scores[k] == -INFINITY) continue;
    p.tokens = s.history + size_t(k) * s.T;
    p.log_probs = s.history_log_probs + size_t(k) * s.T;
    p.alignments = beam_alignments(s, k);
  }
  p.length = from;
  for (; p.length <= t; ++p.length) {
    const int32_t token = p.tokens[p.length];
    bool shared = true;
    for (int k = 0; k < K_ && shared; ++k) {
      shared = s.scores[k] == -INFINITY || s.history[size_t(k) * s.T + size_t(p.length)] == token;
    }
    for (int f = 0; f < *s.finished_count && shared; ++f) {
      shared = s.finished[f].length > p.length && s.finished_tokens[size_t(f) * s.T + size_t(p.length)] == token;
    }
    if (!shared) break;
  }
  return p;
}

}  // namespace mt::detail
