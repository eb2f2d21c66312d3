// Beam search's bookkeeping on the device (SessionOptions::cuda_device_search):
// after each step's top-k, one kernel runs search_steps.hpp's step for every
// sentence on the GPU, the same code the host runs, and writes the next
// step's tokens and the KV-cache gather index in place. The host then waits
// only every few steps, for one count of live sentences, instead of every
// step for the candidates.
#pragma once

#include <cstdint>

#include "mt/cuda_kernels.h"
#include "search/search_steps.hpp"

namespace mt::detail {

// The search state of a batch on the device, laid out as the host's
// SearchBuffers (beam b*K+k is beam k of sentence b; finished hypotheses
// spaced by `capacity`), plus what only the device search needs.
struct DeviceBeams {
  int K = 1, T = 0, capacity = 0;
  float* scores = nullptr;               // [B * K]
  int32_t* parents = nullptr;            // [B * K]
  int32_t* step_tokens = nullptr;        // [B * K]: the decoder's next input
  int32_t* history = nullptr;            // [B * K, T]
  int32_t* scratch = nullptr;            // [B * K, T]: a sentence's own
  Candidate* candidates = nullptr;       // [B * 2K * K]: a sentence's own
  Finished* finished = nullptr;          // [B * capacity]
  int32_t* finished_tokens = nullptr;    // [B * capacity, T]
  int* finished_counts = nullptr;        // [B]
  int* done = nullptr;                   // [B]
  const int* length_limits = nullptr;    // [B]
  int* alive = nullptr;                  // sentences not done
  int32_t* gather_index = nullptr;       // [B * K]: the cache row each row takes (its parent's)
  const float* length_scales = nullptr;  // [T + 1]: length_scale(L, penalty), from the host
};

// Step t of every sentence not done: its live beams' candidates from top_k's
// output (values [B * K, 2K] of log-probabilities, tokens -1 past a row's
// candidates) plus each beam's score, then advance_sentence. A sentence that
// finishes is marked done and leaves `alive`.
CudaStatus advance_beams_cuda(const DeviceBeams& beams, int B, int t, int32_t eos_id, float length_penalty,
                              const float* top_values, const int32_t* top_tokens, CudaStream stream);

}  // namespace mt::detail
