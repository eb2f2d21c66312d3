// Tensors of the autograd: a row-major value buffer, a gradient buffer of the
// same size when the tensor takes part in backward, and a small fixed shape.
// Tensors are owned by a Graph (graph.hpp) and handled by pointer.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <vector>

namespace mt::autograd {

// Shape errors are programming errors of the model code; they throw so tests
// can check them and a trainer dies with a message naming the op.
#define MT_AG_CHECK(cond, msg)                                              \
  do {                                                                      \
    if (!(cond)) throw std::logic_error(std::string("autograd: ") + (msg)); \
  } while (0)

// Up to four dimensions, row-major (the last one is contiguous).
struct Shape {
  static constexpr int kMaxRank = 4;
  std::array<int, kMaxRank> dims{};
  int rank = 0;

  Shape() = default;
  Shape(std::initializer_list<int> d) {
    MT_AG_CHECK(d.size() <= kMaxRank, "rank above 4");
    for (int x : d) dims[rank++] = x;
  }
  int operator[](int i) const { return dims[i]; }
  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < rank; ++i) n *= dims[i];
    return n;
  }
  // The last dimension, and the product of the others: the [rows, cols] view
  // row-wise ops (LayerNorm, softmax, the loss) work on.
  int cols() const { return rank == 0 ? 1 : dims[rank - 1]; }
  int64_t rows() const { return rank == 0 ? 1 : numel() / cols(); }
  bool operator==(const Shape& o) const {
    if (rank != o.rank) return false;
    for (int i = 0; i < rank; ++i)
      if (dims[i] != o.dims[i]) return false;
    return true;
  }
  std::string str() const;
};

inline std::string Shape::str() const {
  std::string s = "[";
  for (int i = 0; i < rank; ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

template <class T>
struct Tensor {
  Shape shape;
  std::vector<T> value;        // shape.numel() values, row-major
  std::vector<T> grad;         // d loss / d value, same size; filled by Graph::backward
  bool requires_grad = false;  // parameters, and everything computed from one
  bool is_parameter = false;   // kept by Graph::clear()
  bool grad_pending = false;   // Graph::backward has yet to zero (or an op to write) this step's gradient
  std::string name;            // parameters: the model_spec name, e.g. "encoder/layer_0/ffn/linear_0/weight"

  int64_t numel() const { return shape.numel(); }
  int64_t rows() const { return shape.rows(); }
  int cols() const { return shape.cols(); }
  T* data() { return value.data(); }
  const T* data() const { return value.data(); }
  T* grad_data() { return grad.data(); }
};

}  // namespace mt::autograd
