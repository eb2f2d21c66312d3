// Decode steps of a CUDA session, launched one kernel at a time or replayed
// from CUDA Graphs.
//
// A small batch's step is about a hundred tiny launches (15 per decoder layer
// with the GEMMs' epilogues), so the GPU mostly waits for the CPU to launch.
// A graph launches them all at once. What a step needs that changes from
// step to step lives in device memory instead of in kernel arguments: the
// tokens (step_tokens), each row's position and cache length (step_state,
// moved on by the step's last kernel) and the minimum length. So one graph
// replays every step of a shape, which is (sentences, beam, cache buffer).
//
// translate() may not allocate, and capturing does, so every graph is
// captured at creation. Batches are padded to a few sentence counts (powers
// of two up to max_batch_size, and max_batch_size) with empty sentences, whose
// rows compute harmlessly and are never read; beams need one graph per cache
// buffer (the gather swaps them). So max_batch_size 16 and max_beam_size 4
// capture 5 x (1 + 3 x 2) = 35 graphs of about a hundred nodes each.
// SessionOptions::cuda_graphs = false skips them; searches then run exactly
// their batch's rows, kernel by kernel.
#include <cuda_runtime.h>

#include <cmath>
#include <limits>

#include "cuda/cuda_errors.hpp"
#include "cuda/cuda_session.hpp"

namespace mt::detail {

Status CudaSession::enqueue_step(int rows, int rows_per_source, int cache) {
  const int V = config_->target_vocab_size, K = rows_per_source;
  float* logits = dev<float>(plan_.logits);
  MT_CUDA_LAUNCH(transformer_->decode_step(dev<int32_t>(plan_.step_tokens), rows, decoder_state(K, cache),
                                           decoder_buffers(), logits),
                 "decoder step");
  MT_CUDA_LAUNCH(decode_step_end_cuda(logits, size_t(V), rows, config_->eos_id, -std::numeric_limits<float>::infinity(),
                                      step_min_length(), step_positions(), step_cache_lengths(), stream_),
                 "EOS mask");
  MT_CUDA_LAUNCH(log_softmax_f32_cuda(logits, logits, nullptr, rows, V, stream_), "log_softmax");
  if (plan_.suppressed_count > 0) {  // after the log-softmax: they keep their share of the mass, as on the CPU
    MT_CUDA_LAUNCH(mask_columns_f32_cuda(logits, size_t(V), rows, dev<int32_t>(plan_.suppressed),
                                         plan_.suppressed_count, -std::numeric_limits<float>::infinity(), stream_),
                   "suppressed ids");
  }
  if (K == 1) {
    // The next step's tokens stay on the device.
    MT_CUDA_LAUNCH(
        argmax_f32_cuda(logits, rows, V, dev<int32_t>(plan_.step_tokens), dev<float>(plan_.top_values), stream_),
        "argmax");
  } else {
    MT_CUDA_LAUNCH(
        top_k_f32_cuda(logits, rows, V, 2 * K, dev<float>(plan_.top_values), dev<int32_t>(plan_.top_indices), stream_),
        "top_k");
  }
  return {};
}

int CudaSession::padded_sentences(int B) const {
  for (const int bucket : graph_buckets_) {
    if (bucket >= B) return bucket;
  }
  return B;
}

Status CudaSession::launch_step(int rows, int rows_per_source, int cache) {
  const int sentences = rows / rows_per_source;
  for (size_t i = 0; i < graph_buckets_.size(); ++i) {
    if (graph_buckets_[i] != sentences) continue;
    const cudaError_t e = cudaGraphLaunch(graphs_[graph_slot(int(i), rows_per_source, cache)], stream_);
    return e == cudaSuccess ? Status{} : cuda_error(Errc::internal, "launching a decode step's CUDA Graph failed", e);
  }
  return enqueue_step(rows, rows_per_source, cache);
}

Status CudaSession::capture_graphs() {
  for (int b = 1; b < plan_.B; b *= 2) graph_buckets_.push_back(b);
  graph_buckets_.push_back(plan_.B);
  graphs_.assign(graph_slot(0, plan_.K + 1, 0), nullptr);
  // Each shape runs once before it is captured, so that its kernels (cuBLAS
  // picks them by shape) are loaded outside the capture. The session's memory,
  // zeroed by create(), makes that run valid: token 0, position 0, empty caches
  // and sentences. (Clearing the whole block here would also wipe the position
  // encodings create() uploaded: the first thing in it.)
  cudaError_t e = cudaSuccess;
  for (int K = 1; K <= plan_.K; ++K) {
    for (size_t i = 0; i < graph_buckets_.size(); ++i) {
      // Greedy search (K = 1) never swaps cache buffers.
      for (int cache = 0; cache < (K == 1 ? 1 : 2); ++cache) {
        e = cudaMemsetAsync(step_positions(), 0, plan_.step_state_ints * sizeof(int32_t), stream_);
        if (e != cudaSuccess) return cuda_error(Errc::internal, "clearing the decode positions failed", e);
        MT_RETURN_IF_ERROR(enqueue_step(graph_buckets_[i] * K, K, cache));
        // Thread-local: other threads may allocate (other sessions) meanwhile.
        e = cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal);
        if (e != cudaSuccess) return cuda_error(Errc::internal, "cannot capture a CUDA Graph", e);
        const Status enqueued = enqueue_step(graph_buckets_[i] * K, K, cache);
        cudaGraph_t graph = nullptr;
        e = cudaStreamEndCapture(stream_, &graph);  // also when enqueueing failed: the stream must leave capture
        if (!enqueued.ok()) {
          if (graph != nullptr) cudaGraphDestroy(graph);
          return enqueued;
        }
        if (e != cudaSuccess) return cuda_error(Errc::internal, "capturing a decode step's CUDA Graph failed", e);
        cudaGraphExec_t exec = nullptr;
        e = cudaGraphInstantiate(&exec, graph, 0);
        cudaGraphDestroy(graph);
        if (e != cudaSuccess) return cuda_error(Errc::internal, "instantiating a decode step's CUDA Graph failed", e);
        graphs_[graph_slot(int(i), K, cache)] = exec;
        // Its device-side setup now rather than at its first launch in translate().
        e = cudaGraphUpload(exec, stream_);
        if (e != cudaSuccess) return cuda_error(Errc::internal, "uploading a decode step's CUDA Graph failed", e);
      }
    }
  }
  return sync("decode step before its capture");
}

void CudaSession::destroy_graphs() {
  for (CUgraphExec_st* exec : graphs_) {
    if (exec != nullptr) cudaGraphExecDestroy(exec);
  }
  graphs_.clear();
  graph_buckets_.clear();
}

}  // namespace mt::detail
