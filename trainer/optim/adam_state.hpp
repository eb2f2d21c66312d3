// The optimizer's part of a checkpoint, one byte layout for the CPU and the
// device optimizers, so a run resumes on either: int64 step, uint64 tensor
// count, then per tensor uint64 n, n first moments, n second moments (T each).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "mt/status.hpp"

namespace mt::train {

// One parameter's moments: n values at m and n at v.
template <class T>
struct Moments {
  T* m = nullptr;
  T* v = nullptr;
  size_t n = 0;
};

template <class T>
void save_adam_state(int64_t step, std::span<const Moments<const T>> tensors, std::vector<char>* out);

// Reads into tensors, whose sizes must match the saved ones; *consumed: the
// bytes read. On an error the moments may be partly overwritten and *step is
// left alone.
template <class T>
Status load_adam_state(const char* data, size_t size, std::span<const Moments<T>> tensors, int64_t* step,
                       size_t* consumed);

extern template void save_adam_state<float>(int64_t, std::span<const Moments<const float>>, std::vector<char>*);
extern template void save_adam_state<double>(int64_t, std::span<const Moments<const double>>, std::vector<char>*);
extern template Status load_adam_state<float>(const char*, size_t, std::span<const Moments<float>>, int64_t*, size_t*);
extern template Status load_adam_state<double>(const char*, size_t, std::span<const Moments<double>>, int64_t*,
                                               size_t*);

}  // namespace mt::train
