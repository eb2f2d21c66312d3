// Greedy and beam search of a CUDA session. The device computes each step's
// log-probabilities and picks (argmax, or the 2K best of each beam row with
// top_k); only those picks come back to the host, whose bookkeeping is the
// CPU search's (search_bookkeeping.cpp) on the session's host arena.
#include <algorithm>
#include <limits>

#include "cuda/cuda_errors.hpp"
#include "cuda/cuda_session.hpp"
#include "session/session_impl.hpp"

namespace mt::detail {
namespace {
constexpr float kNegInf = -std::numeric_limits<float>::infinity();
}  // namespace

Status CudaSession::greedy_search(Session::Impl& s, int B, const SearchLimits& limits) {
  const ModelConfig& cfg = *config_;
  const int rows = padded_sentences(B);
  int32_t* up = pinned<int32_t>(plan_.up_step);
  int32_t* ring_tokens = pinned<int32_t>(plan_.ring_tokens);
  float* ring_values = pinned<float>(plan_.ring_values);
  SearchBookkeeping book(s.search_buffers(), limits, cfg.start_id(), cfg.eos_id);

  int alive = book.start_greedy(B);
  const int max_limit = book.max_steps();
  if (alive == 0) return {};
  std::fill(up, up + rows, cfg.start_id());  // padding rows too: they must read valid embeddings
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
      // A forced step's token replaces the pick as the next input (the host
      // records it below, scored 0 as on the CPU).
      if (const size_t t = size_t(t0 + i); t < limits.forced_prefix.size()) {
        MT_CUDA_LAUNCH(fill_i32_cuda(dev<int32_t>(plan_.step_tokens), rows, limits.forced_prefix[t], stream_),
                       "forced token");
      }
    }
    MT_RETURN_IF_ERROR(sync("greedy steps"));
    for (int i = 0; i < steps && alive > 0; ++i) {
      const int t = t0 + i;
      const int32_t* picked = ring_tokens + size_t(i) * plan_.R;
      const float* picked_log_prob = ring_values + size_t(i) * plan_.R;
      const bool forced = size_t(t) < limits.forced_prefix.size();
      for (int b = 0; b < B; ++b) {
        if (book.done(b)) continue;
        alive -= forced ? book.advance_greedy(b, t, limits.forced_prefix[size_t(t)], 0.0f)
                        : book.advance_greedy(b, t, picked[b], picked_log_prob[b]);
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
  const float* scores = s.at<float>(s.plan.beam_scores);
  const int32_t* parents = s.at<int32_t>(s.plan.parents);
  int32_t* d_step = dev<int32_t>(plan_.step_tokens);
  int32_t* d_index = dev<int32_t>(plan_.gather_index);
  int32_t* step = pinned<int32_t>(plan_.up_step);
  int32_t* index = pinned<int32_t>(plan_.up_index);
  float* top_values = pinned<float>(plan_.down_values);
  int32_t* top_tokens = pinned<int32_t>(plan_.down_indices);
  // The beams' next tokens go straight into the pinned buffer that uploads them.
  SearchBuffers buffers = s.search_buffers();
  buffers.step_tokens = step;
  SearchBookkeeping book(buffers, limits, cfg.start_id(), cfg.eos_id);
  auto upload_steps = [&]() {
    return cudaMemcpyAsync(d_step, step, size_t(rows) * sizeof(int32_t), cudaMemcpyHostToDevice, stream_);
  };

  int alive = book.start_beam(B);
  const int max_limit = book.max_steps();
  if (alive == 0) return {};
  // Padding rows read valid embeddings and keep their own cache rows.
  for (int r = R; r < rows; ++r) step[r] = cfg.start_id(), index[r] = r;
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
      if (book.done(b)) continue;
      // The 2K best continuations of each live beam, from the device.
      Candidate* candidates = book.candidates();
      int n = 0;
      for (int k = 0; k < K; ++k) {
        const int row = b * K + k;
        if (scores[row] == kNegInf) continue;
        if (size_t(t) < limits.forced_prefix.size()) {  // one continuation, scored 0, as on the CPU
          candidates[n++] = {scores[row], limits.forced_prefix[size_t(t)], k};
          continue;
        }
        for (int i = 0; i < width; ++i) {
          const size_t at = size_t(row) * width + i;
          if (top_tokens[at] < 0) break;  // the row had fewer candidates
          candidates[n++] = {top_values[at] + scores[row], top_tokens[at], k, top_values[at]};
        }
      }
      alive -= book.advance_beam(b, n, t);
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
      MT_CUDA_LAUNCH(
          gather_rows_f32_cuda(dev<float>(plan_.self_cache[cache_]), dev<float>(plan_.self_cache[1 - cache_]), d_index,
                               rows, row_floats, size_t(t + 1) * 2 * C, L, plan_.self_cache_stride, stream_),
          "KV cache gather");
      cache_ = 1 - cache_;
    }
  }
  return {};
}

}  // namespace mt::detail

