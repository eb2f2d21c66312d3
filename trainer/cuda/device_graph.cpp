// The device tape: buffer recycling across steps and the reverse pass.
#include "cuda/device_graph.hpp"

#include <cuda_runtime.h>

#include "cublas_library.hpp"  // platforms/cuda: cuBLAS opened on first use
#include "cuda/cuda_check.hpp"
#include "cuda/launchers.hpp"

namespace mt::autograd::gpu {

void DeviceBuffer::reserve(size_t n) {
  if (n <= bytes) return;
  if (ptr) MT_GPU_CHECK(cudaFree(ptr));
  ptr = nullptr;
  bytes = 0;
  // Grown by a quarter more than asked, so slowly growing batches settle fast.
  const size_t want = n + n / 4;
  MT_GPU_CHECK(cudaMalloc(&ptr, want));
  bytes = want;
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr) cudaFree(ptr);
}

std::string device_unavailable_reason() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status == cudaErrorInsufficientDriver || status == cudaErrorNoDevice) {
    return std::string(
               "no CUDA device: no NVIDIA GPU driver is installed, or it is older than this build's CUDA needs (") +
           cudaGetErrorString(status) + ")";
  }
  if (status != cudaSuccess) return std::string("no usable CUDA device (") + cudaGetErrorString(status) + ")";
  if (count == 0) return "no CUDA device";
  return {};
}

Graph::Graph() {
  const std::string why = device_unavailable_reason();
  if (!why.empty()) throw std::runtime_error(why);
  cudaStream_t s = nullptr;
  MT_GPU_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  stream_ = s;
}

Graph::~Graph() {
  if (cublas_) cuda_detail::cublas_library()->destroy(cublas_);
  if (stream_) cudaStreamDestroy(stream_);
}

