// Adam on the device: the CPU optimizer (optim/adam.hpp) with the same
// options, schedule, clipping and decoupled weight decay, its moments in
// GPU memory and the update one kernel per parameter. The global gradient
// norm is reduced on the device per block and summed on the host in double
// (one small copy back per step, needed to decide the clipping anyway).
// save()/load() write the CPU optimizer's byte layout, so a checkpoint
// resumes on either device.
#pragma once

#include <cstdint>
#include <vector>

#include "cuda/device_graph.hpp"
#include "mt/status.hpp"
#include "optim/adam.hpp"

namespace mt::autograd::gpu {

class Adam {
 public:
  Adam(Graph& graph, const train::AdamOptions& options);

  // As train::Adam<float>::step: gradients scaled by grad_scale, clipped,
  // one update; returns the norm before clipping.
  double step(double grad_scale = 1.0);

  int64_t steps() const { return step_; }
  double last_learning_rate() const { return last_lr_; }
  void set_learning_rate_scale(double scale) { lr_scale_ = scale; }  // as train::Adam's

  void save(std::vector<char>* out) const;
  Status load(const char* data, size_t size, size_t* consumed);

 private:
  Graph& g_;
  train::AdamOptions o_;
  int64_t step_ = 0;
  double last_lr_ = 0.0;
  double lr_scale_ = 1.0;
  std::vector<size_t> offset_;                            // of each parameter in the moment buffers
  size_t total_ = 0;                                      // floats over all parameters
  DeviceBuffer m_, v_;                                    // [total_] first and second moments
  std::vector<unsigned> partial_offset_, partial_count_;  // norm partial sums per parameter
  DeviceBuffer partials_;                                 // doubles
  std::vector<double> host_partials_;
};

}  // namespace mt::autograd::gpu
