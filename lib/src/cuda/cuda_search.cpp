// Greedy and beam search of a CUDA session. The device computes each step's
// log-probabilities and picks (argmax, or the 2K best of each beam row with
// top_k); only those picks come back to the host, whose bookkeeping is
// search.cpp's, line for line, on the session's host arena. Keep the two in
// step: the tests compare their translations.
#include <algorithm>
#include <cmath>
#include <limits>

#include "cuda/cuda_errors.hpp"
#include "cuda/cuda_session.hpp"
#include "session_impl.hpp"

namespace mt::detail {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

float normalized(float log_prob, int length, float penalty) {
  return penalty == 0.0f ? log_prob : log_prob / std::pow(float(std::max(length, 1)), penalty);
}

// Stable, in place, no allocation (std::stable_sort may allocate).
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

Status CudaSession::greedy_search(Session::Impl& s, int B, const SearchLimits& limits) {
  const ModelConfig& cfg = *config_;
  const int K = s.plan.K, T = s.plan.T, rows = padded_sentences(B);
  const int* length_limit = s.at<int>(s.plan.length_limits);
  int* done = s.at<int>(s.plan.source_done);
  float* log_prob = s.at<float>(s.plan.beam_scores);
  Finished* fin = s.at<Finished>(s.plan.finished);
  int32_t* out_tokens = s.at<int32_t>(s.plan.finished_tokens);
  int32_t* up = pinned<int32_t>(plan_.up_step);
  int32_t* ring_tokens = pinned<int32_t>(plan_.ring_tokens);
  float* ring_values = pinned<float>(plan_.ring_values);

  int alive = B, max_limit = 0;
  for (int b = 0; b < B; ++b) {
    done[b] = 0;
    log_prob[b] = 0.0f;
    max_limit = std::max(max_limit, length_limit[b]);
    if (length_limit[b] == 0) {  // an empty source
      fin[size_t(b) * K] = {0.0f, 0.0f, 0};
      s.emit_results(b, 1, 1);
      done[b] = 1;
      --alive;
    }
  }
  if (alive == 0) return {};
  std::fill(up, up + rows, cfg.bos_id);  // padding rows too: they must read valid embeddings
  if (const cudaError_t e = cudaMemcpyAsync(dev<int32_t>(plan_.step_tokens), up, size_t(rows) * sizeof(int32_t),
                                            cudaMemcpyHostToDevice, stream_);
      e != cudaSuccess) {
    return cuda_error(Errc::internal, "copying tokens to the GPU failed", e);
  }
  MT_RETURN_IF_ERROR(upload_positions(0, limits.min_length));
  // The device needs nothing from the host between steps (the picks are the
  // next tokens), so steps go in a few at a time, each copying its picks into
  // a slot of the ring, and the host catches up after one wait.
  for (int t0 = 0; t0 < max_limit && alive > 0; t0 += kGreedyStepsPerSync) {
    const int steps = std::min(kGreedyStepsPerSync, max_limit - t0);
    for (int i = 0; i < steps; ++i) {
      MT_RETURN_IF_ERROR(launch_step(rows, 1, 0));
      cudaError_t e = cudaMemcpyAsync(ring_tokens + size_t(i) * plan_.R, dev<int32_t>(plan_.step_tokens),
                                      size_t(B) * sizeof(int32_t), cudaMemcpyDeviceToHost, stream_);
      if (e == cudaSuccess) {
        e = cudaMemcpyAsync(ring_values + size_t(i) * plan_.R, dev<float>(plan_.top_values), size_t(B) * sizeof(float),
                            cudaMemcpyDeviceToHost, stream_);
      }
      if (e != cudaSuccess) return cuda_error(Errc::internal, "copying tokens from the GPU failed", e);
    }
    MT_RETURN_IF_ERROR(sync("greedy steps"));
    for (int i = 0; i < steps && alive > 0; ++i) {
      const int t = t0 + i;
      const int32_t* picked = ring_tokens + size_t(i) * plan_.R;
      const float* picked_log_prob = ring_values + size_t(i) * plan_.R;
      for (int b = 0; b < B; ++b) {
        if (done[b]) continue;
        const int token = picked[b];
        log_prob[b] += picked_log_prob[b];
        const bool eos = token == cfg.eos_id;
        if (!eos) out_tokens[size_t(b) * K * T + t] = token;
        if (eos || t + 1 >= length_limit[b]) {
          const int length = eos ? t : t + 1;
          fin[size_t(b) * K] = {normalized(log_prob[b], t + 1, limits.length_penalty), log_prob[b], length};
          s.emit_results(b, 1, 1);
          done[b] = 1;
          --alive;
        }
      }
    }
  }
  return {};
}

Status CudaSession::beam_search(Session::Impl& s, int B, const SearchLimits& limits) {
  const ModelConfig& cfg = *config_;
  const int K = limits.beam, T = s.plan.T, C = cfg.d_model;
  // R rows of the batch's beams; the step runs `rows`, padded to a captured shape.
  const int R = B * K, rows = padded_sentences(B) * K, L = cfg.decoder_layers, width = 2 * K;
  const int* length_limit = s.at<int>(s.plan.length_limits);
  int* done = s.at<int>(s.plan.source_done);
  float* scores = s.at<float>(s.plan.beam_scores);
  int32_t* history = s.at<int32_t>(s.plan.history);
  int32_t* history_scratch = s.at<int32_t>(s.plan.history_scratch);
  Candidate* candidates = s.at<Candidate>(s.plan.candidates);
  int32_t* parents = s.at<int32_t>(s.plan.parents);
  Finished* fin = s.at<Finished>(s.plan.finished);
  int32_t* fin_tokens = s.at<int32_t>(s.plan.finished_tokens);
  int* fin_count = s.at<int>(s.plan.hypothesis_counts);
  int32_t* d_step = dev<int32_t>(plan_.step_tokens);
  int32_t* d_index = dev<int32_t>(plan_.gather_index);
  int32_t* step = pinned<int32_t>(plan_.up_step);
  int32_t* index = pinned<int32_t>(plan_.up_index);
  float* top_values = pinned<float>(plan_.down_values);
  int32_t* top_tokens = pinned<int32_t>(plan_.down_indices);

  // Adds a finished hypothesis to sentence b's best K (replacing the worst when full).
  auto finish = [&](int b, const int32_t* tokens, int length, float log_prob, int scored_length) {
    const float score = normalized(log_prob, scored_length, limits.length_penalty);
    Finished* f = fin + size_t(b) * s.plan.K;
    int slot = fin_count[b];
    if (slot == K) {
      slot = int(std::min_element(f, f + K, [](const Finished& x, const Finished& y) { return x.score < y.score; }) - f);
      if (!(score > f[slot].score)) return;
    } else {
      ++fin_count[b];
    }
    f[slot] = {score, log_prob, length};
    std::copy(tokens, tokens + length, fin_tokens + (size_t(b) * s.plan.K + slot) * T);
  };
  auto upload_steps = [&]() {
    return cudaMemcpyAsync(d_step, step, size_t(rows) * sizeof(int32_t), cudaMemcpyHostToDevice, stream_);
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
    }
    if (length_limit[b] == 0) {  // an empty source: one empty hypothesis
      finish(b, nullptr, 0, 0.0f, 0);
      s.emit_results(b, fin_count[b], limits.hypotheses);
      done[b] = 1;
      --alive;
    }
  }
  if (alive == 0) return {};
  // Padding rows read valid embeddings and keep their own cache rows.
  for (int r = R; r < rows; ++r) step[r] = cfg.bos_id, index[r] = r;
  if (const cudaError_t e = upload_steps(); e != cudaSuccess) {
    return cuda_error(Errc::internal, "copying tokens to the GPU failed", e);
  }
  MT_RETURN_IF_ERROR(upload_positions(0, limits.min_length));

