// The host side of greedy and beam search, shared by the CPU search
// (search.cpp) and the GPU one (cuda/cuda_search.cpp): which hypotheses
// finish, which beams continue from which, and the results. The two
// searches differ only in where a step's picks come from, so their
// translations can only differ where those picks do.
//
// A beam step of one sentence is search_steps.hpp's, which the GPU can also
// run on the device (SessionOptions::cuda_device_search).
#pragma once

#include <atomic>
#include <cstdint>
#include <span>

#include "mt/session.hpp"  // Hypothesis
#include "search/search_steps.hpp"

namespace mt::detail {

struct SearchLimits {
  int beam = 1;
  int hypotheses = 1;
  int min_length = 0;
  float length_penalty = 1.0f;
  // Tokens the first steps take, whatever the model says (log-probability 0).
  std::span<const int32_t> forced_prefix = {};
  // TranslateOptions::prefixes of this search's sentences (empty: none),
  // taken after forced_prefix and scored.
  std::span<const std::span<const int32_t>> prefixes = {};
  int alternatives = 0;  // TranslateOptions::alternatives (beam = hypotheses = this)
  int no_repeat_ngram_size = 0;
  float repetition_penalty = 1.0f;
  // Added to |y| before the length penalty: the model's own convention
  // (OpenNMT-py counts its start token, 1; everyone else 0).
  int length_offset = 0;
  TokenCallback on_token;                    // TranslateOptions::on_token
  const std::atomic<int>* cancel = nullptr;  // TranslateOptions::cancel

  bool cancelled() const { return cancel != nullptr && cancel->load(std::memory_order_relaxed) != 0; }
  // The steps of sentence b whose tokens are given: forced, then its prefix.
  int given_steps(int b) const {
    return int(forced_prefix.size() + (size_t(b) < prefixes.size() ? prefixes[size_t(b)].size() : 0));
  }
  // The token given at step t < given_steps(b).
  int32_t given_token(int b, int t) const {
    return size_t(t) < forced_prefix.size() ? forced_prefix[size_t(t)]
                                            : prefixes[size_t(b)][size_t(t) - forced_prefix.size()];
  }
  bool guarded() const { return no_repeat_ngram_size > 0 || repetition_penalty != 1.0f; }
};

// What every search, CPU or GPU, takes from the caller's options; the rest
// (prefixes, guards, streaming) is each session's to add.
inline SearchLimits search_limits(const TranslateOptions& o, int length_offset) {
  SearchLimits s;
  s.beam = o.beam_size;
  s.hypotheses = o.num_hypotheses;
  s.min_length = o.min_decoding_length;
  s.length_penalty = o.length_penalty;
  s.forced_prefix = o.target_prefix;
  s.length_offset = length_offset;
  return s;
}

// The search's host buffers (a session's SessionPlan, or a test's arrays).
// Beam b*K+k is beam k of sentence b; `capacity` is the session's largest
// beam, which spaces the finished hypotheses of consecutive sentences.
struct SearchBuffers {
  int capacity = 0;                    // max beam
  int T = 0;                           // target positions per row
  const int* length_limits = nullptr;  // [B]: 0 for an empty source
  int* done = nullptr;                 // [B]
  float* scores = nullptr;             // [B * K]: running log-probability
  int32_t* step_tokens = nullptr;      // [B * K]: each beam's next input
  int32_t* parents = nullptr;          // [B * K]: the beam each continues, within its sentence
  int32_t* history = nullptr;          // [B * K, T]: each beam's tokens
  int32_t* history_scratch = nullptr;  // [K, T]
  Candidate* candidates = nullptr;     // [2 * K * K]: one sentence's
  Finished* finished = nullptr;        // [B * capacity]
  int32_t* finished_tokens = nullptr;  // [B * capacity, T]
  int* finished_counts = nullptr;      // [B]: also the results' counts
  Hypothesis* hypotheses = nullptr;    // [B * capacity]: the results
  // Optional (null: not kept): each token's log-probability, alongside
  // history, history_scratch and finished_tokens (greedy: finished row b),
  // where EOS's follows the tokens of a hypothesis that ended with it.
  float* history_log_probs = nullptr;
  float* history_log_probs_scratch = nullptr;
  float* finished_log_probs = nullptr;
  // Optional (null: not kept): word alignments, S floats a token, alongside
  // history, history_scratch and finished_tokens (greedy: written into the
  // finished rows by the decoder); step_alignments [B * K, S]: this step's
  // row of each beam. source_offsets: each sentence's columns.
  int S = 0;
  float* history_alignments = nullptr;
  float* alignment_scratch = nullptr;
  float* finished_alignments = nullptr;
  const float* step_alignments = nullptr;
  const int* source_offsets = nullptr;
};

// Beam search's settled tokens of a sentence (streaming): a live beam's
// tokens and their log-probabilities, of which the first `length` are
// shared by every live beam and every finished hypothesis.
struct SettledPrefix {
  const int32_t* tokens = nullptr;
  const float* log_probs = nullptr;
  const float* alignments = nullptr;  // null when not kept
  int length = 0;
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

  // Writes the best finished hypotheses of sentence b into the results and
  // marks it done (for a search whose steps ran elsewhere: its finished
  // hypotheses copied into the buffers).
  void emit(int b, int num_hypotheses);

  // Ends sentence b now with one hypothesis: `length` tokens at `tokens`
  // and their log-probabilities at `log_probs` (null when not kept; either
  // anywhere but sentence b's first finished slot's own overlap), a sentence
  // stopped by on_token.
  void stop(int b, const int32_t* tokens, const float* log_probs, int length, const float* alignments = nullptr);
  // Ends sentence b before beam step t with its best hypotheses so far: the
  // finished ones and the live beams as they stand (a cancelled search).
  void stop_beam(int b, int t);
  // Greedy: the same before step t, the sentence's tokens so far.
  void stop_greedy(int b, int t);

  // Beam, after step t of unfinished sentence b (log-probabilities kept): the tokens no hypothesis that can still win disagrees on, so
  // final; `from` of them are known to be settled already.
  SettledPrefix settled_prefix(int b, int t, int from) const;

 private:
  // Sentence b's part of the buffers.
  SentenceBeams sentence(int b) const;
  SearchBuffers buffers_;
  SearchLimits limits_;
  int K_ = 1;
  int32_t bos_id_, eos_id_;
  int max_steps_ = 0;
};

}  // namespace mt::detail
