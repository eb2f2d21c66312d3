// Greedy and beam search over the session's decoder. Both score a hypothesis
// as log P(y | x) / |y|^length_penalty, |y| counting EOS when it was generated.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "session_impl.hpp"
#include "stage_profile.hpp"

namespace mt {

using detail::Candidate;
using detail::Finished;
using detail::SearchLimits;

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

float normalized(float log_prob, int length, float penalty) {
  return penalty == 0.0f ? log_prob : log_prob / std::pow(float(std::max(length, 1)), penalty);
}

// Keeps the `capacity` best tokens of a row, best first, scored base + log
// prob; ties go to the lower token id, as argmax does, so beam 1 reproduces
// greedy search.
void row_top_k(const KernelTable& kernels, const float* log_probs, int V, int capacity, Candidate* top,
               int* count, float base, int32_t parent) {
  float values[kTopKMax];
  int32_t tokens[kTopKMax];
  kernels.top_k_f32(log_probs, V, capacity, values, tokens, count);
  for (int i = 0; i < *count; ++i) top[i] = {values[i] + base, tokens[i], parent};
}

// Stable sort, best first, of a few elements in place: std::stable_sort would
// allocate a temporary buffer, and n is at most 2 * beam^2.
template <class T, class Better>
void insertion_sort(T* items, int n, Better better) {
  for (int i = 1; i < n; ++i) {
    const T item = items[i];
    int j = i;
    for (; j > 0 && better(item, items[j - 1]); --j) items[j] = items[j - 1];
    items[j] = item;
  }
}

}  // namespace

void Session::Impl::emit_results(int b, int count, int num_hypotheses) {
  const int K = plan.K, T = plan.T;
  Finished* fin = at<Finished>(plan.finished) + size_t(b) * K;
  const int32_t* tokens = at<int32_t>(plan.finished_tokens) + size_t(b) * K * T;
  Hypothesis* out = at<Hypothesis>(plan.hypotheses) + size_t(b) * K;
  // Best first; equal scores keep the order they finished in.
  int order[256];
  for (int i = 0; i < count; ++i) order[i] = i;
  insertion_sort(order, count, [&](int x, int y) { return fin[x].score > fin[y].score; });
  const int n = std::min(count, num_hypotheses);
  for (int i = 0; i < n; ++i) {
    const Finished& f = fin[order[i]];
    out[i] = Hypothesis{{tokens + size_t(order[i]) * T, size_t(f.length)}, f.score, f.log_prob};
  }
  at<int>(plan.hypothesis_counts)[b] = n;
}

void Session::Impl::greedy_search(int B, const SearchLimits& limits) {
  const ModelConfig& cfg = model->config();
  const int V = cfg.target_vocab_size, K = plan.K, T = plan.T;
  const int* length_limit = at<int>(plan.length_limits);
  int32_t* step = at<int32_t>(plan.step_tokens);
  int* done = at<int>(plan.source_done);
  float* log_prob = at<float>(plan.beam_scores);
  float* logits = at<float>(plan.logits);
  Finished* fin = at<Finished>(plan.finished);
  int32_t* out_tokens = at<int32_t>(plan.finished_tokens);
  int32_t* live_tokens = at<int32_t>(plan.live_tokens);
  int* live = at<int>(plan.live_slots);
  detail::DecoderState state = decoder_state(1);
  state.row_slot = live;  // greedy: slot b and sentence b are both the sentence's index
  state.row_source = live;
  const detail::DecoderBuffers buffers = decoder_buffers();

  int alive = B, max_limit = 0;
  for (int b = 0; b < B; ++b) {
    step[b] = cfg.bos_id;
    done[b] = 0;
    log_prob[b] = 0.0f;
    max_limit = std::max(max_limit, length_limit[b]);
    if (length_limit[b] == 0) {  // an empty source
      fin[size_t(b) * K] = {0.0f, 0.0f, 0};
      emit_results(b, 1, 1);
      done[b] = 1;
      --alive;
    }
  }
  for (int t = 0; t < max_limit && alive > 0; ++t) {
    MT_PROFILE_STAGE(step);
    // Only unfinished sentences are decoded: a batch costs what its live rows cost.
    int rows = 0;
    for (int b = 0; b < B; ++b) {
      if (!done[b]) live[rows] = b, live_tokens[rows++] = step[b];
    }
    transformer->decode_step(live_tokens, rows, t, state, buffers, logits);
    MT_PROFILE_STAGE(search);
    // Each row's choice on the session's threads (rows are independent), the
    // bookkeeping after it in order.
    int32_t* chosen = live_tokens;  // consumed by decode_step
    {
      MT_PROFILE_STAGE(select);
      pool->parallel_for(rows, [&](int i, int) {
        float* row = logits + size_t(i) * V;
        if (t < limits.min_length) row[cfg.eos_id] = kNegInf;
        float best = 0.0f;
        chosen[i] = kernels->argmax_f32(row, V, &best);
        kernels->log_softmax_f32(row, row, V);  // the same log-probabilities beam search ranks by
      });
    }
    for (int i = 0; i < rows; ++i) {
      const int b = live[i], token = chosen[i];
      const float* row = logits + size_t(i) * V;
      log_prob[b] += row[token];
      step[b] = token;
      const bool eos = token == cfg.eos_id;
      if (!eos) out_tokens[size_t(b) * K * T + t] = token;
      if (eos || t + 1 >= length_limit[b]) {
        const int length = eos ? t : t + 1;
        fin[size_t(b) * K] = {normalized(log_prob[b], t + 1, limits.length_penalty), log_prob[b], length};
        emit_results(b, 1, 1);
        done[b] = 1;
        --alive;
      }
    }
  }
}

