// Dumps what check_against_torch.py compares with an independent PyTorch
// Transformer: for each model variant, every parameter, the batch, our
// logits, loss and gradients, and the losses of 10 Adam steps.
//
// Usage: dump_trainer OUT_DIR
// Writes OUT_DIR/<variant>/ with manifest.txt and one raw little-endian file
// per array. manifest.txt, one record a line, space-separated:
//   config <key> <value>                    model and run settings
//   tensor <kind> <name> <file> <dtype> <rank> <dims...>
//     kind: param (initial values), grad (d summed loss / d param at the
//     initial values), batch (int32 ids and lengths), logits ([B*T, V] float32)
//   scalar <name> <value>                   loss_sum, tokens, adam_loss_<k>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <type_traits>
#include <vector>

#include "model/transformer_model.hpp"
#include "mt/model_spec.hpp"
#include "optim/adam.hpp"

using namespace mt;
using namespace mt::train;

namespace {

constexpr double kLabelSmoothing = 0.1;
constexpr double kPeakLr = 2e-3;
constexpr int kWarmup = 4;
constexpr int kAdamSteps = 10;

struct Variant {
  const char* name;
  bool pre_norm;
  Activation activation;
  bool tied;  // shared source/target embeddings and tied output projection
  // What converted models say (mt_train --init): the model's own position
  // table, another embedding scale, decoding from pad, sources without EOS.
  bool converted = false;
};

ModelConfig check_config(const Variant& v) {
  ModelConfig c;
  c.encoder_layers = 2;
  c.decoder_layers = 2;
  c.d_model = 32;
  c.heads = 4;
  c.d_ff = 64;
  c.source_vocab_size = c.target_vocab_size = 50;
  c.max_positions = 64;
  c.pre_norm = v.pre_norm;
  c.activation = v.activation;
  c.shared_embeddings = c.tied_output = v.tied;
  if (v.converted) {
    c.stored_positions = true;
    c.embedding_scale = 2.5f;
    c.decoder_start_id = c.pad_id;
    c.source_eos = false;
  }
  return c;
}

// Four pairs of different lengths (padding on both sides), ids in [4, 50).
std::vector<SentencePair> corpus(int vocab) {
  auto ids = [&](std::vector<int> v) {
    for (int& x : v) x = 4 + x % (vocab - 4);
    return std::vector<int32_t>(v.begin(), v.end());
  };
  return {{ids({5, 9, 14, 3, 8, 21, 30}), ids({7, 2, 11}), 1},
          {ids({6, 1}), ids({3, 12, 4, 9, 10, 2, 40, 17}), 2},
          {ids({44, 13, 27, 5}), ids({19, 33, 8, 1, 45}), 3},
          {ids({2, 2, 38, 16, 11, 9, 1, 25, 7}), ids({28, 6}), 4}};
}

class Writer {
 public:
  explicit Writer(std::filesystem::path dir) : dir_(std::move(dir)), manifest_(dir_ / "manifest.txt") {}
  bool ok() const { return bool(manifest_); }

  void config(const std::string& key, const std::string& value) {
    manifest_ << "config " << key << ' ' << value << '\n';
  }
  void scalar(const std::string& name, double value) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.17g", value);
    manifest_ << "scalar " << name << ' ' << buf << '\n';
  }
  template <class E>
  void tensor(const std::string& kind, const std::string& name, const std::vector<int>& dims, const E* data, size_t n) {
    std::string file = kind + "." + name + ".bin";
    for (char& ch : file)
      if (ch == '/') ch = '.';
    std::ofstream(dir_ / file, std::ios::binary)
        .write(reinterpret_cast<const char*>(data), std::streamsize(n * sizeof(E)));
    manifest_ << "tensor " << kind << ' ' << name << ' ' << file << ' ' << (std::is_same_v<E, float> ? "f32" : "i32")
              << ' ' << dims.size();
    for (int d : dims) manifest_ << ' ' << d;
    manifest_ << '\n';
  }

 private:
  std::filesystem::path dir_;
  std::ofstream manifest_;
};

std::vector<int> dims_of(const autograd::Shape& s) { return {s.dims.begin(), s.dims.begin() + s.rank}; }

