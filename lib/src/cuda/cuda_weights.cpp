// Uploading a model's weights to a GPU: the packed panels of the file are
// unpacked to row-major, int8 tensors dequantized to fp32 (W = scale[n] * q),
// all into one device allocation made once per model and device.
#include "cuda/cuda_weights.hpp"

#include <cuda_runtime.h>

#include <map>

#include "model_weights.hpp"
#include "mt/kernels.h"

namespace mt::detail {
namespace {

// Places tensors in one block. Run twice over the same tensors: the first
// pass (no image) only sizes the block; the second fills a host image of it
// and returns device addresses. A tensor reached twice (shared or tied
// embeddings) is placed once.
class BlockLayout {
 public:
  BlockLayout() = default;
  BlockLayout(float* image, float* device) : image_(image), device_(device) {}

  template <class Fill>
  const float* place(const void* key, size_t floats, Fill fill) {
    if (key == nullptr) return nullptr;
    auto [it, added] = offsets_.try_emplace(key, size_);
    if (added) {
      size_ += (floats + 63) / 64 * 64;  // 256-byte aligned tensors
      if (image_ != nullptr) fill(image_ + it->second);
    }
    return device_ != nullptr ? device_ + it->second : nullptr;
  }
  size_t floats() const { return size_; }

 private:
  float* image_ = nullptr;
  float* device_ = nullptr;
  std::map<const void*, size_t> offsets_;
  size_t size_ = 0;
};

// W [n, k] row-major from the file's int8 panels (packed_k4n16) with a scale per row.
void dequantize_i8(const int8_t* packed, const float* scales, int n, int k, float* out) {
  for (int r = 0; r < n; ++r)
    for (int c = 0; c < k; ++c) out[size_t(r) * k + c] = float(packed_at_i8(packed, k, r, c)) * scales[r];
}

const float* place_vector(BlockLayout& layout, const float* host, int n) {
  return layout.place(host, size_t(n), [=](float* out) { std::copy(host, host + n, out); });
}

CudaLinear place_linear(BlockLayout& layout, const Linear& l) {
  CudaLinear d;
  d.n = l.n, d.k = l.k;
  const size_t floats = size_t(l.n) * size_t(l.k);
  if (!l.is_int8()) {
    d.weight = layout.place(l.weight, floats, [&](float* out) { unpack_weights_f32(l.weight, l.n, l.k, out); });
    d.bias = place_vector(layout, l.bias, l.n);
    return d;
  }
  d.weight = layout.place(l.weight_i8, floats,
                          [&](float* out) { dequantize_i8(l.weight_i8, l.scales, l.n, l.k, out); });
  if (l.input_scale <= 0.0f) {
    d.bias = place_vector(layout, l.bias, l.n);
    return d;
  }
  // A calibrated layer's file bias has its zero-point compensation,
  // zero * scale * w_scale[n] * sum_k q[n, k], taken out (quantize/quantizer.cpp);
  // fp32 inputs need the true bias back.
  d.bias = layout.place(l.bias, size_t(l.n), [&](float* out) {
    for (int r = 0; r < l.n; ++r) {
      int64_t sum = 0;
      for (int c = 0; c < l.k; ++c) sum += packed_at_i8(l.weight_i8, l.k, r, c);
      const double compensation = double(l.input_zero) * double(l.input_scale) * double(l.scales[r]) * double(sum);
      out[r] = float(double(l.bias[r]) + compensation);
    }
  });
  return d;
}

const float* place_embedding(BlockLayout& layout, const Embedding& e, int V, int C) {
  const size_t floats = size_t(V) * size_t(C);
  if (e.i8 != nullptr) {
    return layout.place(e.i8, floats, [&](float* out) { dequantize_i8(e.i8, e.scales, V, C, out); });
  }
  return layout.place(e.f32, floats, [&](float* out) { unpack_weights_f32(e.f32, V, C, out); });
}

CudaNorm place_norm(BlockLayout& layout, const Norm& n, int C) {
  return {place_vector(layout, n.gamma, C), place_vector(layout, n.beta, C)};
}

// Every tensor of the model through `layout`, in a fixed order.
void place_model(BlockLayout& layout, const ModelConfig& cfg, const ModelWeights& w, CudaModelWeights& d) {
  const int C = cfg.d_model;
  d.target_embedding = place_embedding(layout, w.target_embedding, cfg.target_vocab_size, C);
  d.source_embedding = place_embedding(layout, w.source_embedding, cfg.source_vocab_size, C);
  d.encoder.clear();
  for (const EncoderLayerWeights& l : w.encoder) {
    d.encoder.push_back({place_linear(layout, l.qkv), place_linear(layout, l.out), place_linear(layout, l.ffn_0),
                         place_linear(layout, l.ffn_1), place_norm(layout, l.attention_norm, C),
                         place_norm(layout, l.ffn_norm, C)});
  }
  d.decoder.clear();
  for (const DecoderLayerWeights& l : w.decoder) {
    d.decoder.push_back({place_linear(layout, l.qkv), place_linear(layout, l.self_out),
                         place_linear(layout, l.cross_q), place_linear(layout, l.cross_kv),
                         place_linear(layout, l.cross_out), place_linear(layout, l.ffn_0),
                         place_linear(layout, l.ffn_1), place_norm(layout, l.self_norm, C),
                         place_norm(layout, l.cross_norm, C), place_norm(layout, l.ffn_norm, C)});
  }
  d.output = place_linear(layout, w.output);
  d.encoder_norm = place_norm(layout, w.encoder_norm, C);
  d.decoder_norm = place_norm(layout, w.decoder_norm, C);
}

Expected<std::unique_ptr<CudaModelWeights>> upload(const Model& model, int device) {
  auto d = std::make_unique<CudaModelWeights>();
  d->device = device;
  BlockLayout sizing;
  place_model(sizing, model.config(), model.weights(), *d);
  d->bytes = sizing.floats() * sizeof(float);
  const cudaError_t allocated = cudaMalloc(&d->block, d->bytes);
  if (allocated != cudaSuccess) {
    return Status::error(Errc::out_of_memory, "cannot allocate %zu bytes of GPU memory for the weights: %s",
                         d->bytes, cudaGetErrorString(allocated));
  }
  std::vector<float> image(sizing.floats());
  BlockLayout filling(image.data(), static_cast<float*>(d->block));
  place_model(filling, model.config(), model.weights(), *d);
  const cudaError_t copied = cudaMemcpy(d->block, image.data(), d->bytes, cudaMemcpyHostToDevice);
  if (copied != cudaSuccess) {
    cudaFree(d->block);
    return Status::error(Errc::internal, "copying the weights to the GPU failed: %s", cudaGetErrorString(copied));
  }
  return d;
}

}  // namespace

CudaWeightCache::~CudaWeightCache() {
  if (copies_.empty()) return;  // never touch CUDA for a model only CPU sessions used
  int current = 0;
  const bool restore = cudaGetDevice(&current) == cudaSuccess;
  for (const auto& copy : copies_) {
    if (cudaSetDevice(copy->device) == cudaSuccess) cudaFree(copy->block);
  }
  if (restore) cudaSetDevice(current);
}

Expected<const CudaModelWeights*> CudaWeightCache::get(const Model& model, int device) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& copy : copies_) {
    if (copy->device == device) return copy.get();
  }
  auto uploaded = upload(model, device);
  if (!uploaded) return uploaded.status();
  copies_.push_back(std::move(uploaded.value()));
  return copies_.back().get();
}

}  // namespace mt::detail