cublasContext* Graph::cublas() {
  if (cublas_) return cublas_;
  const cuda_detail::CublasLibrary* lib = cuda_detail::cublas_library();
  if (!lib) throw std::runtime_error("CUDA: cannot open libcublas (is it on LD_LIBRARY_PATH?)");
  cublasHandle_t h = nullptr;
  if (lib->create(&h) != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("CUDA: cublasCreate failed");
  lib->set_stream(h, stream_);
  cublas_ = h;
  return cublas_;
}

Tensor* Graph::parameter(std::string name, Shape shape) {
  auto t = std::make_unique<Tensor>();
  const size_t bytes = size_t(shape.numel()) * sizeof(float);
  t->shape = shape;
  t->value_buffer.reserve(bytes);
  t->grad_buffer.reserve(bytes);
  t->value = static_cast<float*>(t->value_buffer.ptr);
  t->grad = static_cast<float*>(t->grad_buffer.ptr);
  MT_GPU_CHECK(cudaMemsetAsync(t->value, 0, bytes, stream_));
  MT_GPU_CHECK(cudaMemsetAsync(t->grad, 0, bytes, stream_));
  t->requires_grad = true;
  t->is_parameter = true;
  t->name = std::move(name);
  param_list_.push_back(t.get());
  params_.push_back(std::move(t));
  return param_list_.back();
}

Tensor* Graph::make(Shape shape, bool requires_grad) {
  if (temps_used_ == temps_.size()) temps_.push_back(std::make_unique<Tensor>());
  Tensor* t = temps_[temps_used_++].get();
  t->shape = shape;
  // At least one float, so every tensor has a valid pointer.
  t->value_buffer.reserve(std::max<size_t>(1, size_t(shape.numel())) * sizeof(float));
  t->value = static_cast<float*>(t->value_buffer.ptr);
  t->grad = nullptr;  // sized by backward
  t->requires_grad = requires_grad;
  return t;
}

Tensor* Graph::input(Shape shape) {
  Tensor* t = make(shape, false);
  MT_GPU_CHECK(cudaMemsetAsync(t->value, 0, size_t(shape.numel()) * sizeof(float), stream_));
  return t;
}

Tensor* Graph::input(Shape shape, std::span<const float> data) {
  MT_AG_CHECK(int64_t(data.size()) == shape.numel(), "input: data size does not match " + shape.str());
  Tensor* t = make(shape, false);
  upload(t, data);
  return t;
}

const int* Graph::upload_ints(std::span<const int> ints) {
  if (ints_used_ == ints_.size()) ints_.push_back(std::make_unique<DeviceBuffer>());
  DeviceBuffer& b = *ints_[ints_used_++];
  b.reserve(std::max<size_t>(1, ints.size()) * sizeof(int));
  // From pageable memory the copy is staged before returning: ints may go.
  if (!ints.empty())
    MT_GPU_CHECK(cudaMemcpyAsync(b.ptr, ints.data(), ints.size() * sizeof(int), cudaMemcpyHostToDevice, stream_));
  return static_cast<const int*>(b.ptr);
}

Op& Graph::record(Op::Backward backward, Tensor* out) {
  if (ops_used_ == ops_.size()) ops_.emplace_back();
  Op& op = ops_[ops_used_++];
  op = Op{};
  op.backward = backward;
  op.out = out;
  return op;
}

void Graph::zero_grad() {
  for (Tensor* p : param_list_) MT_GPU_CHECK(cudaMemsetAsync(p->grad, 0, size_t(p->numel()) * sizeof(float), stream_));
}

void Graph::backward(Tensor* loss, float seed) {
  MT_AG_CHECK(loss->numel() == 1, "backward: the loss must have one element, not " + loss->shape.str());
  // Gradients of this step's tensors start at zero; parameters keep theirs.
  for (size_t k = 0; k < temps_used_; ++k) {
    Tensor& x = *temps_[k];
    if (!x.requires_grad) continue;
    const size_t bytes = std::max<size_t>(1, size_t(x.numel())) * sizeof(float);
    x.grad_buffer.reserve(bytes);
    x.grad = static_cast<float*>(x.grad_buffer.ptr);
    MT_GPU_CHECK(cudaMemsetAsync(x.grad, 0, bytes, stream_));
  }
  if (!loss->requires_grad) return;
  add_scalar(loss->grad, seed, stream_);  // a kernel: no host sync
  for (size_t k = ops_used_; k-- > 0;) {
    const Op& op = ops_[k];
    if (op.out->requires_grad) op.backward(*this, op);
  }
}

void Graph::clear() {
  temps_used_ = 0;
  ops_used_ = 0;
  ints_used_ = 0;
}

std::vector<float> Graph::download(const Tensor* t) const {
  std::vector<float> host(size_t(t->numel()));
  MT_GPU_CHECK(cudaMemcpyAsync(host.data(), t->value, host.size() * sizeof(float), cudaMemcpyDeviceToHost, stream_));
  synchronize();
  return host;
}

std::vector<float> Graph::download_grad(const Tensor* t) const {
  MT_AG_CHECK(t->grad != nullptr, "download_grad: tensor has no gradient");
  std::vector<float> host(size_t(t->numel()));
  MT_GPU_CHECK(cudaMemcpyAsync(host.data(), t->grad, host.size() * sizeof(float), cudaMemcpyDeviceToHost, stream_));
  synchronize();
  return host;
}

void Graph::upload(Tensor* t, std::span<const float> data) {
  MT_AG_CHECK(int64_t(data.size()) == t->numel(), "upload: size does not match " + t->shape.str());
  MT_GPU_CHECK(cudaMemcpyAsync(t->value, data.data(), data.size() * sizeof(float), cudaMemcpyHostToDevice, stream_));
  synchronize();  // data may be a temporary
}

void Graph::upload_grad(Tensor* t, std::span<const float> data) {
  MT_AG_CHECK(t->grad != nullptr && int64_t(data.size()) == t->numel(), "upload_grad: no gradient or wrong size");
  MT_GPU_CHECK(cudaMemcpyAsync(t->grad, data.data(), data.size() * sizeof(float), cudaMemcpyHostToDevice, stream_));
  synchronize();
}

void Graph::synchronize() const { MT_GPU_CHECK(cudaStreamSynchronize(stream_)); }

}  // namespace mt::autograd::gpu
