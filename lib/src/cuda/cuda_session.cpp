// CUDA sessions: device checks, the device memory plan, creation (all
// allocation happens here) and the encoder half of translate().
#include "cuda/cuda_session.hpp"

#include <cublas_api.h>  // CUBLAS_VER_MAJOR, for the error message
#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "support/arena.hpp"
#include "cuda/cuda_errors.hpp"
#include "session/session_impl.hpp"
#include "access.hpp"

namespace mt::detail {

CudaPlan CudaPlan::make(const ModelConfig& cfg, const SessionPlan& host, CudaWeightForm form, bool device_search) {
  CudaPlan p;
  p.B = host.B, p.S = host.S, p.T = host.T, p.K = host.K, p.R = host.R, p.N = host.N;
  p.P = std::max(p.S, p.T);
  const size_t C = size_t(cfg.d_model), F = size_t(cfg.d_ff), V = size_t(cfg.target_vocab_size);
  const size_t L = size_t(cfg.decoder_layers), N = size_t(p.N), R = size_t(p.R), T = size_t(p.T), B = size_t(p.B),
               top = R * 2 * size_t(p.K);
  ArenaPlanner d;
  p.positions = d.reserve<float>(size_t(p.P) * C);
  p.suppressed_count = int(cfg.suppressed_ids.size());
  p.suppressed = d.reserve<int32_t>(cfg.suppressed_ids.size());
  p.src_tokens = d.reserve<int32_t>(N);
  p.src_positions = d.reserve<int32_t>(N);
  p.src_offsets = d.reserve<int32_t>(B);
  p.src_lengths = d.reserve<int32_t>(B);
  p.reserve(d, cfg, N, R, T);
  p.self_cache[0] = d.reserve<float>(ArenaPlanner::product(L, p.self_cache_stride));
  // Greedy search never gathers: one buffer is enough without beams.
  p.self_cache[1] = p.K > 1 ? d.reserve<float>(ArenaPlanner::product(L, p.self_cache_stride)) : p.self_cache[0];
  p.step_tokens = d.reserve<int32_t>(R);
  p.gather_index = d.reserve<int32_t>(R);
  p.top_values = d.reserve<float>(top);
  p.top_indices = d.reserve<int32_t>(top);
  p.step_state_ints = 2 * R + 1;
  p.step_state = d.reserve<int32_t>(p.step_state_ints);
  if (form == CudaWeightForm::int8) {
    // Any layer may be int8: size for the widest. The encoder's and the
    // memory projection's N rows have n <= max(3C, F); the decoder's R
    // rows also the output layer's V. Sums' rows are padded to 4 ints.
    const auto pad4 = [](size_t n) { return (n + 3) / 4 * 4; };
    const size_t rows = std::max(N, R), k = size_t(padded_k_i8(int(std::max(C, F))));
    const size_t encoder_n = pad4(std::max(3 * C, F)), decoder_n = pad4(std::max(std::max(3 * C, F), V));
    p.i8_q = d.reserve<int8_t>(ArenaPlanner::product(rows, k));
    p.i8_scales = d.reserve<float>(rows);
    p.i8_zeros = d.reserve<int32_t>(rows);
    p.i8_acc = d.reserve<int32_t>(std::max(ArenaPlanner::product(N, encoder_n), ArenaPlanner::product(R, decoder_n)));
  }
  if (form == CudaWeightForm::f16) {
    p.f16_rows = d.reserve<uint16_t>(ArenaPlanner::product(std::max(N, R), std::max(C, F)));
  }
  p.device_search = device_search && p.K > 1;
  if (p.device_search) {
    const size_t K = size_t(p.K);
    p.ds_scores = d.reserve<float>(R);
    p.ds_parents = d.reserve<int32_t>(R);
    p.ds_history = d.reserve<int32_t>(R * T);
    p.ds_scratch = d.reserve<int32_t>(R * T);
    p.ds_candidates = d.reserve<Candidate>(B * 2 * K * K);
    p.ds_finished = d.reserve<Finished>(B * K);
    p.ds_finished_tokens = d.reserve<int32_t>(B * K * T);
    p.ds_counts = d.reserve<int>(B);
    p.ds_done = d.reserve<int>(B);
    p.ds_limits = d.reserve<int>(B);
    p.ds_alive = d.reserve<int>(1);
    p.ds_length_scales = d.reserve<float>(T + 1);
  }
  p.device_total = d.size();

  ArenaPlanner h;
  p.up_tokens = h.reserve<int32_t>(N);
  p.up_positions = h.reserve<int32_t>(N);
  p.up_offsets = h.reserve<int32_t>(B);
  p.up_lengths = h.reserve<int32_t>(B);
  p.up_step = h.reserve<int32_t>(R);
  p.up_index = h.reserve<int32_t>(R);
  p.up_state = h.reserve<int32_t>(p.step_state_ints);
  p.down_values = h.reserve<float>(top);
  p.down_indices = h.reserve<int32_t>(top);
  p.ring_tokens = h.reserve<int32_t>(size_t(kGreedyStepsPerSync) * R);
  p.ring_values = h.reserve<float>(size_t(kGreedyStepsPerSync) * R);
  if (p.device_search) {
    p.up_scores = h.reserve<float>(R);
    p.up_parents = h.reserve<int32_t>(R);
    p.up_done = h.reserve<int>(B);
    p.up_limits = h.reserve<int>(B);
    p.up_length_scales = h.reserve<float>(T + 1);
    p.down_alive = h.reserve<int>(1);
    p.down_finished = h.reserve<Finished>(B * size_t(p.K));
    p.down_finished_tokens = h.reserve<int32_t>(B * size_t(p.K) * T);
    p.down_counts = h.reserve<int>(B);
  }
  p.pinned_total = h.size();
  return p;
}

namespace {

// Which GPU to use, or why none can be.
Status check_device(int index) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  // The runtime's "driver version is insufficient" is what a machine without
  // any NVIDIA driver reports too: say both.
  if (e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice) {
    return Status::error(Errc::unsupported,
                         "no CUDA device: no NVIDIA GPU driver is installed, or it is older than this build's CUDA "
                         "needs (%s)",
                         cudaGetErrorString(e));
  }
  if (e != cudaSuccess) return Status::error(Errc::unsupported, "no CUDA device: %s", cudaGetErrorString(e));
  if (count == 0) return Status::error(Errc::unsupported, "no CUDA device: the NVIDIA driver sees no GPU");
  if (index >= count) {
    return Status::error(Errc::invalid_argument, "session option cuda_device = %d: this machine has %d CUDA device%s",
                         index, count, count == 1 ? "" : "s");
  }
  const cudaError_t set = cudaSetDevice(index);
  if (set != cudaSuccess) return cuda_error(Errc::unsupported, "cannot use the CUDA device", set);
  return {};
}

}  // namespace

