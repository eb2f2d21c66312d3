// The device-side mirror of autograd/graph.hpp: tensors whose value and
// gradient live in GPU memory, and the tape that records each op's backward.
//
// Same contract as the CPU Graph<float>: ops (ops.hpp, one .cu per family)
// compute their forward at once on the graph's stream and append a record
// with what the backward needs; backward(loss) runs the tape in reverse and
// every backward accumulates (+=) into its inputs' gradients. clear() drops
// the step's tensors but keeps their device buffers, each growing only when
// a later step needs more, so a steady training loop stops calling cudaMalloc.
//
// Only float: gradient checks stay on the CPU (double), and the CUDA tests
// compare every op with the CPU op instead.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "autograd/graph.hpp"  // Shape, RngState, MT_AG_CHECK

struct CUstream_st;
struct cublasContext;

namespace mt::autograd::gpu {

using Stream = CUstream_st*;

// A device buffer that keeps its capacity across steps.
struct DeviceBuffer {
  void* ptr = nullptr;
  size_t bytes = 0;        // capacity
  void reserve(size_t n);  // grows (contents lost) when n > capacity
  ~DeviceBuffer();
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

struct Tensor {
  Shape shape;
  float* value = nullptr;  // device, shape.numel() floats, row-major
  float* grad = nullptr;   // device, same size; valid once backward ran (or for parameters)
  bool requires_grad = false;
  bool is_parameter = false;
  std::string name;  // parameters: the model_spec name

  int64_t numel() const { return shape.numel(); }
  int64_t rows() const { return shape.rows(); }
  int cols() const { return shape.cols(); }
  float* data() const { return value; }
  float* grad_data() const { return grad; }

  // Storage behind value and grad (owned here; pointers above point into it).
  DeviceBuffer value_buffer, grad_buffer;
};

class Graph;

// One recorded op, as autograd::Op: inputs, saved buffers, arguments.
struct Op {
  using Backward = void (*)(Graph& g, const Op& op);
  Backward backward = nullptr;
  Tensor* out = nullptr;
  std::array<Tensor*, 4> in{};
  std::array<Tensor*, 3> saved{};
  OpArgs args;
  const int* ints = nullptr;  // device ints of this step (ids, targets, lengths)
};

class Graph {
 public:
  // On the current CUDA device; throws when there is none.
  Graph();
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // A trainable tensor, zero value and gradient; kept by clear().
  Tensor* parameter(std::string name, Shape shape);
  // A constant of this step: zeros, or a copy of host data.
  Tensor* input(Shape shape);
  Tensor* input(Shape shape, std::span<const float> data);

  const std::vector<Tensor*>& parameters() const { return param_list_; }
  void zero_grad();
  void backward(Tensor* loss, float seed = 1.0f);
  void clear();

  void set_training(bool training) { training_ = training; }
  bool training() const { return training_; }
  void set_seed(uint64_t seed) { rng_ = RngState{seed, 0}; }
  RngState rng_state() const { return rng_; }
  void set_rng_state(RngState s) { rng_ = s; }

  // Host copies (synchronous) of a tensor's value or gradient, and uploads.
  std::vector<float> download(const Tensor* t) const;
  std::vector<float> download_grad(const Tensor* t) const;
  void upload(Tensor* t, std::span<const float> data);
  void upload_grad(Tensor* t, std::span<const float> data);
  void synchronize() const;

  // --- for op implementations ---
  Tensor* make(Shape shape, bool requires_grad);
  Op& record(Op::Backward backward, Tensor* out);
  uint64_t next_dropout_stream() { return rng_.calls++; }
  // Device copy of host ints, valid until clear().
  const int* upload_ints(std::span<const int> ints);
  // Scratch floats of this step (no gradient), valid until clear().
  float* scratch(size_t n) { return make(Shape{int(n)}, false)->value; }
  Stream stream() const { return stream_; }
  cublasContext* cublas();  // created on first use, bound to stream()

  size_t op_count() const { return ops_used_; }
  size_t tensor_count() const { return temps_used_; }

 private:
  Stream stream_ = nullptr;
  cublasContext* cublas_ = nullptr;
  std::vector<std::unique_ptr<Tensor>> params_;
  std::vector<Tensor*> param_list_;
  std::vector<std::unique_ptr<Tensor>> temps_;  // [0, temps_used_) live this step
  size_t temps_used_ = 0;
  std::vector<Op> ops_;
  size_t ops_used_ = 0;
  std::vector<std::unique_ptr<DeviceBuffer>> ints_;
  size_t ints_used_ = 0;
  bool training_ = true;
  RngState rng_;
};

// Empty when a CUDA device can run the trainer; else why not (one line).
std::string device_unavailable_reason();

}  // namespace mt::autograd::gpu
