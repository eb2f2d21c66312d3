// The weights' device block as it is built on the host (weight_block): the
// fp16 form must hold every weight of the fp32 form rounded to half, tied
// and shared tensors once, biases and norms unchanged. No device needed:
// nothing is allocated or copied.
#include <cstdint>
#include <cstring>
#include <vector>

#include <catch2/catch.hpp>

#include "cuda/cuda_weights.hpp"
#include "mt/half.h"
#include "cuda/cuda_runtime_util.hpp"
#include "test_util.hpp"

using namespace mt;
using detail::CudaLinear;
using detail::CudaModelWeights;
using detail::CudaWeightForm;

namespace {

// A made-up device address for the block: pointers into it are offsets.
const std::byte* const kBase = reinterpret_cast<const std::byte*>(uintptr_t(1) << 40);

struct Block {
  CudaModelWeights d;
  std::vector<std::byte> bytes;

  Block(const Model& model, CudaWeightForm form) { bytes = detail::weight_block(model, form, kBase, &d); }

  template <class T>
  const T* host(const T* device) const {
    REQUIRE(device != nullptr);
    const size_t offset = size_t(reinterpret_cast<const std::byte*>(device) - kBase);
    REQUIRE(offset < bytes.size());
    return reinterpret_cast<const T*>(bytes.data() + offset);
  }
};

std::vector<const CudaLinear*> linears(const CudaModelWeights& d) {
  std::vector<const CudaLinear*> all = {&d.output};
  for (const auto& l : d.encoder) all.insert(all.end(), {&l.qkv, &l.out, &l.ffn_0, &l.ffn_1});
  for (const auto& l : d.decoder)
    all.insert(all.end(), {&l.qkv, &l.self_out, &l.cross_q, &l.cross_kv, &l.cross_out, &l.ffn_0, &l.ffn_1});
  return all;
}

// Every element of the half table is the fp32 table's rounded to half.
void require_rounded(const Block& half, const uint16_t* h, const Block& full, const float* f, size_t count) {
  const uint16_t* got = half.host(h);
  const float* want = full.host(f);
  for (size_t i = 0; i < count; ++i) {
    if (got[i] != f32_to_f16_bits(want[i]))
      FAIL("element " << i << ": " << want[i] << " became 0x" << std::hex << got[i]);
  }
}

void require_same_floats(const Block& a, const float* x, const Block& b, const float* y, size_t count) {
  if (x == nullptr || y == nullptr) {
    REQUIRE(x == y);
    return;
  }
  REQUIRE(std::memcmp(a.host(x), b.host(y), count * sizeof(float)) == 0);
}

}  // namespace

TEST_CASE("cuda weights: the fp16 block is the fp32 block rounded to half", "[cuda][fp16]") {
  for (const char* path : {"models/en-de-tiny.mtm", "models/en-de-tiny.int8.mtm"}) {
    INFO(path);
    auto model = test::load_model(path);
    const ModelConfig& config = model->config();
    const Block full(*model, CudaWeightForm::f32), half(*model, CudaWeightForm::f16);
    CHECK(half.d.form == CudaWeightForm::f16);
    const auto a = linears(full.d), b = linears(half.d);
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      INFO("linear " << i << " of " << a.size() << " (0: the output layer)");
      REQUIRE(b[i]->is_f16());
      REQUIRE(b[i]->weight == nullptr);
      REQUIRE((b[i]->n == a[i]->n && b[i]->k == a[i]->k));
      require_rounded(half, b[i]->f16, full, a[i]->weight, size_t(a[i]->n) * size_t(a[i]->k));
      // Biases stay fp32; an int8 model's calibrated ones are restored alike.
      require_same_floats(full, a[i]->bias, half, b[i]->bias, size_t(a[i]->n));
    }
    const size_t C = size_t(config.d_model);
    require_rounded(half, half.d.target_embedding.f16, full, full.d.target_embedding.f32,
                    size_t(config.target_vocab_size) * C);
    require_rounded(half, half.d.source_embedding.f16, full, full.d.source_embedding.f32,
                    size_t(config.source_vocab_size) * C);
    CHECK(half.d.target_embedding.f32 == nullptr);
    // Tied and shared tensors are stored once.
    if (config.tied_output) CHECK(half.d.output.f16 == half.d.target_embedding.f16);
    if (config.shared_embeddings) CHECK(half.d.source_embedding.f16 == half.d.target_embedding.f16);
    for (size_t l = 0; l < half.d.decoder.size(); ++l) {
      require_same_floats(full, full.d.decoder[l].ffn_norm.gamma, half, half.d.decoder[l].ffn_norm.gamma, C);
      require_same_floats(full, full.d.decoder[l].self_norm.beta, half, half.d.decoder[l].self_norm.beta, C);
    }
    // Weights are most of the model: half of them is a little over half of it.
    INFO("fp16 block " << half.bytes.size() << " bytes, fp32 block " << full.bytes.size());
    CHECK(half.bytes.size() * 10 < full.bytes.size() * 6);
  }
}

TEST_CASE("cuda weights: the int8 block keeps int8 layers int8 at a quarter of fp32", "[cuda][int8]") {
  auto model = test::load_model("models/en-de-tiny.int8.mtm");
  const Block full(*model, CudaWeightForm::f32), int8(*model, CudaWeightForm::int8);
  for (const CudaLinear* l : linears(int8.d)) {
    REQUIRE(l->is_int8());
    REQUIRE(l->i8.ld % 4 == 0);
  }
  CHECK(int8.d.target_embedding.i8 != nullptr);
  INFO("int8 block " << int8.bytes.size() << " bytes, fp32 block " << full.bytes.size());
  CHECK(int8.bytes.size() * 3 < full.bytes.size());
}