Expected<std::unique_ptr<CudaSession>> CudaSession::create(const Model& model, const SessionOptions& options,
                                                           const SessionPlan& host) {
  const ModelConfig& cfg = model.config();
  if (cfg.d_model / cfg.heads > kCudaAttentionMaxDh) {
    return Status::error(Errc::unsupported,
                         "CUDA attention supports heads of at most %d dimensions; this model's are %d",
                         kCudaAttentionMaxDh, cfg.d_model / cfg.heads);
  }
  if (2 * options.max_beam_size > kCudaTopKMax) {
    return Status::error(Errc::unsupported,
                         "session option max_beam_size = %d: CUDA sessions support beams of at most %d",
                         options.max_beam_size, kCudaTopKMax / 2);
  }
  MT_RETURN_IF_ERROR(check_device(options.cuda_device));
  // int8 GEMMs where there are int8 weights, else fp16 ones when asked.
  CudaWeightForm asked = CudaWeightForm::f32;
  if (options.cuda_int8_gemm && weights_of(model).any_int8) {
    asked = CudaWeightForm::int8;
  } else if (options.cuda_fp16) {
    asked = CudaWeightForm::f16;
  }
  auto weights = cuda_weights_of(model).get(model, options.cuda_device, asked);
  if (!weights) return weights.status();
  const CudaWeightForm form = weights.value()->form;

  std::unique_ptr<CudaSession> s(new CudaSession);
  s->config_ = &cfg;
  s->device_ = options.cuda_device;
  s->form_ = form;
  s->plan_ = CudaPlan::make(cfg, host, form, options.cuda_device_search);
  const CudaPlan& p = s->plan_;
  if (p.device_total == SIZE_MAX || p.pinned_total == SIZE_MAX) {
    return Status::error(Errc::capacity_exceeded, "the CUDA session's memory for these options does not fit in size_t");
  }
  if (const cudaError_t e = cudaMalloc(&s->device_block_, p.device_total); e != cudaSuccess) {
    s->device_block_ = nullptr;
    return Status::error(Errc::out_of_memory, "cannot allocate %zu bytes of GPU memory for the session: %s",
                         p.device_total, cudaGetErrorString(e));
  }
  if (const cudaError_t e = cudaHostAlloc(&s->pinned_block_, p.pinned_total, cudaHostAllocDefault); e != cudaSuccess) {
    s->pinned_block_ = nullptr;
    return cuda_error(Errc::out_of_memory, "cannot allocate pinned host memory for the session", e);
  }
  cudaStream_t stream = nullptr;
  if (const cudaError_t e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking); e != cudaSuccess) {
    return cuda_error(Errc::internal, "cannot create a CUDA stream", e);
  }
  s->stream_ = stream;
  s->cublas_ = cublas_create();
  if (s->cublas_ == nullptr) {
    return Status::error(Errc::unsupported, "cannot create a cuBLAS handle (is libcublas.so.%d on the library path?)",
                         CUBLAS_VER_MAJOR);
  }

  // The session's memory starts zeroed (capture_graphs() runs each step once
  // on it: token 0, position 0, empty caches and sentences). Then the position
  // encodings, as on the CPU and uploaded once, on the same stream so
  // that they land after the clearing; nothing may clear the block after this.
  if (const cudaError_t e = cudaMemsetAsync(s->device_block_, 0, p.device_total, s->stream_); e != cudaSuccess) {
    return cuda_error(Errc::internal, "clearing the session's GPU memory failed", e);
  }
  // The model's stored rows (P <= max_positions: the session's limits), or the sinusoid.
  std::vector<float> positions(size_t(p.P) * size_t(cfg.d_model));
  if (const float* stored = weights_of(model).position_table; stored != nullptr) {
    std::copy(stored, stored + positions.size(), positions.begin());
  } else {
    fill_positions(positions.data(), p.P, cfg.d_model);
  }
  cudaError_t e = cudaMemcpyAsync(s->dev<float>(p.positions), positions.data(), positions.size() * sizeof(float),
                                  cudaMemcpyHostToDevice, s->stream_);
  if (e == cudaSuccess && p.suppressed_count > 0) {  // the ids the model never emits, likewise
    e = cudaMemcpyAsync(s->dev<int32_t>(p.suppressed), cfg.suppressed_ids.data(),
                        cfg.suppressed_ids.size() * sizeof(int32_t), cudaMemcpyHostToDevice, s->stream_);
  }
  if (e == cudaSuccess) e = cudaStreamSynchronize(s->stream_);  // `positions` goes out of scope
  if (e != cudaSuccess) return cuda_error(Errc::internal, "copying the position encodings to the GPU failed", e);
  const GemmMath math = options.allow_tf32 ? GemmMath::tf32 : GemmMath::f32;
  CudaGemmScratch scratch;
  if (form == CudaWeightForm::int8) {
    scratch.i8.q = s->dev<int8_t>(p.i8_q);
    scratch.i8.scales = s->dev<float>(p.i8_scales);
    scratch.i8.zeros = s->dev<int32_t>(p.i8_zeros);
    scratch.i8.acc = s->dev<int32_t>(p.i8_acc);
  } else if (form == CudaWeightForm::f16) {
    scratch.f16 = s->dev<uint16_t>(p.f16_rows);
  }
  s->transformer_.emplace(cfg, *weights.value(), s->cublas_, s->stream_, math, s->dev<float>(p.positions), scratch);
  if (options.cuda_graphs) MT_RETURN_IF_ERROR(s->capture_graphs());
  return s;
}

