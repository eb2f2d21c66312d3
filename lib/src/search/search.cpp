// Greedy and beam search over the session's decoder: each step's decoder
// rows and picks here, the bookkeeping in search_bookkeeping.cpp (shared
// with the GPU search).
#include <algorithm>
#include <cstring>
#include <limits>

#include "access.hpp"
#include "search/repetition_guards.hpp"
#include "search/token_stream.hpp"
#include "session/session_impl.hpp"
#include "support/stage_profile.hpp"

namespace mt {

using detail::Candidate;
using detail::SearchLimits;

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// A row's `count` best tokens (log-probabilities and columns, best first) as
// candidates scored base + log prob.
void row_candidates_of(const float* values, const int32_t* columns, int count, const detail::RowVocabulary& vocabulary,
                       Candidate* top, float base, int32_t parent) {
  for (int i = 0; i < count; ++i) top[i] = {values[i] + base, vocabulary.id(columns[i]), parent, values[i]};
}

// Keeps the `capacity` best tokens of a log-softmax row, best first; ties go
// to the lower column (the lower id), as argmax does, so beam 1 reproduces
// greedy search.
void row_top_k(const KernelTable& kernels, const float* log_probs, const detail::RowVocabulary& vocabulary,
               int capacity, Candidate* top, int* count, float base, int32_t parent) {
  float values[kTopKMax];
  int32_t columns[kTopKMax];
  kernels.top_k_f32(log_probs, vocabulary.size, capacity, values, columns, count);
  row_candidates_of(values, columns, *count, vocabulary, top, base, parent);
}

// Whether `id` is one the model never emits.
bool suppressed(const ModelConfig& cfg, int32_t id) {
  return std::find(cfg.suppressed_ids.begin(), cfg.suppressed_ids.end(), id) != cfg.suppressed_ids.end();
}

// The `keep` most probable tokens of a raw logits row that are not
// suppressed: their log-probabilities (as log_softmax_f32 gives them) and
// columns, best first, without writing the row (log_softmax_top_k_f32, for
// keep + |suppressed| and the suppressed left out: the same tokens as ranking
// the masked log-softmax row). False when that cannot stand in for the row
// (too many to ask for, or no finite log-probability: NaN logits).
// values and columns hold kTopKMax each.
bool fused_top_k(const KernelTable& kernels, const ModelConfig& cfg, const float* row,
                 const detail::RowVocabulary& vocabulary, int keep, float* values, int32_t* columns, int* count) {
  const int ask = keep + int(cfg.suppressed_ids.size());
  if (ask > kTopKMax) return false;
  int found = 0;
  kernels.log_softmax_top_k_f32(row, vocabulary.size, ask, values, columns, &found);
  int kept = 0;
  for (int j = 0; j < found && kept < keep; ++j) {
    if (cfg.suppressed_ids.empty() || !suppressed(cfg, vocabulary.id(columns[j]))) {
      values[kept] = values[j], columns[kept] = columns[j], ++kept;
    }
  }
  *count = kept;
  return kept > 0;
}

// -inf at `id`'s column, when the row covers it.
void mask(float* row, const detail::RowVocabulary& vocabulary, int32_t id) {
  const int column = vocabulary.column(id);
  if (column >= 0) row[column] = kNegInf;
}

// log_softmax_f32(row)[column], without writing the row.
float log_prob_at(const KernelTable& kernels, const float* row, int n, int column) {
  float max = 0.0f, log_sum = 0.0f;
  kernels.log_sum_exp_f32(row, n, &max, &log_sum);
  return row[column] - max - log_sum;
}

// The log-probability the row gives `id` (-inf when it does not cover it).
float log_prob_of(const detail::StepRow& row, int32_t id) {
  const int column = row.vocabulary.column(id);
  return column >= 0 ? row.values[column] : kNegInf;
}

}  // namespace

detail::TokenStream Session::Impl::token_stream(const SearchLimits& limits) {
  detail::StreamBuffers b;
  b.streamed_tokens = at<int>(plan.streamed_tokens);
  b.streamed_bytes = at<size_t>(plan.streamed_bytes);
  if (plan.text_out_stride > 0) {  // a model with a vocabulary: the first hypothesis' text slot, free until the end
    b.text = at<char>(plan.text_out);
    b.text_bytes = plan.text_out_stride;
  }
  return detail::TokenStream(limits.on_token, b, detail::target_tokenizer_of(*model), model->config().eos_id,
                             stream_first, stream_stride, stream_mutex);
}

