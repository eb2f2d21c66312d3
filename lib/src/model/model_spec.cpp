#include "mt/model_spec.hpp"

#include "mt/kernels.h"

namespace mt {

size_t TensorSpec::element_count() const {
  size_t n = 1;
  for (uint32_t d : shape) n *= d;
  return n;
}

size_t TensorSpec::f32_bytes() const {
  if (layout == Layout::packed_n16) return packed_size(int(shape[0]), int(shape[1])) * sizeof(float);
  return element_count() * sizeof(float);
}

namespace {

struct SpecList {
  std::vector<TensorSpec> specs;

  void linear(const std::string& scope, uint32_t out, uint32_t in) {
    specs.push_back({scope + "/weight", {out, in}, Layout::packed_n16, TensorRole::weight});
    specs.push_back({scope + "/bias", {out}, Layout::row_major, TensorRole::bias});
  }
  void norm(const std::string& scope, uint32_t c) {
    specs.push_back({scope + "/gamma", {c}, Layout::row_major, TensorRole::norm_gamma});
    specs.push_back({scope + "/beta", {c}, Layout::row_major, TensorRole::norm_beta});
  }
  void embedding(const std::string& name, uint32_t v, uint32_t c) {
    specs.push_back({name, {v, c}, Layout::packed_n16, TensorRole::embedding});
  }
};

}  // namespace

std::vector<TensorSpec> model_tensor_specs(const ModelConfig& cfg) {
  const auto C = uint32_t(cfg.d_model), F = uint32_t(cfg.d_ff);
  SpecList s;
  s.embedding("target_embedding", uint32_t(cfg.target_vocab_size), C);
  if (!cfg.shared_embeddings) s.embedding("source_embedding", uint32_t(cfg.source_vocab_size), C);
  if (!cfg.tied_output) {
    s.specs.push_back({"output/weight", {uint32_t(cfg.target_vocab_size), C}, Layout::packed_n16, TensorRole::weight});
  }
  s.specs.push_back({"output/bias", {uint32_t(cfg.target_vocab_size)}, Layout::row_major, TensorRole::bias});
  if (cfg.stored_positions) {
    s.specs.push_back(
        {"position_encoding", {uint32_t(cfg.max_positions), C}, Layout::row_major, TensorRole::positions});
  }

  for (int i = 0; i < cfg.encoder_layers; ++i) {
    const std::string layer = "encoder/layer_" + std::to_string(i);
    s.linear(layer + "/self_attention/qkv", 3 * C, C);
    s.linear(layer + "/self_attention/out", C, C);
    s.norm(layer + "/self_attention/norm", C);
    s.linear(layer + "/ffn/linear_0", F, C);
    s.linear(layer + "/ffn/linear_1", C, F);
    s.norm(layer + "/ffn/norm", C);
  }
  for (int i = 0; i < cfg.decoder_layers; ++i) {
    const std::string layer = "decoder/layer_" + std::to_string(i);
    s.linear(layer + "/self_attention/qkv", 3 * C, C);
    s.linear(layer + "/self_attention/out", C, C);
    s.norm(layer + "/self_attention/norm", C);
    s.linear(layer + "/cross_attention/q", C, C);
    s.linear(layer + "/cross_attention/kv", 2 * C, C);
    s.linear(layer + "/cross_attention/out", C, C);
    s.norm(layer + "/cross_attention/norm", C);
    s.linear(layer + "/ffn/linear_0", F, C);
    s.linear(layer + "/ffn/linear_1", C, F);
    s.norm(layer + "/ffn/norm", C);
  }
  if (cfg.pre_norm) {
    s.norm("encoder/norm", C);
    s.norm("decoder/norm", C);
  }
  return std::move(s.specs);
}

}  // namespace mt
