// The host side of greedy and beam search, shared by the CPU search
// (search.cpp) and the GPU one (cuda/cuda_search.cpp): which hypotheses
// finish, which beams continue from which, and the results. The two
// searches differ only in where a step's picks come from, so their
// translations can only differ where those picks do.
//
// Both score a hypothesis as log P(y | x) / |y|^length_penalty, |y|
// counting EOS when it was generated.
#pragma once

#include <cstdint>

#include "mt/session.hpp"  // Hypothesis

namespace mt::detail {

// A hypothesis of the beam: where it came from and its running log-probability.
struct Candidate {
  float log_prob;
  int32_t token;
  int32_t parent;  // beam index within the sentence
};

// A finished hypothesis of one sentence, tokens in finished_tokens.
struct Finished {
  float score;  // length-normalised
  float log_prob;
  int32_t length;  // tokens without EOS
};

struct SearchLimits {
  int beam = 1;
  int hypotheses = 1;
  int min_length = 0;
  float length_penalty = 1.0f;
};

// log_prob / max(length, 1)^penalty.
float normalized_score(float log_prob, int length, float penalty);

// Stable sort, best first, of a few elements in place: std::stable_sort
// may allocate a temporary buffer, and n is at most 2 * beam^2.
template <class T, class Better>
void insertion_sort(T* items, int n, Better better) {
  for (int i = 1; i < n; ++i) {
    const T item = items[i];
    int j = i;
    for (; j > 0 && better(item, items[j - 1]); --j) items[j] = items[j - 1];
    items[j] = item;
  }
}

// The search's host buffers (a session's SessionPlan, or a test's arrays).
// Beam b*K+k is beam k of sentence b; `capacity` is the session's largest
// beam, which spaces the finished hypotheses of consecutive sentences.
struct SearchBuffers {
  int capacity = 0;                     // max beam
  int T = 0;                            // target positions per row
  const int* length_limits = nullptr;   // [B]: 0 for an empty source
  int* done = nullptr;                  // [B]
  float* scores = nullptr;              // [B * K]: running log-probability
  int32_t* step_tokens = nullptr;       // [B * K]: each beam's next input
  int32_t* parents = nullptr;           // [B * K]: the beam each continues, within its sentence
  int32_t* history = nullptr;           // [B * K, T]: each beam's tokens
  int32_t* history_scratch = nullptr;   // [K, T]
  Candidate* candidates = nullptr;      // [2 * K * K]: one sentence's
  Finished* finished = nullptr;         // [B * capacity]
  int32_t* finished_tokens = nullptr;   // [B * capacity, T]
  int* finished_counts = nullptr;       // [B]: also the results' counts
  Hypothesis* hypotheses = nullptr;     // [B * capacity]: the results
};

class SearchBookkeeping {
 public:
  SearchBookkeeping(const SearchBuffers& buffers, const SearchLimits& limits, int32_t bos_id, int32_t eos_id);

  // Readies sentences [0, B). An empty source finishes at once with one
  // empty hypothesis. Returns the sentences left to search.
  int start_greedy(int B);
  int start_beam(int B);
  // The longest length limit of the started sentences: the steps to run at most.
  int max_steps() const { return max_steps_; }
  bool done(int b) const { return buffers_.done[b] != 0; }

  // Greedy: sentence b picked `token` with log-probability `token_log_prob`
  // at step t. Returns true when that finished it (results written).
  bool advance_greedy(int b, int t, int32_t token, float token_log_prob);

  // Beam: `count` candidates of sentence b at step t are in candidates()
  // (any order, log_prob including the parent's). Chooses the K beams of
  // step t + 1 (their parents, scores, step tokens and histories) and
  // finishes hypotheses ending in EOS or at the length limit. Returns true
  // when the sentence finished (results written). A finished sentence's
  // parents are each beam itself, so a cache reorder leaves it alone.
  bool advance_beam(int b, int count, int t);
  Candidate* candidates() const { return buffers_.candidates; }

 private:
  // Adds a finished hypothesis to sentence b's best K (replacing the worst when full).
  void finish(int b, const int32_t* tokens, int length, float log_prob, int scored_length);
  // Writes the best finished hypotheses of sentence b into the results and marks it done.
  void emit(int b, int num_hypotheses);
  int32_t* history(int b, int k) const;

  SearchBuffers buffers_;
  SearchLimits limits_;
  int K_ = 1;
  int32_t bos_id_, eos_id_;
  int max_steps_ = 0;
};

}  // namespace mt::detail