namespace mt::detail {

DeviceBeams CudaSession::device_beams(int K) const {
  DeviceBeams d;
  d.K = K;
  d.T = plan_.T;
  d.capacity = plan_.K;
  d.scores = dev<float>(plan_.ds_scores);
  d.parents = dev<int32_t>(plan_.ds_parents);
  d.step_tokens = dev<int32_t>(plan_.step_tokens);
  d.history = dev<int32_t>(plan_.ds_history);
  d.scratch = dev<int32_t>(plan_.ds_scratch);
  d.candidates = dev<Candidate>(plan_.ds_candidates);
  d.finished = dev<Finished>(plan_.ds_finished);
  d.finished_tokens = dev<int32_t>(plan_.ds_finished_tokens);
  d.finished_counts = dev<int>(plan_.ds_counts);
  d.done = dev<int>(plan_.ds_done);
  d.length_limits = dev<int>(plan_.ds_limits);
  d.alive = dev<int>(plan_.ds_alive);
  d.gather_index = dev<int32_t>(plan_.gather_index);
  d.length_scales = dev<float>(plan_.ds_length_scales);
  return d;
}

// Beam search whose every step (decoder, top-k, bookkeeping, cache gather)
// stays on the device: the host starts the sentences as beam_search does,
// sends that state up once, waits every kBeamStepsPerSync steps for the live
// count, and at the end takes the finished hypotheses back to write the
// results.
Status CudaSession::beam_search_on_device(Session::Impl& s, int B, const SearchLimits& limits) {
  const ModelConfig& cfg = *config_;
  const int K = limits.beam, T = s.plan.T, C = cfg.d_model, cap = s.plan.K;
  const int R = B * K, rows = padded_sentences(B) * K, L = cfg.decoder_layers;
  SearchBuffers buffers = s.search_buffers(false);  // the device's steps keep no per-token log-probabilities
  int32_t* step = pinned<int32_t>(plan_.up_step);
  buffers.step_tokens = step;
  SearchBookkeeping book(buffers, limits, cfg.start_id(), cfg.eos_id);
  const int alive_at_start = book.start_beam(B);
  if (alive_at_start == 0) return {};
  const int max_limit = book.max_steps();
  const DeviceBeams d = device_beams(K);

  // The starting state: BOS everywhere (padding rows too: they read valid
  // embeddings and keep their own cache rows), one live beam per sentence,
  // the sentences an empty source already finished marked done.
  int32_t* index = pinned<int32_t>(plan_.up_index);
  int* done = pinned<int>(plan_.up_done);
  int* alive = pinned<int>(plan_.down_alive);
  for (int r = R; r < rows; ++r) step[r] = cfg.start_id();
  for (int r = 0; r < rows; ++r) index[r] = r;
  for (int b = 0; b < B; ++b) done[b] = book.done(b) ? 1 : 0;
  std::copy(buffers.scores, buffers.scores + R, pinned<float>(plan_.up_scores));
  std::copy(buffers.parents, buffers.parents + R, pinned<int32_t>(plan_.up_parents));
  std::copy(buffers.length_limits, buffers.length_limits + B, pinned<int>(plan_.up_limits));
  float* scales = pinned<float>(plan_.up_length_scales);
  for (int length = 0; length <= T; ++length)
    scales[length] = length_scale(length + limits.length_offset, limits.length_penalty);
  *alive = alive_at_start;
  const auto up = [&](void* device, const void* host, size_t bytes) {
    return cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream_);
  };
  cudaError_t e = up(d.step_tokens, step, size_t(rows) * sizeof(int32_t));
  if (e == cudaSuccess) e = up(d.gather_index, index, size_t(rows) * sizeof(int32_t));
  if (e == cudaSuccess) e = up(d.scores, pinned<float>(plan_.up_scores), size_t(R) * sizeof(float));
  if (e == cudaSuccess) e = up(d.parents, pinned<int32_t>(plan_.up_parents), size_t(R) * sizeof(int32_t));
  if (e == cudaSuccess) e = up(d.done, done, size_t(B) * sizeof(int));
  if (e == cudaSuccess)
    e = up(const_cast<int*>(d.length_limits), pinned<int>(plan_.up_limits), size_t(B) * sizeof(int));
  if (e == cudaSuccess) e = up(d.alive, alive, sizeof(int));
  if (e == cudaSuccess) e = up(const_cast<float*>(d.length_scales), scales, size_t(T + 1) * sizeof(float));
  // Every live sentence starts with no finished hypothesis.
  if (e == cudaSuccess) e = cudaMemsetAsync(d.finished_counts, 0, size_t(B) * sizeof(int), stream_);
  if (e != cudaSuccess) return cuda_error(Errc::internal, "copying the search's state to the GPU failed", e);
  MT_RETURN_IF_ERROR(upload_positions(0, limits.min_length));

