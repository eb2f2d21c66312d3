// Helpers of the CUDA kernel tests: skipping without a device, device
// buffers, launch checks and element-wise comparison with the CPU reference.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "mt/cuda_kernels.h"
#include "test_skip.hpp"

namespace mt::test {

// Why CUDA tests cannot run here; empty when a device is present.
inline const std::string& cuda_unavailable_reason() {
  static const std::string reason = [] {
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess)
      return std::string("no usable CUDA device (cudaGetDeviceCount: ") + cudaGetErrorString(status) + ")";
    if (count == 0) return std::string("no CUDA device");
    return std::string();
  }();
  return reason;
}

// Set (to anything) on GPU machines, so that a missing device fails instead
// of skipping: tests/cuda/run_on_gpu.sh does.
inline bool cuda_device_required() { return std::getenv("MT_REQUIRE_CUDA_DEVICE") != nullptr; }

// A test case without a device says why and is reported Skipped (MT_SKIP);
// with MT_REQUIRE_CUDA_DEVICE set it fails instead.
#define MT_REQUIRE_CUDA_DEVICE()                                                       \
  do {                                                                                 \
    if (!mt::test::cuda_unavailable_reason().empty()) {                                \
      if (mt::test::cuda_device_required()) FAIL(mt::test::cuda_unavailable_reason()); \
      MT_SKIP(mt::test::cuda_unavailable_reason());                                    \
    }                                                                                  \
  } while (false)

// Fails the test with the status's name when a launcher or CUDA call failed.
inline void require_ok(int status, const char* what) {
  if (status != 0) FAIL(what << " failed: " << cuda_status_string(status) << " (" << status << ")");
}

// Waits for the stream, so that a fault inside the kernel is blamed on it.
inline void require_finished(CudaStream stream, const char* kernel) {
  const cudaError_t status = cudaStreamSynchronize(stream);
  if (status != cudaSuccess)
    FAIL(kernel << " faulted on the device: " << cudaGetErrorString(status) << " (" << int(status) << ")");
}

// A stream of its own per test, so the stream argument is really used.
class TestStream {
 public:
  TestStream() { require_ok(int(cudaStreamCreate(&stream_)), "cudaStreamCreate"); }
  ~TestStream() { cudaStreamDestroy(stream_); }
  TestStream(const TestStream&) = delete;
  TestStream& operator=(const TestStream&) = delete;
  CudaStream get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

// A cuBLAS handle of its own per test (with its workspace), or a failed test.
class TestCublas {
 public:
  TestCublas() : context_(cublas_create()) { REQUIRE(context_ != nullptr); }
  ~TestCublas() { cublas_destroy(context_); }
  TestCublas(const TestCublas&) = delete;
  TestCublas& operator=(const TestCublas&) = delete;
  CublasContext* get() const { return context_; }

 private:
  CublasContext* context_ = nullptr;
};

// The linear layers' shapes M x N x K the GEMM tests run: single elements,
// a decoder row, odd sizes around the tiles, a batch, a tall thin layer.
struct LinearShape {
  int M, N, K;
};
inline constexpr LinearShape kLinearShapes[] = {{1, 1, 1},       {1, 512, 512},   {7, 33, 65},
                                                {37, 1000, 515}, {64, 2048, 512}, {200, 31, 1024}};

// A device copy of a host vector; download() brings it back after the stream's work.
template <class T>
class DeviceVector {
 public:
  explicit DeviceVector(size_t n) : size_(n) {
    require_ok(int(cudaMalloc(&data_, (n > 0 ? n : 1) * sizeof(T))), "cudaMalloc");
  }
  explicit DeviceVector(const std::vector<T>& host) : DeviceVector(host.size()) { upload(host); }
  ~DeviceVector() { cudaFree(data_); }
  DeviceVector(const DeviceVector&) = delete;
  DeviceVector& operator=(const DeviceVector&) = delete;

  T* get() const { return data_; }
  size_t size() const { return size_; }
  void upload(const std::vector<T>& host) {
    REQUIRE(host.size() == size_);
    require_ok(int(cudaMemcpy(data_, host.data(), size_ * sizeof(T), cudaMemcpyHostToDevice)), "cudaMemcpy to device");
  }
  std::vector<T> download() const {
    std::vector<T> host(size_);
    require_ok(int(cudaMemcpy(host.data(), data_, size_ * sizeof(T), cudaMemcpyDeviceToHost)), "cudaMemcpy to host");
    return host;
  }

 private:
  T* data_ = nullptr;
  size_t size_ = 0;
};

// Every element within tol * (1 + |ref|) of the reference (equal infinities
// pass; NaN never does). On failure, names the worst element and how many failed.
inline void require_close(const std::vector<float>& ref, const std::vector<float>& got, double tol,
                          const std::string& what) {
  REQUIRE(ref.size() == got.size());
  size_t bad = 0, worst = 0;
  double worst_ratio = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (ref[i] == got[i]) continue;
    const double err = std::fabs(double(ref[i]) - double(got[i]));
    const double ratio = err / (tol * (1.0 + std::fabs(double(ref[i]))));
    if (!(ratio <= 1.0)) {
      ++bad;
      if (!(ratio <= worst_ratio)) worst_ratio = ratio, worst = i;
    }
  }
  if (bad > 0) {
    FAIL(what << ": " << bad << " of " << ref.size() << " elements off by more than " << tol
              << " x (1 + |ref|); worst at " << worst << ": ref " << ref[worst] << ", got " << got[worst] << " ("
              << worst_ratio << " x the tolerance)");
  }
}

// Bit-for-bit equality, for kernels whose operations are those of the reference.
inline void require_equal(const std::vector<float>& ref, const std::vector<float>& got, const std::string& what) {
  REQUIRE(ref.size() == got.size());
  for (size_t i = 0; i < ref.size(); ++i) {
    if (!(ref[i] == got[i])) FAIL(what << ": element " << i << " is " << got[i] << ", the reference " << ref[i]);
  }
}

}  // namespace mt::test
