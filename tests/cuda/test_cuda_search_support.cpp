// The small kernels of the device search: the KV-cache row gather of beam
// search, the column set that forbids EOS, the suppressed ids' mask and the
// forced tokens' fill, against plain loops.
#include <cmath>
#include <limits>
#include <vector>

#include <catch2/catch.hpp>

#include "cuda/cuda_test_util.hpp"
#include "kernel_test_util.hpp"
#include "mt/cuda_kernels.h"

namespace mt {
namespace {

using test::DeviceVector;
using test::random_vector;
using test::require_equal;
using test::require_finished;
using test::require_ok;
using test::TestStream;

TEST_CASE("cuda: gather_rows_f32 copies each row's parent in every group", "[cuda][search]") {
  MT_REQUIRE_CUDA_DEVICE();
  TestStream stream;
  const int rows = GENERATE(1, 4, 12), groups = GENERATE(1, 3);
  const size_t row_stride = 37, row_floats = GENERATE(size_t(0), size_t(1), size_t(30), size_t(37));
  const size_t group_stride = rows * row_stride + 5;
  const std::vector<float> src = random_vector(groups * group_stride, 7u + rows, -1.0f, 1.0f);
  std::vector<int32_t> index(rows);
  for (int r = 0; r < rows; ++r) index[r] = (r * 7 + 3) % rows;  // a permutation-ish mix, repeats allowed
  std::vector<float> expected = random_vector(groups * group_stride, 99, -1.0f, 1.0f);  // untouched tails stay
  DeviceVector<float> d_src(src), d_dst(expected);
  for (int g = 0; g < groups; ++g)
    for (int r = 0; r < rows; ++r)
      for (size_t i = 0; i < row_floats; ++i)
        expected[g * group_stride + r * row_stride + i] = src[g * group_stride + index[r] * row_stride + i];
  DeviceVector<int32_t> d_index(index);
  require_ok(gather_rows_f32_cuda(d_src.get(), d_dst.get(), d_index.get(), rows, row_stride, row_floats, groups,
                                  group_stride, stream.get()),
             "gather_rows_f32_cuda");
  require_finished(stream.get(), "gather_rows_f32_cuda");
  INFO("rows " << rows << " groups " << groups << " row_floats " << row_floats);
  require_equal(expected, d_dst.download(), "gather_rows_f32");
}

TEST_CASE("cuda: gather_rows_f32 rejects bad arguments", "[cuda][search]") {
  MT_REQUIRE_CUDA_DEVICE();
  DeviceVector<float> buffer(64);
  DeviceVector<int32_t> index(std::vector<int32_t>{0, 1});
  CHECK(gather_rows_f32_cuda(buffer.get(), buffer.get(), index.get(), 2, 8, 8, 1, 16, nullptr) != 0);  // in place
  CHECK(gather_rows_f32_cuda(buffer.get(), buffer.get() + 32, index.get(), 2, 8, 9, 1, 16, nullptr) != 0);
}

TEST_CASE("cuda: decode_step_end masks EOS below the minimum length and moves positions on", "[cuda][search]") {
  MT_REQUIRE_CUDA_DEVICE();
  TestStream stream;
  const int M = GENERATE(1, 5, 300), min_length = GENERATE(0, 3);
  const int column = 2;
  const size_t ld = 11;
  std::vector<float> x = random_vector(M * ld, 9u + M, -1.0f, 1.0f);
  std::vector<int32_t> positions(M), lengths(M);
  for (int m = 0; m < M; ++m) positions[m] = m % 5, lengths[m] = m % 5 + 1;
  DeviceVector<float> d_x(x);
  DeviceVector<int32_t> d_positions(positions), d_lengths(lengths), d_min(std::vector<int32_t>{min_length});
  const float value = -std::numeric_limits<float>::infinity();
  for (int m = 0; m < M; ++m) {
    if (positions[m] < min_length) x[m * ld + column] = value;
    ++positions[m], ++lengths[m];
  }
  require_ok(decode_step_end_cuda(d_x.get(), ld, M, column, value, d_min.get(), d_positions.get(), d_lengths.get(),
                                  stream.get()),
             "decode_step_end_cuda");
  require_finished(stream.get(), "decode_step_end_cuda");
  INFO("M " << M << " min_length " << min_length);
  require_equal(x, d_x.download(), "decode_step_end logits");
  CHECK(d_positions.download() == positions);
  CHECK(d_lengths.download() == lengths);
}

TEST_CASE("cuda: mask_columns_f32 sets the listed columns of every row, and nothing else", "[cuda][search]") {
  MT_REQUIRE_CUDA_DEVICE();
  TestStream stream;
  const int M = GENERATE(1, 7, 300);
  const std::vector<int32_t> columns =
      GENERATE(std::vector<int32_t>{0}, std::vector<int32_t>{3, 10}, std::vector<int32_t>{1, 2, 4, 8, 9});
  const size_t ld = 11;
  std::vector<float> x = random_vector(M * ld, 5u + M, -1.0f, 1.0f);
  DeviceVector<float> d_x(x);
  DeviceVector<int32_t> d_columns(columns);
  const float value = -std::numeric_limits<float>::infinity();
  for (int m = 0; m < M; ++m)
    for (const int32_t c : columns) x[m * ld + c] = value;
  require_ok(mask_columns_f32_cuda(d_x.get(), ld, M, d_columns.get(), int(columns.size()), value, stream.get()),
             "mask_columns_f32_cuda");
  require_finished(stream.get(), "mask_columns_f32_cuda");
  INFO("M " << M << ", " << columns.size() << " columns");
  require_equal(x, d_x.download(), "mask_columns_f32");
  CHECK(mask_columns_f32_cuda(d_x.get(), ld, -1, d_columns.get(), 1, value, stream.get()) != 0);
  CHECK(mask_columns_f32_cuda(d_x.get(), 0, M, d_columns.get(), 1, value, stream.get()) != 0);
  CHECK(mask_columns_f32_cuda(d_x.get(), ld, M, d_columns.get(), 0, value, stream.get()) == 0);  // nothing to do
}

TEST_CASE("cuda: fill_i32 writes one value n times", "[cuda][search]") {
  MT_REQUIRE_CUDA_DEVICE();
  TestStream stream;
  const int n = GENERATE(1, 3, 257);
  DeviceVector<int32_t> d_x(std::vector<int32_t>(size_t(n) + 2, -5));
  require_ok(fill_i32_cuda(d_x.get(), n, 42, stream.get()), "fill_i32_cuda");
  require_finished(stream.get(), "fill_i32_cuda");
  std::vector<int32_t> expected(size_t(n), 42);
  expected.push_back(-5), expected.push_back(-5);  // past n: untouched
  CHECK(d_x.download() == expected);
  CHECK(fill_i32_cuda(d_x.get(), -1, 0, stream.get()) != 0);
}

}  // namespace
}  // namespace mt