detail::SearchBuffers Session::Impl::search_buffers(bool log_probs) {
  detail::SearchBuffers b;
  b.capacity = plan.K;
  b.T = plan.T;
  b.length_limits = at<int>(plan.length_limits);
  b.done = at<int>(plan.source_done);
  b.scores = at<float>(plan.beam_scores);
  b.step_tokens = at<int32_t>(plan.step_tokens);
  b.parents = at<int32_t>(plan.parents);
  b.history = at<int32_t>(plan.history);
  b.history_scratch = at<int32_t>(plan.history_scratch);
  b.candidates = at<Candidate>(plan.candidates);
  b.finished = at<detail::Finished>(plan.finished);
  b.finished_tokens = at<int32_t>(plan.finished_tokens);
  b.finished_counts = at<int>(plan.hypothesis_counts);
  b.hypotheses = at<Hypothesis>(plan.hypotheses);
  if (log_probs) {
    b.history_log_probs = at<float>(plan.history_log_probs);
    b.history_log_probs_scratch = at<float>(plan.history_log_probs_scratch);
    b.finished_log_probs = at<float>(plan.finished_log_probs);
  }
  if (plan.finished_alignments != 0) {
    b.S = plan.S;
    b.history_alignments = at<float>(plan.history_alignments);
    b.alignment_scratch = at<float>(plan.alignment_scratch);
    b.finished_alignments = at<float>(plan.finished_alignments);
    b.step_alignments = at<float>(plan.step_alignments);
    b.source_offsets = at<int>(plan.source_offsets);
  }
  return b;
}

