// Host launchers of the few kernels that the graph and optimizer need
// outside an op (defined in the .cu files named beside each).
#pragma once

#include <cstdint>

#include "cuda/device_graph.hpp"

namespace mt::autograd::gpu {

// x[0] += v (elementwise.cu): seeds the loss gradient without a host sync.
void add_scalar(float* x, float v, Stream s);

}  // namespace mt::autograd::gpu
