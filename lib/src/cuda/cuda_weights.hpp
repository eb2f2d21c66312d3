// A model's weights on a GPU, in the layouts the CUDA kernels read: linear
// weights and embeddings plain row-major [N, K] (the file's packed panels
// unpacked), int8 tensors dequantized to fp32. Uploaded once per model and
// device, on the first CUDA session, and shared by all its sessions.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "mt/model.hpp"
#include "mt/status.hpp"

namespace mt::detail {

struct ModelWeights;

// y = x W^T + b, W [n, k] row-major on the device.
struct CudaLinear {
  const float* weight = nullptr;
  const float* bias = nullptr;  // [n] or null
  int n = 0, k = 0;
};

struct CudaNorm {
  const float* gamma = nullptr;
  const float* beta = nullptr;
};

struct CudaEncoderLayer {
  CudaLinear qkv, out, ffn_0, ffn_1;
  CudaNorm attention_norm, ffn_norm;
};

struct CudaDecoderLayer {
  CudaLinear qkv, self_out, cross_q, cross_kv, cross_out, ffn_0, ffn_1;
  CudaNorm self_norm, cross_norm, ffn_norm;
};

struct CudaModelWeights {
  int device = -1;
  const float* source_embedding = nullptr;  // [Vs, C]
  const float* target_embedding = nullptr;  // [Vt, C]
  CudaLinear output;                        // [Vt, C]: the target embedding when tied
  std::vector<CudaEncoderLayer> encoder;
  std::vector<CudaDecoderLayer> decoder;
  CudaNorm encoder_norm, decoder_norm;  // pre-norm only
  void* block = nullptr;                // one device allocation holding all of the above
  size_t bytes = 0;
};

// The device copies of one model, one per GPU used; owned by the Model and
// freed with it. Thread-safe: concurrent first sessions upload once.
class CudaWeightCache {
 public:
  CudaWeightCache() = default;
  CudaWeightCache(const CudaWeightCache&) = delete;
  CudaWeightCache& operator=(const CudaWeightCache&) = delete;
  ~CudaWeightCache();

  // The weights on `device` (the calling thread's current CUDA device),
  // uploaded now if they are not there yet.
  Expected<const CudaModelWeights*> get(const Model& model, int device);

 private:
  std::mutex mutex_;
  std::vector<std::unique_ptr<CudaModelWeights>> copies_;
};

}  // namespace mt::detail
