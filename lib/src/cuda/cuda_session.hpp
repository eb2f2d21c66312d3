// The GPU side of a Session created with Device::cuda: its device memory
// (planned once like SessionPlan, one cudaMalloc), pinned staging buffers,
// stream and cuBLAS handle, and the searches that drive the device forward
// pass. The host side (sources, beam bookkeeping, results, text) stays in
// the Session's own arena and code. Without CUDA in the build, create()
// says so (cuda_unavailable.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

#include "cuda/cuda_transformer.hpp"
#include "mt/session.hpp"

namespace mt::detail {

struct SessionPlan;
struct SearchLimits;

// Offsets into the session's device block (CudaPlan::device) and its pinned
// host block (CudaPlan::pinned).
struct CudaPlan {
  int B = 0, S = 0, T = 0, K = 0, R = 0, N = 0, P = 0;
  // Device.
  size_t positions = 0, src_tokens = 0, src_positions = 0, src_offsets = 0, src_lengths = 0;
  size_t enc_x = 0, enc_y = 0, enc_qkv = 0, enc_attn = 0, enc_hidden = 0;
  size_t cross_kv = 0, cross_kv_stride = 0;
  size_t dec_x = 0, dec_y = 0, dec_qkv = 0, dec_q = 0, dec_attn = 0, dec_hidden = 0, logits = 0;
  size_t self_cache[2] = {0, 0}, self_cache_stride = 0;  // double-buffered: beams gather from one into the other
  size_t step_tokens = 0, gather_index = 0, top_values = 0, top_indices = 0;
  size_t device_total = 0;
  // Pinned host staging: what goes up before a step and comes down after.
  size_t up_tokens = 0, up_positions = 0, up_offsets = 0, up_lengths = 0, up_step = 0, up_index = 0;
  size_t down_values = 0, down_indices = 0;
  size_t pinned_total = 0;

  static CudaPlan make(const ModelConfig& config, const SessionPlan& host);
};

class CudaSession {
 public:
  // Checks the device, uploads the model's weights if this is its first
  // session on that GPU, and allocates everything the session will use.
  static Expected<std::unique_ptr<CudaSession>> create(const Model& model, const SessionOptions& options,
                                                       const SessionPlan& host);
  ~CudaSession();
  CudaSession(const CudaSession&) = delete;
  CudaSession& operator=(const CudaSession&) = delete;

  // Encodes the sources loaded into the session's arena (Session::Impl::
  // load_sources) and searches: the session's hypotheses and counts filled.
  Status run(Session::Impl& session, int B, const TranslateOptions& options);

  size_t device_bytes() const { return plan_.device_total; }

  // For tests: encode the loaded batch, then one decoder step of R rows
  // (rows_per_source per sentence) at position t with host `tokens`; logits
  // [R, V] copied to the host.
  Status encode(Session::Impl& session, int B);
  Status step_logits(const int32_t* tokens, int R, int t, int rows_per_source, float* logits);

 private:
  CudaSession() = default;
  template <class T>
  T* dev(size_t offset) const { return reinterpret_cast<T*>(static_cast<std::byte*>(device_block_) + offset); }
  template <class T>
  T* pinned(size_t offset) const { return reinterpret_cast<T*>(static_cast<std::byte*>(pinned_block_) + offset); }

  CudaDecoderState decoder_state(int rows_per_source) const;
  DecoderBuffers decoder_buffers() const;
  // Waits for the stream; a fault there becomes an error naming `what`.
  Status sync(const char* what) const;
  Status greedy_search(Session::Impl& session, int B, const SearchLimits& limits);
  Status beam_search(Session::Impl& session, int B, const SearchLimits& limits);

  const ModelConfig* config_ = nullptr;
  int device_ = 0;
  CudaPlan plan_;
  void* device_block_ = nullptr;
  void* pinned_block_ = nullptr;
  CudaStream stream_ = nullptr;
  CublasContext* cublas_ = nullptr;
  std::optional<CudaTransformer> transformer_;
  CudaSources sources_;  // the batch of the last encode
  int cache_ = 0;        // which self_cache buffer holds the live rows
};

}  // namespace mt::detail
