#include "search_bookkeeping.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mt::detail {

namespace {
constexpr float kNegInf = -std::numeric_limits<float>::infinity();
}  // namespace

float normalized_score(float log_prob, int length, float penalty) {
  return penalty == 0.0f ? log_prob : log_prob / std::pow(float(std::max(length, 1)), penalty);
}

SearchBookkeeping::SearchBookkeeping(const SearchBuffers& buffers, const SearchLimits& limits, int32_t bos_id,
                                     int32_t eos_id)
    : buffers_(buffers), limits_(limits), K_(limits.beam), bos_id_(bos_id), eos_id_(eos_id) {}

int32_t* SearchBookkeeping::history(int b, int k) const {
  return buffers_.history + (size_t(b) * K_ + k) * buffers_.T;
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
  if (!eos && t + 1 < buffers_.length_limits[b]) return false;
  const int length = eos ? t : t + 1;
  buffers_.finished[row] = {normalized_score(log_prob, t + 1, limits_.length_penalty), log_prob, length};
  buffers_.finished_counts[b] = 1;
  emit(b, 1);
  return true;
}

int SearchBookkeeping::start_beam(int B) {
  int alive = B;
  max_steps_ = 0;
  for (int b = 0; b < B; ++b) {
    buffers_.done[b] = 0;
    buffers_.finished_counts[b] = 0;
    max_steps_ = std::max(max_steps_, buffers_.length_limits[b]);
    for (int k = 0; k < K_; ++k) {
      buffers_.step_tokens[b * K_ + k] = bos_id_;
      buffers_.scores[b * K_ + k] = k == 0 ? 0.0f : kNegInf;  // all beams start equal: expand one
      buffers_.parents[b * K_ + k] = k;
    }
    if (buffers_.length_limits[b] == 0) {  // an empty source: one empty hypothesis
      finish(b, nullptr, 0, 0.0f, 0);
      emit(b, limits_.hypotheses);
      --alive;
    }
  }
  return alive;
}

bool SearchBookkeeping::advance_beam(int b, int count, int t) {
  float* scores = buffers_.scores + size_t(b) * K_;
  int32_t* parents = buffers_.parents + size_t(b) * K_;
  int32_t* scratch = buffers_.history_scratch;
  const int T = buffers_.T;
  Candidate* candidates = buffers_.candidates;
  // Of the candidates (up to 2K per beam), the best K that do not end in EOS
  // continue; at most K end in EOS among the 2K best, so K continue when the
  // row had 2K.
  insertion_sort(candidates, count, [](const Candidate& x, const Candidate& y) { return x.log_prob > y.log_prob; });
  int next = 0;
  for (int i = 0; i < count && next < K_; ++i) {
    const Candidate& c = candidates[i];
    const int32_t* prefix = history(b, c.parent);
    if (c.token == eos_id_) {
      finish(b, prefix, t, c.log_prob, t + 1);
      continue;
    }
    // New beam `next` continues beam c.parent: gather its history now.
    std::copy(prefix, prefix + t, scratch + size_t(next) * T);
    scratch[size_t(next) * T + t] = c.token;
    parents[next] = c.parent;
    scores[next] = c.log_prob;
    buffers_.step_tokens[b * K_ + next] = c.token;
    ++next;
  }
  if (next == 0 && buffers_.finished_counts[b] == 0) {
    // No token had a log-probability at all (NaN logits: a model with NaN
    // weights). The sentence still gets a result: its best prefix so far,
    // scored NaN. Scores are untouched yet, so the live beams are as they
    // were at step t.
    for (int k = 0; k < K_; ++k) {
      if (scores[k] == kNegInf) continue;
      finish(b, history(b, k), t, std::numeric_limits<float>::quiet_NaN(), t);
      break;
    }
  }
  for (int k = next; k < K_; ++k) scores[k] = kNegInf, parents[k] = k;
  for (int k = 0; k < next; ++k) std::copy(scratch + size_t(k) * T, scratch + size_t(k) * T + t + 1, history(b, k));
  const bool at_limit = t + 1 >= buffers_.length_limits[b];
  if (at_limit) {
    for (int k = 0; k < next; ++k) finish(b, history(b, k), t + 1, scores[k], t + 1);
  }
  if (buffers_.finished_counts[b] < K_ && !at_limit && next > 0) return false;
  emit(b, limits_.hypotheses);
  for (int k = 0; k < K_; ++k) parents[k] = k;
  return true;
}

void SearchBookkeeping::finish(int b, const int32_t* tokens, int length, float log_prob, int scored_length) {
  const float score = normalized_score(log_prob, scored_length, limits_.length_penalty);
  Finished* f = buffers_.finished + size_t(b) * buffers_.capacity;
  int& count = buffers_.finished_counts[b];
  int slot = count;
  if (slot == K_) {
    slot = int(std::min_element(f, f + K_, [](const Finished& x, const Finished& y) { return x.score < y.score; }) - f);
    if (!(score > f[slot].score)) return;
  } else {
    ++count;
  }
  f[slot] = {score, log_prob, length};
  std::copy(tokens, tokens + length, buffers_.finished_tokens + (size_t(b) * buffers_.capacity + slot) * buffers_.T);
}

void SearchBookkeeping::emit(int b, int num_hypotheses) {
  const int count = buffers_.finished_counts[b], T = buffers_.T;
  const Finished* fin = buffers_.finished + size_t(b) * buffers_.capacity;
  const int32_t* tokens = buffers_.finished_tokens + size_t(b) * buffers_.capacity * T;
  Hypothesis* out = buffers_.hypotheses + size_t(b) * buffers_.capacity;
  // Best first; equal scores keep the order they finished in.
  int order[256];  // count <= K <= 256 (SessionOptions::validate)
  for (int i = 0; i < count; ++i) order[i] = i;
  insertion_sort(order, count, [&](int x, int y) { return fin[x].score > fin[y].score; });
  const int n = std::min(count, num_hypotheses);
  for (int i = 0; i < n; ++i) {
    const Finished& f = fin[order[i]];
    out[i] = Hypothesis{{tokens + size_t(order[i]) * T, size_t(f.length)}, f.score, f.log_prob};
  }
  buffers_.finished_counts[b] = n;
  buffers_.done[b] = 1;
}

}  // namespace mt::detail
