// The one alignment libmt's memory keeps: model tensors in the file, session
// arenas and every buffer planned in them. 64 bytes: a cache line, and a whole
// AVX-512 register, so kernels may use aligned loads.
#pragma once

#include <cstddef>

#include "mt/model.hpp"

namespace mt::detail {

inline constexpr size_t kAlignment = kBufferAlignment;

}  // namespace mt::detail
