// Every autograd op on the device: the same names, arguments, shapes and
// semantics as the CPU ops in autograd/*.hpp (see each for the formulas),
// on gpu::Tensor. A model written with unqualified op calls runs on either
// graph (model/transformer_forward.hpp): argument-dependent lookup picks
// autograd:: for CPU tensors and autograd::gpu:: for these.
//
// GEMMs are cuBLAS in fp32 (no TF32, so results track the CPU closely);
// the rest are kernels in the .cu file of each family.
#pragma once

#include <span>

#include "autograd/attention.hpp"  // SeqBatch
#include "cuda/device_graph.hpp"

namespace mt::autograd::gpu {

// linear.cu: y = x W^T + b; y = a op(b); batched over the first dimension.
Tensor* linear(Graph& g, Tensor* x, Tensor* w, Tensor* b = nullptr);
Tensor* matmul(Graph& g, Tensor* a, Tensor* b, bool trans_b = false);
Tensor* batched_matmul(Graph& g, Tensor* a, Tensor* b, bool trans_b = false);

// norm.cu
Tensor* layer_norm(Graph& g, Tensor* x, Tensor* gamma, Tensor* beta, double eps);

// attention.cu: masked multi-head attention from the runtime's layouts.
Tensor* self_attention(Graph& g, Tensor* qkv, const SeqBatch& seqs, int heads, bool causal);
Tensor* cross_attention(Graph& g, Tensor* q, const SeqBatch& queries, Tensor* kv, const SeqBatch& keys, int heads);

// embedding.cu: table[ids] * scale (+ sinusoidal positions, or the model's own table: autograd::embedding).
Tensor* embedding(Graph& g, Tensor* table, std::span<const int> ids, int L, double scale, bool add_positions = true,
                  std::span<const float> stored = {});

// elementwise.cu
Tensor* add(Graph& g, Tensor* a, Tensor* b);
Tensor* add_bias(Graph& g, Tensor* x, Tensor* b);
Tensor* mul(Graph& g, Tensor* a, Tensor* b);
Tensor* scale(Graph& g, Tensor* x, double s);
Tensor* sum(Graph& g, Tensor* x);

// activations.cu
Tensor* relu(Graph& g, Tensor* x);
Tensor* gelu(Graph& g, Tensor* x);
Tensor* swish(Graph& g, Tensor* x);
Tensor* softmax(Graph& g, Tensor* x);
// The CPU's fused linear_relu, composed here (the same values).
inline Tensor* linear_relu(Graph& g, Tensor* x, Tensor* w, Tensor* b = nullptr) { return relu(g, linear(g, x, w, b)); }

// dropout.cu: the CPU's counter-based generator, so masks equal the CPU's
// for the same RngState.
Tensor* dropout(Graph& g, Tensor* x, double p);

// loss.cu: label-smoothed cross-entropy summed over non-pad rows. The row
// losses are brought back and summed in double in row order, as on the CPU
// (one host sync per call: the trainer reports the loss anyway).
struct CrossEntropy {
  Tensor* loss = nullptr;  // [1] on the device
  int64_t tokens = 0;
  double nll = 0.0;
  double value = 0.0;  // the loss as summed on the host (loss holds it rounded to float)
};
CrossEntropy cross_entropy(Graph& g, Tensor* logits, std::span<const int> targets, int pad_id, double label_smoothing);

}  // namespace mt::autograd::gpu
