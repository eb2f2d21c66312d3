// One sentence's step of beam search: from the candidates of its beams'
// rows to the beams of the next step and the hypotheses that finish. Plain
// loops over plain pointers, so that the same code runs on the host (the
// CPU search and the GPU search's host bookkeeping, search_bookkeeping.cpp)
// and, compiled by nvcc, on the device (cuda/device_search.cu).
//
// Scores: log P(y | x) / (|y| + length_offset)^length_penalty, |y| counting
// EOS when it was generated.
#pragma once

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define MT_HOST_DEVICE __host__ __device__
#else
#define MT_HOST_DEVICE
#endif

namespace mt::detail {

// A hypothesis of the beam: where it came from and its running log-probability.
struct Candidate {
  float log_prob;
  int32_t token;
  int32_t parent;              // beam index within the sentence
  float token_log_prob = 0.0f;  // log P(token | the parent's tokens), as the row gave it
};

// A finished hypothesis of one sentence, tokens in finished_tokens.
struct Finished {
  float score;  // length-normalised
  float log_prob;
  int32_t length;   // tokens without EOS
  int32_t eos = 0;  // 1: it ended with EOS (whose log-probability follows its tokens')
};

// max(length, 1)^penalty: what a score of that length is divided by.
MT_HOST_DEVICE inline float length_scale(int length, float penalty) {
  return powf(float(length > 1 ? length : 1), penalty);
}

// log_prob / max(length, 1)^penalty.
MT_HOST_DEVICE inline float normalized_score(float log_prob, int length, float penalty) {
  return penalty == 0.0f ? log_prob : log_prob / length_scale(length, penalty);
}

// Stable sort, best first, of a few elements in place: std::stable_sort
// may allocate a temporary buffer (and is not device code), and n is at
// most 2 * beam^2.
template <class T, class Better>
MT_HOST_DEVICE inline void insertion_sort(T* items, int n, Better better) {
  for (int i = 1; i < n; ++i) {
    const T item = items[i];
    int j = i;
    for (; j > 0 && better(item, items[j - 1]); --j) items[j] = items[j - 1];
    items[j] = item;
  }
}

struct BetterCandidate {
  MT_HOST_DEVICE bool operator()(const Candidate& x, const Candidate& y) const { return x.log_prob > y.log_prob; }
};

// The search state of one sentence of K beams and up to T tokens each.
struct SentenceBeams {
  int K = 1, T = 0;
  float* scores = nullptr;             // [K]: running log-probability; -inf: no beam
  int32_t* parents = nullptr;          // [K]: the beam each continues
  int32_t* step_tokens = nullptr;      // [K]: each beam's next input
  int32_t* history = nullptr;          // [K, T]: each beam's tokens
  int32_t* scratch = nullptr;          // [K, T]
  Candidate* candidates = nullptr;     // [2 * K * K]
  Finished* finished = nullptr;        // [K]
  int32_t* finished_tokens = nullptr;  // [K, T]
  int* finished_count = nullptr;
  // [T + 1]: length_scale(L, penalty) for each L, computed on the host. The
  // device's powf may round differently from the host's, and a score one ulp
  // off can keep another hypothesis; with the host's table both divide by the
  // same. Null: computed here.
  const float* length_scales = nullptr;
  // Added to each scored length (without a table): see SearchLimits.
  int length_offset = 0;
  // Optional (null: not kept): each token's log-probability, alongside
  // history, scratch and finished_tokens (there, EOS's after the tokens).
  float* history_log_probs = nullptr;   // [K, T]
  float* scratch_log_probs = nullptr;   // [K, T]
  float* finished_log_probs = nullptr;  // [K, T]
  // Optional (null: not kept): word alignments, S floats a token, alongside
  // the tokens; step_alignments: each beam's row of this step.
  int S = 0;
  float* history_alignments = nullptr;   // [K, T, S]
  float* scratch_alignments = nullptr;   // [K, T, S]
  float* finished_alignments = nullptr;  // [K, T, S]
  const float* step_alignments = nullptr;  // [K, S]
};

template <class T>
MT_HOST_DEVICE inline void copy_tokens(const T* from, int n, T* to) {
  for (int i = 0; i < n; ++i) to[i] = from[i];
}

// Adds a finished hypothesis to the sentence's best K (replacing the worst,
// the first of equals, when full and this one is better). It ended with EOS
// when its scored length counts one more token than it has: then
// `eos_log_prob` is EOS's log-probability.
// Alignments (when kept): `alignments` holds its tokens' rows, `eos_alignment` EOS's.
MT_HOST_DEVICE inline void finish_hypothesis(const SentenceBeams& s, const int32_t* tokens, int length, float log_prob,
                                             int scored_length, float length_penalty,
                                             const float* log_probs = nullptr, float eos_log_prob = 0.0f,
                                             const float* alignments = nullptr,
                                             const float* eos_alignment = nullptr) {
  const float score = length_penalty == 0.0f ? log_prob
                      : s.length_scales      ? log_prob / s.length_scales[scored_length]
                                        : normalized_score(log_prob, scored_length + s.length_offset, length_penalty);
  int slot = *s.finished_count;
  if (slot == s.K) {
    slot = 0;
    for (int i = 1; i < s.K; ++i) {
      if (s.finished[i].score < s.finished[slot].score) slot = i;
    }
    if (!(score > s.finished[slot].score)) return;
  } else {
    ++*s.finished_count;
  }
  const bool eos = scored_length > length;
  s.finished[slot] = {score, log_prob, length, eos ? 1 : 0};
  copy_tokens(tokens, length, s.finished_tokens + slot * s.T);
  if (s.finished_log_probs != nullptr && log_probs != nullptr) {
    copy_tokens(log_probs, length, s.finished_log_probs + slot * s.T);
    if (eos) s.finished_log_probs[slot * s.T + length] = eos_log_prob;  // length < T: EOS took a step
  }
  if (s.finished_alignments != nullptr && alignments != nullptr) {
    float* to = s.finished_alignments + size_t(slot) * s.T * s.S;
    copy_tokens(alignments, length * s.S, to);
    if (eos && eos_alignment != nullptr) copy_tokens(eos_alignment, s.S, to + size_t(length) * s.S);
  }
}

// Beam k's alignment rows, and its row of this step (null when not kept).
MT_HOST_DEVICE inline const float* beam_alignments(const SentenceBeams& s, int k) {
  return s.history_alignments != nullptr ? s.history_alignments + size_t(k) * s.T * s.S : nullptr;
}
MT_HOST_DEVICE inline const float* step_alignment(const SentenceBeams& s, int k) {
  return s.step_alignments != nullptr ? s.step_alignments + size_t(k) * s.S : nullptr;
}

// Beams at the start: all at BOS, only beam 0 alive (all beams start equal:
// expand one).
MT_HOST_DEVICE inline void start_sentence(const SentenceBeams& s, int32_t bos_id) {
  *s.finished_count = 0;
  for (int k = 0; k < s.K; ++k) {
    s.step_tokens[k] = bos_id;
    s.scores[k] = k == 0 ? 0.0f : -INFINITY;
    s.parents[k] = k;
  }
}

// Step t: `count` candidates (any order; log_prob including the parent's)
// are in s.candidates. Chooses the K beams of step t + 1 (parents, scores,
// step tokens, histories) and finishes the hypotheses ending in EOS or at
// the length limit. Returns true when the sentence is finished: K finished
// hypotheses, the limit, or no beam left. A finished sentence's parents are
// each beam itself, so a cache reorder leaves its rows alone.
MT_HOST_DEVICE inline bool advance_sentence(const SentenceBeams& s, int count, int t, int length_limit, int32_t eos_id,
                                            float length_penalty) {
  const int K = s.K, T = s.T;
  // Of the candidates (up to 2K per beam), the best K that do not end in
  // EOS continue; at most K of the 2K best end in EOS, so K continue when
  // the rows had 2K each. A hypothesis ends in EOS only from the K best
  // candidates, as in fairseq and Hugging Face's beam search: an EOS ranked
  // lower would fill the finished list with hypotheses no beam would have
  // kept, and end the search early.
  insertion_sort(s.candidates, count, BetterCandidate{});
  int next = 0;
  for (int i = 0; i < count && next < K; ++i) {
    const Candidate c = s.candidates[i];
    const int32_t* prefix = s.history + c.parent * T;
    const float* prefix_log_probs = s.history_log_probs != nullptr ? s.history_log_probs + c.parent * T : nullptr;
    if (c.token == eos_id) {
      if (i < K) {
        finish_hypothesis(s, prefix, t, c.log_prob, t + 1, length_penalty, prefix_log_probs, c.token_log_prob,
                          beam_alignments(s, c.parent), step_alignment(s, c.parent));
      }
      continue;
    }
    // New beam `next` continues beam c.parent: gather its history now.
    copy_tokens(prefix, t, s.scratch + next * T);
    s.scratch[next * T + t] = c.token;
    if (prefix_log_probs != nullptr) {
      copy_tokens(prefix_log_probs, t, s.scratch_log_probs + next * T);
      s.scratch_log_probs[next * T + t] = c.token_log_prob;
    }
    if (s.history_alignments != nullptr) {
      float* to = s.scratch_alignments + size_t(next) * T * s.S;
      copy_tokens(beam_alignments(s, c.parent), t * s.S, to);
      copy_tokens(step_alignment(s, c.parent), s.S, to + size_t(t) * s.S);
    }
    s.parents[next] = c.parent;
    s.scores[next] = c.log_prob;
    s.step_tokens[next] = c.token;
    ++next;
  }
  if (next == 0 && *s.finished_count == 0) {
    // No token had a log-probability at all (NaN logits: a model with NaN
    // weights). The sentence still gets a result: its best prefix so far,
    // scored NaN. Scores are untouched yet, so the live beams are as they
    // were at step t.
    for (int k = 0; k < K; ++k) {
      if (s.scores[k] == -INFINITY) continue;
      finish_hypothesis(s, s.history + k * T, t, NAN, t, length_penalty,
                        s.history_log_probs != nullptr ? s.history_log_probs + k * T : nullptr, 0.0f,
                        beam_alignments(s, k));
      break;
    }
  }
  for (int k = next; k < K; ++k) s.scores[k] = -INFINITY, s.parents[k] = k;
  for (int k = 0; k < next; ++k) copy_tokens(s.scratch + k * T, t + 1, s.history + k * T);
  if (s.history_log_probs != nullptr) {
    for (int k = 0; k < next; ++k) copy_tokens(s.scratch_log_probs + k * T, t + 1, s.history_log_probs + k * T);
  }
  if (s.history_alignments != nullptr) {
    for (int k = 0; k < next; ++k) {
      copy_tokens(s.scratch_alignments + size_t(k) * T * s.S, (t + 1) * s.S,
                  s.history_alignments + size_t(k) * T * s.S);
    }
  }
  const bool at_limit = t + 1 >= length_limit;
  if (at_limit) {
    for (int k = 0; k < next; ++k) {
      finish_hypothesis(s, s.history + k * T, t + 1, s.scores[k], t + 1, length_penalty,
                        s.history_log_probs != nullptr ? s.history_log_probs + k * T : nullptr, 0.0f,
                        beam_alignments(s, k));
    }
  }
  if (*s.finished_count < K && !at_limit && next > 0) return false;
  for (int k = 0; k < K; ++k) s.parents[k] = k;
  return true;
}

}  // namespace mt::detail
