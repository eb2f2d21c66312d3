// Uploading a model's weights to a GPU: the packed panels of the file are
// unpacked to row-major, int8 tensors kept int8 (with their row sums) or
// dequantized to fp32 (W = scale[n] * q), or every weight rounded to half,
// all into one device allocation made once per model, device and form.
#include "cuda/cuda_weights.hpp"

#include <cuda_runtime.h>

#include <cstring>
#include <map>
#include <tuple>

#include "model/model_weights.hpp"
#include "mt/half.h"
#include "mt/kernels.h"
#include "access.hpp"

namespace mt::detail {
namespace {

// What is placed from a file tensor: the same tensor may go up in two shapes
// (an int8 embedding is also the tied output layer, whose rows are padded).
enum class Shape : uint8_t {
  as_is,
  f32_rows,
  f32_dequantized,
  f16_rows,
  f16_dequantized,
  i8_rows,
  row_sums,
  bias_restored
};

// Places tensors in one block. Run twice over the same tensors: the first
// pass (no image) only sizes the block; the second fills a host image of it
// and returns device addresses. A tensor reached twice in the same shape
// (shared or tied embeddings) is placed once.
class BlockLayout {
 public:
  BlockLayout() = default;
  BlockLayout(std::byte* image, std::byte* device) : image_(image), device_(device) {}

  template <class T, class Fill>
  const T* place(const void* key, Shape shape, size_t row_length, size_t count, Fill fill) {
    if (key == nullptr) return nullptr;
    auto [it, added] = offsets_.try_emplace(std::make_tuple(key, shape, row_length), size_);
    if (added) {
      size_ += (count * sizeof(T) + 255) / 256 * 256;  // 256-byte aligned tensors
      if (image_ != nullptr) fill(reinterpret_cast<T*>(image_ + it->second));
    }
    return device_ != nullptr ? reinterpret_cast<const T*>(device_ + it->second) : nullptr;
  }
  size_t bytes() const { return size_; }