  for (int t = 0; t < max_limit && alive > 0; ++t) {
    MT_RETURN_IF_ERROR(launch_step(rows, K, cache_));
    const size_t picks = size_t(R) * size_t(width);
    cudaError_t e = cudaMemcpyAsync(top_values, dev<float>(plan_.top_values), picks * sizeof(float),
                                    cudaMemcpyDeviceToHost, stream_);
    if (e == cudaSuccess) {
      e = cudaMemcpyAsync(top_tokens, dev<int32_t>(plan_.top_indices), picks * sizeof(int32_t), cudaMemcpyDeviceToHost,
                          stream_);
    }
    if (e != cudaSuccess) return cuda_error(Errc::internal, "copying candidates from the GPU failed", e);
    MT_RETURN_IF_ERROR(sync("beam step"));

    for (int b = 0; b < B; ++b) {
      if (done[b]) {
        for (int k = 0; k < K; ++k) parents[b * K + k] = k;
        continue;
      }
      // The 2K best continuations of each live beam (from the device), then
      // the 2K best overall: at most K of them end in EOS, so K always continue.
      int n = 0;
      for (int k = 0; k < K; ++k) {
        const int row = b * K + k;
        if (scores[row] == kNegInf) continue;
        for (int i = 0; i < width; ++i) {
          const size_t at = size_t(row) * width + i;
          if (top_tokens[at] < 0) break;  // the row had fewer candidates
          candidates[n++] = {top_values[at] + scores[row], top_tokens[at], k};
        }
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
        std::copy(prefix, prefix + t, history_scratch + size_t(next) * T);
        history_scratch[size_t(next) * T + t] = c.token;
        parents[row] = c.parent;
        scores[row] = c.log_prob;
        step[row] = c.token;
        ++next;
      }
      for (int k = next; k < K; ++k) scores[b * K + k] = kNegInf, parents[b * K + k] = k;
      for (int k = 0; k < next; ++k) {
        std::copy(history_scratch + size_t(k) * T, history_scratch + size_t(k) * T + t + 1,
                  history + size_t(b * K + k) * T);
      }
      const bool at_limit = t + 1 >= length_limit[b];
      if (at_limit) {
        for (int k = 0; k < next; ++k) finish(b, history + size_t(b * K + k) * T, t + 1, scores[b * K + k], t + 1);
      }
      if (fin_count[b] >= K || at_limit || next == 0) {
        s.emit_results(b, fin_count[b], limits.hypotheses);
        done[b] = 1;
        --alive;
      }
    }
    if (alive == 0) break;
    // Row b*K+k takes its parent's keys and values for positions [0, t]: a
    // gather into the other cache buffer, which then holds the live rows.
    bool moved = false;
    for (int r = 0; r < R; ++r) {
      index[r] = (r / K) * K + parents[r];
      moved |= index[r] != r;
    }
    e = upload_steps();
    if (e == cudaSuccess && moved) {
      e = cudaMemcpyAsync(d_index, index, size_t(rows) * sizeof(int32_t), cudaMemcpyHostToDevice, stream_);
    }
    if (e != cudaSuccess) return cuda_error(Errc::internal, "copying beams to the GPU failed", e);
    if (moved) {
      const size_t row_floats = size_t(T) * 2 * C;
      MT_CUDA_LAUNCH(gather_rows_f32_cuda(dev<float>(plan_.self_cache[cache_]), dev<float>(plan_.self_cache[1 - cache_]),
                                          d_index, rows, row_floats, size_t(t + 1) * 2 * C, L, plan_.self_cache_stride,
                                          stream_),
                     "KV cache gather");
      cache_ = 1 - cache_;
    }
  }
  return {};
}

}  // namespace mt::detail
