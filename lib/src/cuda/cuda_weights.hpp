// A model's weights on a GPU, in the layouts the CUDA kernels read: linear
// weights and embeddings plain row-major [N, K] (the file's packed panels
// unpacked). An int8 model's tensors go up dequantized to fp32 (fp32 GEMMs
// on int8-rounded weights), or as int8 for the int8 GEMMs that compute what
// the CPU computes; any model's may go up in half precision for fp16 GEMMs
// (CudaWeightForm). Uploaded once per model, device and form, on the first
// CUDA session that asks, and shared by all its sessions.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "mt/cuda_kernels.h"
#include "mt/model.hpp"
#include "mt/status.hpp"
#include "transformer/transformer_weights.hpp"

namespace mt::detail {

struct ModelWeights;

enum class CudaWeightForm : uint8_t {
  f32 = 0,   // every tensor fp32 (int8 ones dequantized)
  int8 = 1,  // int8 tensors kept int8 (an int8 model's; the rest fp32)
  f16 = 2,   // linear weights and embeddings in half (int8 ones dequantized), biases and norms fp32
};

// y = x W^T + b, W [n, k] row-major on the device: fp32 `weight`, half
// `f16` (row stride k), or `i8`.
struct CudaLinear {
  const float* weight = nullptr;
  const uint16_t* f16 = nullptr;  // IEEE binary16 bits
  CudaInt8Weights i8;             // i8.q set: an int8 layer
  const float* bias = nullptr;    // [n] or null
  int n = 0, k = 0;

  bool is_int8() const { return i8.q != nullptr; }
  bool is_f16() const { return f16 != nullptr; }
};

// A token embedding [V, C]: fp32, half, or int8 with a scale per row.
struct CudaEmbedding {
  const float* f32 = nullptr;
  const uint16_t* f16 = nullptr;
  const int8_t* i8 = nullptr;
  const float* scales = nullptr;
};

struct CudaNorm {
  const float* gamma = nullptr;
  const float* beta = nullptr;
};

using CudaEncoderLayer = EncoderLayerOf<CudaLinear, CudaNorm>;
using CudaDecoderLayer = DecoderLayerOf<CudaLinear, CudaNorm>;

struct CudaModelWeights : TransformerWeightsOf<CudaLinear, CudaNorm, CudaEmbedding> {
  int device = -1;
  CudaWeightForm form = CudaWeightForm::f32;
  void* block = nullptr;  // one device allocation holding all of the above
  size_t bytes = 0;
};

// The block of a model's weights in `form`, as it is copied to the device:
// its bytes, with *d's pointers set as if the block began at device address
// `base` (their offsets from `base` are offsets into the bytes). Nothing
// touches a device, so tests check the layout and the conversions anywhere.
std::vector<std::byte> weight_block(const Model& model, CudaWeightForm form, const void* base, CudaModelWeights* d);

// The device copies of one model, one per GPU used; owned by the Model and
// freed with it. Thread-safe: concurrent first sessions upload once.
class CudaWeightCache {
 public:
  CudaWeightCache() = default;
  CudaWeightCache(const CudaWeightCache&) = delete;
  CudaWeightCache& operator=(const CudaWeightCache&) = delete;
  ~CudaWeightCache();

  // The weights on `device` (the calling thread's current CUDA device) in
  // `form`, uploaded now if they are not there yet. An fp32 model has no
  // int8 form: asking for it gets the fp32 one.
  Expected<const CudaModelWeights*> get(const Model& model, int device, CudaWeightForm form);

 private:
  std::mutex mutex_;
  std::vector<std::unique_ptr<CudaModelWeights>> copies_;
};

}  // namespace mt::detail
