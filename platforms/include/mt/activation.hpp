// The feed-forward activation a model uses (ModelConfig::activation) and every
// GEMM epilogue applies: public, so that mt/model.hpp needs nothing of the
// kernels' header.
#pragma once

#include <cstdint>

namespace mt {

enum class Activation : uint8_t { none = 0, relu = 1, gelu = 2, swish = 3 };

}  // namespace mt