void Session::Impl::greedy_search(int B, const SearchLimits& limits) {
  const ModelConfig& cfg = model->config();
  int32_t* step = at<int32_t>(plan.step_tokens);
  float* logits = at<float>(plan.logits);
  int32_t* live_tokens = at<int32_t>(plan.live_tokens);
  int* live = at<int>(plan.live_slots);
  detail::DecoderState state = decoder_state(1);
  state.row_slot = live;  // greedy: slot b and sentence b are both the sentence's index
  state.row_source = live;
  state.alignment_row = live;
  state.output = shortlist_output();
  const detail::DecoderBuffers buffers = decoder_buffers();
  const detail::SearchBuffers search = search_buffers();
  detail::SearchBookkeeping book(search, limits, cfg.start_id(), cfg.eos_id);
  detail::TokenStream stream = token_stream(limits);
  int* stopped = at<int>(plan.stopped);
  const auto tokens_of = [&](int b) { return search.finished_tokens + size_t(b) * plan.K * plan.T; };
  const auto log_probs_of = [&](int b) { return search.finished_log_probs + size_t(b) * plan.K * plan.T; };

  int alive = book.start_greedy(B);
  stream.start(B);
  std::fill(step, step + B, cfg.start_id());
  for (int t = 0; t < book.max_steps() && alive > 0; ++t) {
    MT_PROFILE_STAGE(step);
    ++decoder_steps;
    if (limits.cancelled()) {  // each unfinished sentence ends with its tokens so far
      for (int b = 0; b < B; ++b) {
        if (book.done(b)) continue;
        book.stop_greedy(b, t);
        stopped[b] = 1;
        if (stream.active()) stream.give(b, tokens_of(b), t, log_probs_of(b), true, false);
      }
      break;
    }
    // Only unfinished sentences are decoded: a batch costs what its live rows cost.
    int rows = 0;
    for (int b = 0; b < B; ++b) {
      if (!book.done(b)) live[rows] = b, live_tokens[rows++] = step[b];
    }
    if (search.finished_alignments != nullptr) {  // row t of each sentence's finished slot
      state.alignment = search.finished_alignments + size_t(t) * size_t(plan.S);
      state.alignment_stride = size_t(plan.K) * plan.T * size_t(plan.S);
    }
    transformer->decode_step(live_tokens, rows, t, state, buffers, logits);
    if (plan.shortlist_width > 0) shortlist_rows(rows, live);
    MT_PROFILE_STAGE(search);
    // Each row's choice on the session's threads (rows are independent), the
    // bookkeeping after it in order.
    int32_t* chosen = live_tokens;  // consumed by decode_step
    {
      MT_PROFILE_STAGE(select);
      pool->parallel_for(rows, [&](int i, int) {
        const int b = live[i];
        if (size_t(t) < limits.forced_prefix.size()) {  // forced, scored 0 (advance_greedy below)
          chosen[i] = limits.forced_prefix[size_t(t)];
          return;
        }
        const detail::StepRow step = step_row(i, b);
        float* row = step.values;
        const detail::RowVocabulary& vocabulary = step.vocabulary;
        const int n = vocabulary.size;
        if (t < limits.min_length) mask(row, vocabulary, cfg.eos_id);
        const int32_t* history = tokens_of(b);
        if (limits.repetition_penalty != 1.0f) {
          detail::penalize_repeats(row, vocabulary, history, t, limits.repetition_penalty);
        }
        // The chosen token's log-probability goes to its column (advance_greedy
        // reads it there); the rest of the row is not rewritten unless a
        // guard needs the whole log-softmax. Every path gives the floats
        // log_softmax_f32 would.
        if (t < limits.given_steps(b)) {  // the caller's prefix: scored as the model scores it
          chosen[i] = limits.given_token(b, t);
          const int column = vocabulary.column(chosen[i]);
          if (column >= 0) row[column] = log_prob_at(*kernels, row, n, column);
          return;
        }
        float best = 0.0f;
        if (limits.no_repeat_ngram_size == 0) {
          if (cfg.suppressed_ids.empty()) {
            const int column = kernels->argmax_f32(row, n, &best);
            row[column] = log_prob_at(*kernels, row, n, column);
            chosen[i] = vocabulary.id(column);
            return;
          }
          float values[kTopKMax];
          int32_t columns[kTopKMax];
          int count = 0;
          if (fused_top_k(*kernels, cfg, row, vocabulary, 1, values, columns, &count)) {
            row[columns[0]] = values[0];
            chosen[i] = vocabulary.id(columns[0]);
            return;
          }
        }
        // Masked after the log-softmax, as beam search does.
        kernels->log_softmax_f32(row, row, n);
        for (const int32_t id : cfg.suppressed_ids) mask(row, vocabulary, id);
        detail::ban_repeated_ngrams(row, vocabulary, history, t, limits.no_repeat_ngram_size);
        chosen[i] = vocabulary.id(kernels->argmax_f32(row, n, &best));
      });
    }
    const bool forced = size_t(t) < limits.forced_prefix.size();
    for (int i = 0; i < rows; ++i) {
      const int b = live[i], token = chosen[i];
      step[b] = token;
      const bool ended = book.advance_greedy(b, t, token, forced ? 0.0f : log_prob_of(step_row(i, b), token));
      alive -= ended;
      if (!stream.active()) continue;
      const bool eos = token == cfg.eos_id;
      if (stream.give(b, tokens_of(b), eos ? t : t + 1, log_probs_of(b), ended, eos)) {
        book.stop_greedy(b, t + 1);  // asked to stop: the tokens given so far
        stopped[b] = 1;
        --alive;
      }
    }
  }
}

