// Greedy and beam search of a CUDA session. The device computes each step's
// log-probabilities and picks (argmax, or the 2K best of each beam row with
// top_k); only those picks come back to the host, whose bookkeeping is the
// CPU search's (search_bookkeeping.cpp) on the session's host arena.
#include <algorithm>
#include <limits>

#include "cuda/cuda_errors.hpp"
#include "cuda/cuda_session.hpp"
#include "session_impl.hpp"

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
  SearchBookkeeping book(s.search_buffers(), limits, cfg.bos_id, cfg.eos_id);

  int alive = book.start_greedy(B);
  const int max_limit = book.max_steps();
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
        if (!book.done(b)) alive -= book.advance_greedy(b, t, picked[b], picked_log_prob[b]);
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
  SearchBookkeeping book(buffers, limits, cfg.bos_id, cfg.eos_id);
  auto upload_steps = [&]() {
    return cudaMemcpyAsync(d_step, step, size_t(rows) * sizeof(int32_t), cudaMemcpyHostToDevice, stream_);
  };

  int alive = book.start_beam(B);
  const int max_limit = book.max_steps();
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
      if (book.done(b)) continue;
      // The 2K best continuations of each live beam, from the device.
      Candidate* candidates = book.candidates();
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
