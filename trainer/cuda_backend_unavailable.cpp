// Builds without nvcc: CUDA training reports why it cannot run.
#include <stdexcept>

#include "device_backend.hpp"

namespace mt::train {

std::string cuda_training_unavailable_reason() { return "mt_train was built without CUDA (no nvcc found)"; }

std::unique_ptr<DeviceBackend> make_cuda_backend(const TransformerModel<float>&, const AdamOptions&, uint64_t,
                                                 Communicator*) {
  throw std::runtime_error(cuda_training_unavailable_reason());
}

}  // namespace mt::train
