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
#include <vector>

#include "cuda/cuda_transformer.hpp"
#include "cuda/device_search.hpp"
#include "mt/session.hpp"

struct CUgraphExec_st;  // cudaGraphExec_t is CUgraphExec_st*

namespace mt::detail {

struct SessionPlan;
struct SearchLimits;

// Greedy search copies each step's picks into a ring of this many slots and
// waits for the GPU once per ring: the host reads a step a few steps late, and
// after the last sentence ends at most this many - 1 steps are wasted.
inline constexpr int kGreedyStepsPerSync = 4;
// Beam search with its bookkeeping on the device waits for the count of live
// sentences every this many steps (up to this many - 1 wasted at the end).
// Set without a GPU at hand: to be tuned against the per-step wait.
inline constexpr int kBeamStepsPerSync = 2;

// Offsets into the session's device block (CudaPlan::device) and its pinned
// host block (CudaPlan::pinned).
struct CudaPlan : TransformerBufferPlan {
  int B = 0, S = 0, T = 0, K = 0, R = 0, N = 0, P = 0;
  // Device.
  size_t positions = 0, src_tokens = 0, src_positions = 0, src_offsets = 0, src_lengths = 0;
  // The model's suppressed ids [suppressed_count], masked after every step's log-softmax.
  size_t suppressed = 0;
  int suppressed_count = 0;
  size_t self_cache[2] = {0, 0};  // double-buffered: beams gather from one into the other
  size_t step_tokens = 0, gather_index = 0, top_values = 0, top_indices = 0;
  // int8 weights: the int8 layers' quantized rows [rows, max padded k],
  // their scales and zeros [rows], and the GEMMs' int32 sums (largest
  // rows x padded n of any int8 layer). Zero-sized otherwise.
  size_t i8_q = 0, i8_scales = 0, i8_zeros = 0, i8_acc = 0;
  // fp16 weights: a layer's input rows in half [rows, max k]. Zero-sized otherwise.
  size_t f16_rows = 0;
  // Beam bookkeeping on the device (cuda_device_search): DeviceBeams' arrays.
  bool device_search = false;
  size_t ds_scores = 0, ds_parents = 0, ds_history = 0, ds_scratch = 0, ds_candidates = 0, ds_finished = 0,
         ds_finished_tokens = 0, ds_counts = 0, ds_done = 0, ds_limits = 0, ds_alive = 0, ds_length_scales = 0;
  // Decode positions on the device: [R] positions, [R] cache lengths, then
  // the minimum length (1); step_state_ints of them, mirrored by up_state.
  size_t step_state = 0, step_state_ints = 0;
  size_t device_total = 0;
  // Pinned host staging: what goes up before a step and comes down after.
  size_t up_tokens = 0, up_positions = 0, up_offsets = 0, up_lengths = 0, up_step = 0, up_index = 0;
  size_t up_state = 0;
  size_t down_values = 0, down_indices = 0;
  size_t ring_tokens = 0, ring_values = 0;  // greedy: kGreedyStepsPerSync x [R]
  // Device search: its starting state up, its live count and results down.
  size_t up_scores = 0, up_parents = 0, up_done = 0, up_limits = 0, up_length_scales = 0;
  size_t down_alive = 0, down_finished = 0, down_finished_tokens = 0, down_counts = 0;
  size_t pinned_total = 0;

  static CudaPlan make(const ModelConfig& config, const SessionPlan& host, CudaWeightForm form, bool device_search);
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
  CudaWeightForm weight_form() const { return form_; }

  // For tests: encode the loaded batch, then one decoder step of R rows
  // (rows_per_source per sentence) at position t with host `tokens`; logits
  // [R, V] copied to the host.
  Status encode(Session::Impl& session, int B);
  Status step_logits(const int32_t* tokens, int R, int t, int rows_per_source, float* logits);

 private:
  CudaSession() = default;
  template <class T>
  T* dev(size_t offset) const {
    return reinterpret_cast<T*>(block() + offset);
  }
  std::byte* block() const { return static_cast<std::byte*>(device_block_); }
  template <class T>
  T* pinned(size_t offset) const {
    return reinterpret_cast<T*>(static_cast<std::byte*>(pinned_block_) + offset);
  }

  CudaDecoderState decoder_state(int rows_per_source, int cache) const;
  DecoderBuffers decoder_buffers() const;
  int32_t* step_positions() const { return dev<int32_t>(plan_.step_state); }
  int32_t* step_cache_lengths() const { return step_positions() + plan_.R; }
  int32_t* step_min_length() const { return step_positions() + 2 * plan_.R; }
  // Every row at position t (cache length t + 1), EOS masked before min_length.
  Status upload_positions(int t, int min_length);

  // Decode steps (cuda_graphs.cpp). A search runs `rows` decoder rows,
  // rows_per_source per sentence, reading the self-attention cache `cache`:
  // the decoder, the EOS mask, the log-softmax, and the picks (argmax into
  // step_tokens and top_values for greedy search, top_k for beams).
  Status enqueue_step(int rows, int rows_per_source, int cache);
  // The same, replayed from a graph captured at creation when there is one.
  Status launch_step(int rows, int rows_per_source, int cache);
  // Sentences a search of B runs: B, or with graphs the bucket holding B.
  int padded_sentences(int B) const;
  Status capture_graphs();
  void destroy_graphs();
  // Waits for the stream; a fault there becomes an error naming `what`.
  Status sync(const char* what) const;
  Status greedy_search(Session::Impl& session, int B, const SearchLimits& limits);
  Status beam_search(Session::Impl& session, int B, const SearchLimits& limits);
  // The same with the bookkeeping on the device (cuda/device_search.cu).
  Status beam_search_on_device(Session::Impl& session, int B, const SearchLimits& limits);
  DeviceBeams device_beams(int K) const;

  const ModelConfig* config_ = nullptr;
  int device_ = 0;
  CudaWeightForm form_ = CudaWeightForm::f32;
  CudaPlan plan_;
  void* device_block_ = nullptr;
  void* pinned_block_ = nullptr;
  CudaStream stream_ = nullptr;
  CublasContext* cublas_ = nullptr;
  std::optional<CudaTransformer> transformer_;
  CudaSources sources_;  // the batch of the last encode
  int cache_ = 0;        // which self_cache buffer holds the live rows
  // Captured decode steps: graph_buckets_ holds the sentence counts they run
  // (ascending, the last plan_.B); graphs_[graph_slot(...)] the executables.
  std::vector<int> graph_buckets_;
  std::vector<CUgraphExec_st*> graphs_;
  size_t graph_slot(int bucket_index, int rows_per_source, int cache) const {
    return (size_t(rows_per_source - 1) * graph_buckets_.size() + size_t(bucket_index)) * 2 + size_t(cache);
  }
};

}  // namespace mt::detail