 private:
  std::byte* image_ = nullptr;
  std::byte* device_ = nullptr;
  std::map<std::tuple<const void*, Shape, size_t>, size_t> offsets_;
  size_t size_ = 0;
};

// W [n, k] row-major from the file's int8 panels (packed_k4n16) with a scale per row.
void dequantize_i8(const int8_t* packed, const float* scales, int n, int k, float* out) {
  for (int r = 0; r < n; ++r)
    for (int c = 0; c < k; ++c) out[size_t(r) * k + c] = float(packed_at_i8(packed, k, r, c)) * scales[r];
}

// W [n, k] as padded_rows_i8(n) int8 rows of `ld` bytes from the file's
// panels, the padding zero.
void unpack_i8(const int8_t* packed, int n, int k, size_t ld, int8_t* out) {
  std::memset(out, 0, size_t(padded_rows_i8(n)) * ld);
  for (int r = 0; r < n; ++r) {
    for (int c = 0; c < k; ++c) out[size_t(r) * ld + c] = packed_at_i8(packed, k, r, c);
  }
}

// W [n, k] row-major in half, from the file's fp32 panels or int8 ones.
void unpack_f16(const float* packed, int n, int k, uint16_t* out) {
  for (int r = 0; r < n; ++r)
    for (int c = 0; c < k; ++c) out[size_t(r) * k + c] = f32_to_f16_bits(packed_at(packed, k, r, c));
}

void dequantize_i8_f16(const int8_t* packed, const float* scales, int n, int k, uint16_t* out) {
  for (int r = 0; r < n; ++r)
    for (int c = 0; c < k; ++c)
      out[size_t(r) * k + c] = f32_to_f16_bits(float(packed_at_i8(packed, k, r, c)) * scales[r]);
}

int32_t row_sum_i8(const int8_t* packed, int k, int r) {
  int32_t sum = 0;
  for (int c = 0; c < k; ++c) sum += packed_at_i8(packed, k, r, c);
  return sum;
}

const float* place_vector(BlockLayout& layout, const float* host, int n) {
  return layout.place<float>(host, Shape::as_is, 0, size_t(n), [=](float* out) { std::copy(host, host + n, out); });
}

// An int8 layer kept int8: rows padded for cuBLAS, row sums for the
// zero-point correction, the file's scales and bias as they are.
CudaLinear place_linear_i8(BlockLayout& layout, const Linear& l) {
  CudaLinear d;
  d.n = l.n, d.k = l.k;
  const size_t ld = size_t(padded_k_i8(l.k));
  d.i8.q = layout.place<int8_t>(l.weight_i8, Shape::i8_rows, ld, size_t(padded_rows_i8(l.n)) * ld,
                                [&](int8_t* out) { unpack_i8(l.weight_i8, l.n, l.k, ld, out); });
  d.i8.ld = ld;
  d.i8.row_sums = layout.place<int32_t>(l.weight_i8, Shape::row_sums, 0, size_t(l.n), [&](int32_t* out) {
    for (int r = 0; r < l.n; ++r) out[r] = row_sum_i8(l.weight_i8, l.k, r);
  });
  d.i8.scales = place_vector(layout, l.scales, l.n);
  d.i8.input_scale = l.input_scale;
  d.i8.input_zero = l.input_zero;
  d.bias = place_vector(layout, l.bias, l.n);
  return d;
}

CudaLinear place_linear(BlockLayout& layout, const Linear& l, CudaWeightForm form) {
  if (l.is_int8() && form == CudaWeightForm::int8) return place_linear_i8(layout, l);
  CudaLinear d;
  d.n = l.n, d.k = l.k;
  const size_t count = size_t(l.n) * size_t(l.k);
  const bool half = form == CudaWeightForm::f16;
  if (!l.is_int8()) {
    if (half) {
      d.f16 = layout.place<uint16_t>(l.weight, Shape::f16_rows, 0, count,
                                     [&](uint16_t* out) { unpack_f16(l.weight, l.n, l.k, out); });
    } else {
      d.weight = layout.place<float>(l.weight, Shape::f32_rows, 0, count,
                                     [&](float* out) { unpack_weights_f32(l.weight, l.n, l.k, out); });
    }
    d.bias = place_vector(layout, l.bias, l.n);
    return d;
  }
  if (half) {
    d.f16 = layout.place<uint16_t>(l.weight_i8, Shape::f16_dequantized, 0, count,
                                   [&](uint16_t* out) { dequantize_i8_f16(l.weight_i8, l.scales, l.n, l.k, out); });
  } else {
    d.weight = layout.place<float>(l.weight_i8, Shape::f32_dequantized, 0, count,
                                   [&](float* out) { dequantize_i8(l.weight_i8, l.scales, l.n, l.k, out); });
  }
  if (l.input_scale <= 0.0f) {
    d.bias = place_vector(layout, l.bias, l.n);
    return d;
  }
  // A calibrated layer's file bias has its zero-point compensation,
  // zero * scale * w_scale[n] * sum_k q[n, k], taken out (quantize/quantizer.cpp);
  // fp32 and fp16 inputs need the true bias back.
  d.bias = layout.place<float>(l.bias, Shape::bias_restored, 0, size_t(l.n), [&](float* out) {
    for (int r = 0; r < l.n; ++r) {
      const int64_t sum = row_sum_i8(l.weight_i8, l.k, r);
      const double compensation = double(l.input_zero) * double(l.input_scale) * double(l.scales[r]) * double(sum);
      out[r] = float(double(l.bias[r]) + compensation);
    }
  });
  return d;
}

CudaEmbedding place_embedding(BlockLayout& layout, const Embedding& e, int V, int C, CudaWeightForm form) {
  const size_t count = size_t(V) * size_t(C);
  CudaEmbedding d;
  if (form == CudaWeightForm::f16) {
    // The same shapes and bytes as the tied output layer's weights.
    if (e.i8 == nullptr) {
      d.f16 = layout.place<uint16_t>(e.f32, Shape::f16_rows, 0, count,
                                     [&](uint16_t* out) { unpack_f16(e.f32, V, C, out); });
    } else {
      d.f16 = layout.place<uint16_t>(e.i8, Shape::f16_dequantized, 0, count,
                                     [&](uint16_t* out) { dequantize_i8_f16(e.i8, e.scales, V, C, out); });
    }
  } else if (e.i8 == nullptr) {
    d.f32 = layout.place<float>(e.f32, Shape::f32_rows, 0, count,
                                [&](float* out) { unpack_weights_f32(e.f32, V, C, out); });
  } else if (form == CudaWeightForm::int8) {
    // Rows of C bytes, padded as an int8 layer's: the same bytes as the tied
    // output layer's when C is a multiple of 4.
    d.i8 = layout.place<int8_t>(e.i8, Shape::i8_rows, size_t(C), size_t(padded_rows_i8(V)) * size_t(C),
                                [&](int8_t* out) { unpack_i8(e.i8, V, C, size_t(C), out); });
    d.scales = place_vector(layout, e.scales, V);
  } else {
    d.f32 = layout.place<float>(e.i8, Shape::f32_dequantized, 0, count,
                                [&](float* out) { dequantize_i8(e.i8, e.scales, V, C, out); });
  }
  return d;
}

CudaNorm place_norm(BlockLayout& layout, const Norm& n, int C) {
  return {place_vector(layout, n.gamma, C), place_vector(layout, n.beta, C)};
}

// Every tensor of the model through `layout`, in a fixed order.
void place_model(BlockLayout& layout, const ModelConfig& cfg, const ModelWeights& w, CudaModelWeights& d) {
  const int C = cfg.d_model;
  const CudaWeightForm form = d.form;
  d.target_embedding = place_embedding(layout, w.target_embedding, cfg.target_vocab_size, C, form);
  d.source_embedding = place_embedding(layout, w.source_embedding, cfg.source_vocab_size, C, form);
  auto linear = [&](const Linear& l) { return place_linear(layout, l, form); };
  d.encoder.clear();
  for (const EncoderLayerWeights& l : w.encoder) {
    d.encoder.push_back({linear(l.qkv), linear(l.out), linear(l.ffn_0), linear(l.ffn_1),
                         place_norm(layout, l.attention_norm, C), place_norm(layout, l.ffn_norm, C)});
  }
  d.decoder.clear();
  for (const DecoderLayerWeights& l : w.decoder) {
    d.decoder.push_back({linear(l.qkv), linear(l.self_out), linear(l.cross_q), linear(l.cross_kv), linear(l.cross_out),
                         linear(l.ffn_0), linear(l.ffn_1), place_norm(layout, l.self_norm, C),
                         place_norm(layout, l.cross_norm, C), place_norm(layout, l.ffn_norm, C)});
  }
  d.output = linear(w.output);
  d.encoder_norm = place_norm(layout, w.encoder_norm, C);
  d.decoder_norm = place_norm(layout, w.decoder_norm, C);
}

size_t block_bytes(const Model& model, CudaWeightForm form) {
  CudaModelWeights d;
  d.form = form;
  BlockLayout sizing;
  place_model(sizing, model.config(), weights_of(model), d);
  return sizing.bytes();
}

// The block's bytes for d->form, d->bytes of them (block_bytes'), with d's
// pointers as if it began at `base`.
std::vector<std::byte> fill_block(const Model& model, const void* base, CudaModelWeights* d) {
  std::vector<std::byte> image(d->bytes);
  BlockLayout filling(image.data(), static_cast<std::byte*>(const_cast<void*>(base)));
  place_model(filling, model.config(), weights_of(model), *d);
  return image;
}

Expected<std::unique_ptr<CudaModelWeights>> upload(const Model& model, int device, CudaWeightForm form) {
  auto d = std::make_unique<CudaModelWeights>();
  d->device = device;
  d->form = form;
  d->bytes = block_bytes(model, form);
  const cudaError_t allocated = cudaMalloc(&d->block, d->bytes);
  if (allocated != cudaSuccess) {
    return Status::error(Errc::out_of_memory, "cannot allocate %zu bytes of GPU memory for the weights: %s", d->bytes,
                         cudaGetErrorString(allocated));
  }
  const std::vector<std::byte> image = fill_block(model, d->block, d.get());
  const cudaError_t copied = cudaMemcpy(d->block, image.data(), d->bytes, cudaMemcpyHostToDevice);
  if (copied != cudaSuccess) {
    cudaFree(d->block);
    return Status::error(Errc::internal, "copying the weights to the GPU failed: %s", cudaGetErrorString(copied));
  }
  return d;
}

}  // namespace

std::vector<std::byte> weight_block(const Model& model, CudaWeightForm form, const void* base, CudaModelWeights* d) {
  d->form = form;
  d->bytes = block_bytes(model, form);
  return fill_block(model, base, d);
}

CudaWeightCache::~CudaWeightCache() {
  if (copies_.empty()) return;  // never touch CUDA for a model only CPU sessions used
  int current = 0;
  const bool restore = cudaGetDevice(&current) == cudaSuccess;
  for (const auto& copy : copies_) {
    if (cudaSetDevice(copy->device) == cudaSuccess) cudaFree(copy->block);
  }
  if (restore) cudaSetDevice(current);
}

Expected<const CudaModelWeights*> CudaWeightCache::get(const Model& model, int device, CudaWeightForm form) {
  if (form == CudaWeightForm::int8 && !weights_of(model).any_int8) form = CudaWeightForm::f32;  // nothing to keep int8
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& copy : copies_) {
    if (copy->device == device && copy->form == form) return copy.get();
  }
  auto uploaded = upload(model, device, form);
  if (!uploaded) return uploaded.status();
  copies_.push_back(std::move(uploaded.value()));
  return copies_.back().get();
}

}  // namespace mt::detail
