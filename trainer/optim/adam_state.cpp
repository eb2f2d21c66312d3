#include "optim/adam_state.hpp"

#include <cstring>

namespace mt::train {

template <class T>
void save_adam_state(int64_t step, std::span<const Moments<const T>> tensors, std::vector<char>* out) {
  auto put = [&](const void* p, size_t n) {
    out->insert(out->end(), static_cast<const char*>(p), static_cast<const char*>(p) + n);
  };
  const uint64_t count = tensors.size();
  put(&step, sizeof(step));
  put(&count, sizeof(count));
  for (const Moments<const T>& t : tensors) {
    const uint64_t n = t.n;
    put(&n, sizeof(n));
    put(t.m, t.n * sizeof(T));
    put(t.v, t.n * sizeof(T));
  }
}

template <class T>
Status load_adam_state(const char* data, size_t size, std::span<const Moments<T>> tensors, int64_t* step,
                       size_t* consumed) {
  size_t at = 0;
  auto get = [&](void* p, size_t n) {
    if (n > size - at) return false;
    std::memcpy(p, data + at, n);
    at += n;
    return true;
  };
  uint64_t count = 0;
  int64_t saved_step = 0;
  if (!get(&saved_step, sizeof(saved_step)) || !get(&count, sizeof(count)) || count != tensors.size()) {
    return Status::error(Errc::invalid_argument,
                         "checkpoint: optimizer state does not match the model (%llu tensors, expected %zu)",
                         static_cast<unsigned long long>(count), tensors.size());
  }
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Moments<T>& t = tensors[i];
    uint64_t n = 0;
    if (!get(&n, sizeof(n)) || n != t.n || !get(t.m, n * sizeof(T)) || !get(t.v, n * sizeof(T))) {
      return Status::error(Errc::invalid_argument,
                           "checkpoint: optimizer state of tensor %zu is truncated or mis-sized", i);
    }
  }
  *step = saved_step;
  *consumed = at;
  return {};
}

template void save_adam_state<float>(int64_t, std::span<const Moments<const float>>, std::vector<char>*);
template void save_adam_state<double>(int64_t, std::span<const Moments<const double>>, std::vector<char>*);
template Status load_adam_state<float>(const char*, size_t, std::span<const Moments<float>>, int64_t*, size_t*);
template Status load_adam_state<double>(const char*, size_t, std::span<const Moments<double>>, int64_t*, size_t*);

}  // namespace mt::train