  const size_t row_floats = size_t(T) * 2 * C;
  for (int t0 = 0; t0<max_limit&& * alive> 0; t0 += kBeamStepsPerSync) {
    const int steps = std::min(kBeamStepsPerSync, max_limit - t0);
    for (int i = 0; i < steps; ++i) {
      const int t = t0 + i;
      MT_RETURN_IF_ERROR(launch_step(rows, K, cache_));
      MT_CUDA_LAUNCH(advance_beams_cuda(d, B, t, cfg.eos_id, limits.length_penalty, dev<float>(plan_.top_values),
                                        dev<int32_t>(plan_.top_indices), stream_),
                     "beam bookkeeping");
      // Row r takes its parent's keys and values for positions [0, t].
      MT_CUDA_LAUNCH(gather_rows_f32_cuda(dev<float>(plan_.self_cache[cache_]),
                                          dev<float>(plan_.self_cache[1 - cache_]), d.gather_index, rows, row_floats,
                                          size_t(t + 1) * 2 * C, L, plan_.self_cache_stride, stream_),
                     "KV cache gather");
      cache_ = 1 - cache_;
    }
    if (const cudaError_t copied = cudaMemcpyAsync(alive, d.alive, sizeof(int), cudaMemcpyDeviceToHost, stream_);
        copied != cudaSuccess) {
      return cuda_error(Errc::internal, "copying the live count from the GPU failed", copied);
    }
    MT_RETURN_IF_ERROR(sync("beam steps"));
  }

  // The finished hypotheses of the sentences searched on the device become
  // their results, as on the host.
  Finished* finished = pinned<Finished>(plan_.down_finished);
  int32_t* tokens = pinned<int32_t>(plan_.down_finished_tokens);
  int* counts = pinned<int>(plan_.down_counts);
  const size_t hypotheses = size_t(B) * cap;
  e = cudaMemcpyAsync(finished, d.finished, hypotheses * sizeof(Finished), cudaMemcpyDeviceToHost, stream_);
  if (e == cudaSuccess) {
    e = cudaMemcpyAsync(tokens, d.finished_tokens, hypotheses * T * sizeof(int32_t), cudaMemcpyDeviceToHost, stream_);
  }
  if (e == cudaSuccess)
    e = cudaMemcpyAsync(counts, d.finished_counts, size_t(B) * sizeof(int), cudaMemcpyDeviceToHost, stream_);
  if (e != cudaSuccess) return cuda_error(Errc::internal, "copying the hypotheses from the GPU failed", e);
  MT_RETURN_IF_ERROR(sync("beam results"));
  for (int b = 0; b < B; ++b) {
    if (book.done(b)) continue;  // an empty source, finished at the start
    const size_t first = size_t(b) * cap;
    std::copy(finished + first, finished + first + cap, buffers.finished + first);
    std::copy(tokens + first * T, tokens + (first + cap) * T, buffers.finished_tokens + first * T);
    buffers.finished_counts[b] = counts[b];
    book.emit(b, limits.hypotheses);
  }
  return {};
}

}  // namespace mt::detail