void Session::Impl::beam_search(int B, const SearchLimits& limits) {
  const ModelConfig& cfg = model->config();
  const int V = cfg.target_vocab_size, K = limits.beam, T = plan.T, C = cfg.d_model;
  const int R = B * K, L = cfg.decoder_layers;
  const int* length_limit = at<int>(plan.length_limits);
  int32_t* step = at<int32_t>(plan.step_tokens);
  int* done = at<int>(plan.source_done);
  float* scores = at<float>(plan.beam_scores);
  float* logits = at<float>(plan.logits);
  int32_t* history = at<int32_t>(plan.history);
  int32_t* history_scratch = at<int32_t>(plan.history_scratch);
  Candidate* candidates = at<Candidate>(plan.candidates);
  int32_t* parents = at<int32_t>(plan.parents);
  // Finished hypotheses of sentence b: fin[b * plan.K + i], tokens at row (b * plan.K + i) * T.
  Finished* fin = at<Finished>(plan.finished);
  int32_t* fin_tokens = at<int32_t>(plan.finished_tokens);
  int* fin_count = at<int>(plan.hypothesis_counts);
  int32_t* live_tokens = at<int32_t>(plan.live_tokens);
  int* live_slots = at<int>(plan.live_slots);
  int* live_sources = at<int>(plan.live_sources);
  int* live_beams = at<int>(plan.live_beams);
  int* row_of_beam = at<int>(plan.live_row_of_beam);
  int* beam_slot = at<int>(plan.beam_slots);  // cache slot of beam b*K+k, one of b's K
  Candidate* row_candidates = at<Candidate>(plan.row_candidates);
  int* row_candidate_count = at<int>(plan.row_candidate_counts);
  detail::DecoderState state = decoder_state(K);
  state.row_slot = live_slots;
  state.row_source = live_sources;
  const detail::DecoderBuffers buffers = decoder_buffers();

  // Adds a finished hypothesis to sentence b's best K (replacing the worst when full).
  auto finish = [&](int b, const int32_t* tokens, int length, float log_prob, int scored_length) {
    const float score = normalized(log_prob, scored_length, limits.length_penalty);
    Finished* f = fin + size_t(b) * plan.K;
    int slot = fin_count[b];
    if (slot == K) {
      slot = int(std::min_element(f, f + K, [](const Finished& x, const Finished& y) { return x.score < y.score; }) - f);
      if (!(score > f[slot].score)) return;
    } else {
      ++fin_count[b];
    }
    f[slot] = {score, log_prob, length};
    std::copy(tokens, tokens + length, fin_tokens + (size_t(b) * plan.K + slot) * T);
  };

  int alive = B, max_limit = 0;
  for (int b = 0; b < B; ++b) {
    done[b] = 0;
    fin_count[b] = 0;
    max_limit = std::max(max_limit, length_limit[b]);
    for (int k = 0; k < K; ++k) {
      step[b * K + k] = cfg.bos_id;
      scores[b * K + k] = k == 0 ? 0.0f : kNegInf;  // all beams start equal: expand one
      parents[b * K + k] = k;
      beam_slot[b * K + k] = b * K + k;
    }
    if (length_limit[b] == 0) {  // an empty source: one empty hypothesis
      finish(b, nullptr, 0, 0.0f, 0);
      emit_results(b, fin_count[b], limits.hypotheses);
      done[b] = 1;
      --alive;
    }
  }

  for (int t = 0; t < max_limit && alive > 0; ++t) {
    MT_PROFILE_STAGE(step);
    // Only live beams of unfinished sentences are decoded: one row per
    // sentence at the first step, none for a finished sentence.
    int rows = 0;
    for (int beam = 0; beam < R; ++beam) {
      const int b = beam / K;
      if (done[b] || scores[beam] == kNegInf) {
        row_of_beam[beam] = -1;
        continue;
      }
      row_of_beam[beam] = rows;
      live_beams[rows] = beam;
      live_slots[rows] = beam_slot[beam];
      live_sources[rows] = b;
      live_tokens[rows++] = step[beam];
    }
    transformer->decode_step(live_tokens, rows, t, state, buffers, logits);
    // Everything below is the search's: selection (nested) and bookkeeping.
    MT_PROFILE_STAGE(search);
    // The 2K best continuations of each live beam, on the session's threads
    // (rows are independent)...
    {
      MT_PROFILE_STAGE(select);
      pool->parallel_for(rows, [&](int i, int) {
        const int beam = live_beams[i];
        float* lp = logits + size_t(i) * V;
        if (t < limits.min_length) lp[cfg.eos_id] = kNegInf;
        kernels->log_softmax_f32(lp, lp, V);
        row_top_k(*kernels, lp, V, 2 * K, row_candidates + size_t(i) * 2 * K, &row_candidate_count[i],
                  scores[beam], beam % K);
      });
    }
    for (int b = 0; b < B; ++b) {
      if (done[b]) {
        for (int k = 0; k < K; ++k) parents[b * K + k] = k;
        continue;
      }
      // ...then the 2K best of the sentence: at most K of them end in EOS, so
      // K always continue.
      int n = 0;
      for (int k = 0; k < K; ++k) {
        const int row = row_of_beam[b * K + k];
        if (row < 0) continue;
        const Candidate* top = row_candidates + size_t(row) * 2 * K;
        std::copy(top, top + row_candidate_count[row], candidates + n);
        n += row_candidate_count[row];
      }
      insertion_sort(candidates, n, [](const Candidate& x, const Candidate& y) { return x.log_prob > y.log_prob; });
      int next = 0;
      for (int i = 0; i < n && next < K; ++i) {
        const Candidate& c = candidates[i];
        const int32_t* prefix = history + size_t(b * K + c.parent) * T;
        if (c.token == cfg.eos_id) {
          finish(b, prefix, t, c.log_prob, t + 1);
          continue;
        }
        const int row = b * K + next;
        // New beam `next` continues beam c.parent: gather its history now.
        std::copy(prefix, prefix + t, history_scratch + size_t(next) * T);
        history_scratch[size_t(next) * T + t] = c.token;
        parents[row] = c.parent;
        scores[row] = c.log_prob;
        step[row] = c.token;
        ++next;
      }
      if (next == 0 && fin_count[b] == 0) {
        // No token had a log-probability at all (NaN logits: a model with
        // NaN weights). The sentence still gets a result: its best prefix so
        // far, scored NaN.
        for (int k = 0; k < K; ++k) {
          if (scores[b * K + k] == kNegInf) continue;
          finish(b, history + size_t(b * K + k) * T, t, std::numeric_limits<float>::quiet_NaN(), t);
          break;
        }
      }
      for (int k = next; k < K; ++k) scores[b * K + k] = kNegInf, parents[b * K + k] = k;
      for (int k = 0; k < next; ++k) {
        std::copy(history_scratch + size_t(k) * T, history_scratch + size_t(k) * T + t + 1,
                  history + size_t(b * K + k) * T);
      }
      const bool at_limit = t + 1 >= length_limit[b];
      if (at_limit) {
        for (int k = 0; k < next; ++k) {
          finish(b, history + size_t(b * K + k) * T, t + 1, scores[b * K + k], t + 1);
        }
      }
      if (fin_count[b] >= K || at_limit || next == 0) {
        emit_results(b, fin_count[b], limits.hypotheses);
        done[b] = 1;
        --alive;
      }
    }
    if (alive == 0) break;
    // Give every live beam its parent's self-attention cache for positions
    // [0, t]. A parent's first child takes over the parent's slot as it is;
    // each further child copies it into a slot no child took over (a parent
    // that died). Only those copies move memory.
    MT_PROFILE_STAGE(cache_reorder);
    const size_t row_floats = size_t(T) * 2 * C, used = size_t(t + 1) * 2 * C;
    for (int b = 0; b < B; ++b) {
      if (done[b]) continue;
      int* slots = beam_slot + size_t(b) * K;
      int next_slots[256];  // K <= 256 (SessionOptions::validate)
      bool inherited[256];
      std::fill(inherited, inherited + K, false);
      for (int k = 0; k < K; ++k) {
        next_slots[k] = -1;
        const int parent = parents[b * K + k];
        if (scores[b * K + k] != kNegInf && !inherited[parent]) {
          inherited[parent] = true;
          next_slots[k] = slots[parent];
        }
      }
      int free_slots[256], free_count = 0;
      for (int p = 0; p < K; ++p) {
        if (!inherited[p]) free_slots[free_count++] = slots[p];
      }
      int taken = 0;
      for (int k = 0; k < K; ++k) {
        if (next_slots[k] >= 0) continue;
        next_slots[k] = free_slots[taken++];
        if (scores[b * K + k] == kNegInf) continue;  // a dead beam's slot holds nothing of use
        const size_t from = size_t(slots[parents[b * K + k]]) * row_floats, to = size_t(next_slots[k]) * row_floats;
        for (int l = 0; l < L; ++l) {
          float* cache = state.self_cache + size_t(l) * state.self_cache_stride;
          std::memcpy(cache + to, cache + from, used * sizeof(float));
        }
      }
      std::copy(next_slots, next_slots + K, slots);
    }
  }
}

}  // namespace mt