void Session::Impl::beam_search(int B, const SearchLimits& limits) {
  const ModelConfig& cfg = model->config();
  const int K = limits.beam, T = plan.T, C = cfg.d_model;
  const int R = B * K, L = cfg.decoder_layers;
  int32_t* step = at<int32_t>(plan.step_tokens);
  float* scores = at<float>(plan.beam_scores);
  float* logits = at<float>(plan.logits);
  int32_t* parents = at<int32_t>(plan.parents);
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
  state.alignment_row = live_beams;  // each live row's step alignment at its beam
  state.output = shortlist_output();
  const detail::DecoderBuffers buffers = decoder_buffers();
  const detail::SearchBuffers search = search_buffers();
  detail::SearchBookkeeping book(search, limits, cfg.start_id(), cfg.eos_id);
  detail::TokenStream stream = token_stream(limits);
  int* stopped = at<int>(plan.stopped);
  // The best hypothesis of a finished sentence, all of it, and an EOS when it ended on its own.
  const auto give_result = [&](int b) {
    const Hypothesis& best = search.hypotheses[size_t(b) * plan.K];
    stream.give(b, best.tokens.data(), int(best.tokens.size()), best.token_log_probs.data(), true,
                best.token_log_probs.size() > best.tokens.size());
  };

  int alive = book.start_beam(B);
  stream.start(B);
  for (int beam = 0; beam < R; ++beam) beam_slot[beam] = beam;
  for (int t = 0; t < book.max_steps() && alive > 0; ++t) {
    MT_PROFILE_STAGE(step);
    ++decoder_steps;
    if (limits.cancelled()) {  // each unfinished sentence ends with its best hypothesis so far
      for (int b = 0; b < B; ++b) {
        if (book.done(b)) continue;
        book.stop_beam(b, t);
        stopped[b] = 1;
        if (stream.active()) give_result(b);
      }
      break;
    }
    // Only live beams of unfinished sentences are decoded: one row per
    // sentence at the first step, none for a finished sentence.
    int rows = 0;
    for (int beam = 0; beam < R; ++beam) {
      const int b = beam / K;
      if (book.done(b) || scores[beam] == kNegInf) {
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
    if (plan.shortlist_width > 0) shortlist_rows(rows, live_sources);
    // Everything below is the search's: selection (nested) and bookkeeping.
    MT_PROFILE_STAGE(search);
    // The 2K best continuations of each live beam, on the session's threads
    // (rows are independent)...
    {
      MT_PROFILE_STAGE(select);
      pool->parallel_for(rows, [&](int i, int) {
        const int beam = live_beams[i], b = beam / K;
        Candidate* top = row_candidates + size_t(i) * 2 * K;
        if (size_t(t) < limits.forced_prefix.size()) {  // one continuation, scored 0
          top[0] = {scores[beam], limits.forced_prefix[size_t(t)], beam % K, 0.0f};
          row_candidate_count[i] = 1;
          return;
        }
        const detail::StepRow step = step_row(i, b);
        float* lp = step.values;
        const detail::RowVocabulary& vocabulary = step.vocabulary;
        const int32_t* history = at<int32_t>(plan.history) + size_t(beam) * T;
        if (t < limits.min_length) mask(lp, vocabulary, cfg.eos_id);
        if (limits.repetition_penalty != 1.0f) {
          detail::penalize_repeats(lp, vocabulary, history, t, limits.repetition_penalty);
        }
        const int given = limits.given_steps(b);
        if (t < given) {  // the caller's prefix: one continuation, scored as the model scores it
          const int32_t token = limits.given_token(b, t);
          const int column = vocabulary.column(token);
          const float log_prob = column >= 0 ? log_prob_at(*kernels, lp, vocabulary.size, column) : kNegInf;
          top[0] = {scores[beam] + log_prob, token, beam % K, log_prob};
          row_candidate_count[i] = 1;
          return;
        }
        // Alternatives: the K best at the first free step, then each completed greedily.
        const int keep = limits.alternatives == 0 ? 2 * K : t == given ? K : 1;
        float values[kTopKMax];
        int32_t columns[kTopKMax];
        int count = 0;
        if (limits.no_repeat_ngram_size == 0 && fused_top_k(*kernels, cfg, lp, vocabulary, keep, values, columns, &count)) {
          row_candidates_of(values, columns, count, vocabulary, top, scores[beam], beam % K);
          row_candidate_count[i] = count;
          return;
        }
        kernels->log_softmax_f32(lp, lp, vocabulary.size);
        for (const int32_t id : cfg.suppressed_ids) mask(lp, vocabulary, id);  // keeping their mass, as HF's bad_words_ids
        detail::ban_repeated_ngrams(lp, vocabulary, history, t, limits.no_repeat_ngram_size);
        row_top_k(*kernels, lp, vocabulary, keep, top, &row_candidate_count[i], scores[beam], beam % K);
      });
    }
    // ...then each sentence's next beams from its rows' candidates.
    for (int b = 0; b < B; ++b) {
      if (book.done(b)) continue;
      Candidate* candidates = book.candidates();
      int n = 0;
      for (int k = 0; k < K; ++k) {
        const int row = row_of_beam[b * K + k];
        if (row < 0) continue;
        const Candidate* top = row_candidates + size_t(row) * 2 * K;
        std::copy(top, top + row_candidate_count[row], candidates + n);
        n += row_candidate_count[row];
      }
      const bool ended = book.advance_beam(b, n, t);
      alive -= ended;
      if (!stream.active()) continue;
      if (ended) {
        give_result(b);
        continue;
      }
      const detail::SettledPrefix settled = book.settled_prefix(b, t, stream.streamed(b));
      if (stream.give(b, settled.tokens, settled.length, settled.log_probs, false, false)) {
        const int given = stream.streamed(b);  // the tokens given so far
        book.stop(b, settled.tokens, settled.log_probs, given, settled.alignments);
        stopped[b] = 1;
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
      if (book.done(b)) continue;
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