int dump(const Variant& v, const std::filesystem::path& root) {
  const ModelConfig config = check_config(v);
  const std::filesystem::path dir = root / v.name;
  std::filesystem::create_directories(dir);
  Writer w(dir);
  if (!w.ok()) {
    std::fprintf(stderr, "dump_trainer: cannot write %s\n", (dir / "manifest.txt").c_str());
    return 1;
  }
  w.config("encoder_layers", std::to_string(config.encoder_layers));
  w.config("decoder_layers", std::to_string(config.decoder_layers));
  w.config("d_model", std::to_string(config.d_model));
  w.config("heads", std::to_string(config.heads));
  w.config("d_ff", std::to_string(config.d_ff));
  w.config("source_vocab_size", std::to_string(config.source_vocab_size));
  w.config("target_vocab_size", std::to_string(config.target_vocab_size));
  w.config("pre_norm", config.pre_norm ? "1" : "0");
  w.config("activation", config.activation == Activation::gelu    ? "gelu"
                         : config.activation == Activation::swish ? "swish"
                                                                  : "relu");
  w.config("embedding_scale", std::to_string(double(config.embedding_multiplier())));
  w.config("shared_embeddings", config.shared_embeddings ? "1" : "0");
  w.config("tied_output", config.tied_output ? "1" : "0");
  w.config("layer_norm_epsilon", std::to_string(double(config.layer_norm_epsilon)));
  w.config("pad_id", std::to_string(config.pad_id));
  w.config("label_smoothing", std::to_string(kLabelSmoothing));
  w.config("lr", std::to_string(kPeakLr));
  w.config("warmup", std::to_string(kWarmup));
  w.config("schedule", "inverse_sqrt");

  autograd::Graph<float> g(1);
  TransformerModel<float> model(g, config);
  model.initialize(1234);
  if (config.stored_positions) {
    // A table unlike the sinusoid (as a converted model's may be): the trainer's
    // initialisation, exported, each row shifted by a position-dependent offset.
    std::vector<float> table = model.positions();
    for (size_t i = 0; i < table.size(); ++i) table[i] += 0.01f * float(i % 97);
    const std::filesystem::path file = dir / "positions.mtm";
    ModelWriter writer(config);
    Status st;
    for (const TensorSpec& spec : model_tensor_specs(config)) {
      const std::vector<float>& values =
          spec.role == TensorRole::positions ? table : model.parameter(spec.name)->value;
      if (st.ok()) st = writer.add_tensor(spec.name, spec.shape, spec.layout, values);
    }
    if (st.ok()) st = writer.write(file.string());
    auto loaded = Model::load(file.string());
    if (st.ok()) st = loaded ? model.initialize_from(*loaded.value()) : loaded.status();
    if (!st.ok()) {
      std::fprintf(stderr, "dump_trainer: %s: %s\n", file.c_str(), st.message());
      return 1;
    }
    w.tensor("const", "position_encoding", {config.max_positions, config.d_model}, model.positions().data(),
             model.positions().size());
  }
  for (const autograd::Tensor<float>* p : g.parameters())
    w.tensor("param", p->name, dims_of(p->shape), p->data(), size_t(p->numel()));

  const auto pairs = corpus(config.target_vocab_size);
  const Batch batch =
      assemble_batch(pairs, {0, 1, 2, 3}, {config.pad_id, config.start_id(), config.eos_id, config.source_eos});
  w.config("B", std::to_string(batch.B));
  w.config("S", std::to_string(batch.S));
  w.config("T", std::to_string(batch.T));
  w.tensor("batch", "source", {batch.B, batch.S}, batch.source.data(), batch.source.size());
  w.tensor("batch", "source_lengths", {batch.B}, batch.source_lengths.data(), batch.source_lengths.size());
  w.tensor("batch", "target_input", {batch.B, batch.T}, batch.target_input.data(), batch.target_input.size());
  w.tensor("batch", "target_output", {batch.B, batch.T}, batch.target_output.data(), batch.target_output.size());
  w.tensor("batch", "target_lengths", {batch.B}, batch.target_lengths.data(), batch.target_lengths.size());

  ForwardOptions o;
  o.label_smoothing = kLabelSmoothing;
  AdamOptions ao;
  ao.schedule = Schedule::inverse_sqrt;
  ao.lr = kPeakLr;
  ao.warmup = kWarmup;
  Adam<float> adam(g, ao);
  for (int step = 0; step < kAdamSteps; ++step) {
    g.clear();
    g.zero_grad();
    // model.loss() is forward + cross_entropy; spelled out to keep the logits.
    autograd::Tensor<float>* logits = model.forward(batch, o);
    const autograd::CrossEntropy<float> ce =
        autograd::cross_entropy(g, logits, batch.target_output, config.pad_id, o.label_smoothing);
    const double loss_sum = double(ce.loss->value[0]);
    g.backward(ce.loss);
    if (step == 0) {
      w.tensor("logits", "logits", dims_of(logits->shape), logits->data(), size_t(logits->numel()));
      w.scalar("loss_sum", loss_sum);
      w.scalar("tokens", double(ce.tokens));
      w.scalar("nll_sum", ce.nll);
      for (const autograd::Tensor<float>* p : g.parameters()) {
        std::vector<float> grad = p->grad;
        grad.resize(size_t(p->numel()), 0.0f);  // never used: no gradient
        w.tensor("grad", p->name, dims_of(p->shape), grad.data(), grad.size());
      }
    }
    w.scalar("adam_loss_" + std::to_string(step), loss_sum / double(ce.tokens));
    adam.step(1.0 / double(ce.tokens));  // the mean loss's gradient
  }
  std::printf("dump_trainer: %s: %zu parameters, %d target tokens -> %s\n", v.name, g.parameters().size(),
              batch.target_tokens, dir.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: dump_trainer OUT_DIR\n");
    return 2;
  }
  const Variant variants[] = {
      {"postnorm_relu_tied", false, Activation::relu, true},
      {"postnorm_relu_untied", false, Activation::relu, false},
      {"prenorm_gelu_tied", true, Activation::gelu, true},
      {"prenorm_gelu_untied", true, Activation::gelu, false},
      {"postnorm_swish_tied_converted", false, Activation::swish, true, true},
  };
  try {
    for (const Variant& v : variants)
      if (int rc = dump(v, argv[1]); rc != 0) return rc;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dump_trainer: %s\n", e.what());
    return 1;
  }
  return 0;
}