CudaSession::~CudaSession() {
  cudaSetDevice(device_);
  if (stream_ != nullptr) cudaStreamSynchronize(stream_);
  destroy_graphs();
  if (cublas_ != nullptr) cublas_destroy(cublas_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
  if (pinned_block_ != nullptr) cudaFreeHost(pinned_block_);
  if (device_block_ != nullptr) cudaFree(device_block_);
}

Status CudaSession::sync(const char* what) const {
  const cudaError_t e = cudaStreamSynchronize(stream_);
  if (e != cudaSuccess)
    return Status::error(Errc::internal, "CUDA %s failed on the device: %s", what, cudaGetErrorString(e));
  return {};
}

// The same for every batch (a captured step bakes it in): the memory's rows
// per sentence come from the device arrays, padded past the batch with empty
// sentences; the cross-attention needs no longest length with lengths given.
CudaDecoderState CudaSession::decoder_state(int rows_per_source, int cache) const {
  const CudaSources sources{dev<int32_t>(plan_.src_tokens),
                            dev<int32_t>(plan_.src_positions),
                            dev<int32_t>(plan_.src_offsets),
                            dev<int32_t>(plan_.src_lengths),
                            plan_.B,
                            plan_.N,
                            plan_.S};
  return {dev<float>(plan_.self_cache[cache]),
          plan_.self_cache_stride,
          plan_.T,
          dev<float>(plan_.cross_kv),
          plan_.cross_kv_stride,
          sources,
          rows_per_source,
          step_positions(),
          step_cache_lengths()};
}

Status CudaSession::upload_positions(int t, int min_length) {
  int32_t* state = pinned<int32_t>(plan_.up_state);
  std::fill(state, state + plan_.R, t);
  std::fill(state + plan_.R, state + 2 * plan_.R, t + 1);
  state[2 * plan_.R] = min_length;
  const cudaError_t e = cudaMemcpyAsync(step_positions(), state, plan_.step_state_ints * sizeof(int32_t),
                                        cudaMemcpyHostToDevice, stream_);
  return e == cudaSuccess ? Status{} : cuda_error(Errc::internal, "copying positions to the GPU failed", e);
}

DecoderBuffers CudaSession::decoder_buffers() const { return plan_.decoder_buffers(block()); }

Status CudaSession::encode(Session::Impl& s, int B) {
  cudaSetDevice(device_);
  // The packed sources as the CPU session has them, plus each sentence's
  // length and each token's position, go up in one batch of copies.
  const int* offsets = s.at<int>(s.plan.source_offsets);
  const int N = offsets[B];
  int32_t* tokens = pinned<int32_t>(plan_.up_tokens);
  int32_t* positions = pinned<int32_t>(plan_.up_positions);
  int32_t* starts = pinned<int32_t>(plan_.up_offsets);
  int32_t* lengths = pinned<int32_t>(plan_.up_lengths);
  std::copy(s.at<int32_t>(s.plan.source_tokens), s.at<int32_t>(s.plan.source_tokens) + N, tokens);
  int max_length = 0;
  for (int b = 0; b < B; ++b) {
    starts[b] = offsets[b];
    lengths[b] = offsets[b + 1] - offsets[b];
    max_length = std::max(max_length, lengths[b]);
    for (int i = 0; i < lengths[b]; ++i) positions[offsets[b] + i] = i;
  }
  // Empty sentences up to the session's batch: padded decoder rows attend to nothing.
  std::fill(starts + B, starts + plan_.B, N);
  std::fill(lengths + B, lengths + plan_.B, 0);
  const auto up = [&](size_t device, size_t host, size_t bytes) {
    return cudaMemcpyAsync(dev<std::byte>(device), pinned<std::byte>(host), bytes, cudaMemcpyHostToDevice, stream_);
  };
  cudaError_t e = up(plan_.src_tokens, plan_.up_tokens, size_t(N) * sizeof(int32_t));
  if (e == cudaSuccess) e = up(plan_.src_positions, plan_.up_positions, size_t(N) * sizeof(int32_t));
  if (e == cudaSuccess) e = up(plan_.src_offsets, plan_.up_offsets, size_t(plan_.B) * sizeof(int32_t));
  if (e == cudaSuccess) e = up(plan_.src_lengths, plan_.up_lengths, size_t(plan_.B) * sizeof(int32_t));
  if (e != cudaSuccess) return cuda_error(Errc::internal, "copying the sources to the GPU failed", e);

  sources_ = {dev<int32_t>(plan_.src_tokens),
              dev<int32_t>(plan_.src_positions),
              dev<int32_t>(plan_.src_offsets),
              dev<int32_t>(plan_.src_lengths),
              B,
              N,
              max_length};
  const EncoderBuffers buffers = plan_.encoder_buffers(block());
  MT_CUDA_LAUNCH(transformer_->encode(sources_, buffers), "encoder");
  MT_CUDA_LAUNCH(transformer_->project_memory(buffers.x, N, dev<float>(plan_.cross_kv), plan_.cross_kv_stride),
                 "memory projection");
  cache_ = 0;
  return {};
}

Status CudaSession::step_logits(const int32_t* tokens, int R, int t, int rows_per_source, float* logits) {
  cudaSetDevice(device_);
  std::copy(tokens, tokens + R, pinned<int32_t>(plan_.up_step));
  if (const cudaError_t e = cudaMemcpyAsync(dev<int32_t>(plan_.step_tokens), pinned<int32_t>(plan_.up_step),
                                            size_t(R) * sizeof(int32_t), cudaMemcpyHostToDevice, stream_);
      e != cudaSuccess) {
    return cuda_error(Errc::internal, "copying tokens to the GPU failed", e);
  }
  MT_RETURN_IF_ERROR(upload_positions(t, 0));
  MT_CUDA_LAUNCH(transformer_->decode_step(dev<int32_t>(plan_.step_tokens), R, decoder_state(rows_per_source, 0),
                                           decoder_buffers(), dev<float>(plan_.logits)),
                 "decoder step");
  const size_t bytes = size_t(R) * size_t(config_->target_vocab_size) * sizeof(float);
  if (const cudaError_t e = cudaMemcpyAsync(logits, dev<float>(plan_.logits), bytes, cudaMemcpyDeviceToHost, stream_);
      e != cudaSuccess) {
    return cuda_error(Errc::internal, "copying logits from the GPU failed", e);
  }
  return sync("decoder step");
}

Status CudaSession::run(Session::Impl& s, int B, const TranslateOptions& options) {
  MT_RETURN_IF_ERROR(encode(s, B));
  const SearchLimits limits = search_limits(options, s.length_offset);
  if (options.beam_size == 1) return greedy_search(s, B, limits);
  // A forced prefix is the host bookkeeping's to apply (beam_search).
  const bool on_device = plan_.device_search && limits.forced_prefix.empty();
  return on_device ? beam_search_on_device(s, B, limits) : beam_search(s, B, limits);
}

}  // namespace mt::detail
