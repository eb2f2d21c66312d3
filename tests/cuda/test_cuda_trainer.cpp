// The trainer on a GPU against the CPU trainer: every autograd op's forward
// and backward on random inputs, a whole model's gradient, 20 Adam steps of
// a tiny model, and the Trainer with Device::cuda. Every case skips (one
// WARN line) without a device; MT_REQUIRE_CUDA_DEVICE=1 makes that a failure.
//
// Tolerances: both sides compute in fp32 with different summation orders
// (cuBLAS vs the packed CPU GEMM, block reductions vs serial loops), about
// 1e-6 relative per op; 1e-4 per element for forwards and 1e-3 for
// gradients (which chain several ops) leave a wide margin while any wrong
// formula or index is off by far more.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "autograd/ops.hpp"
#include "cuda/adam.hpp"
#include "cuda/cuda_transformer_model.hpp"
#include "cuda/nccl_gradient_sum.hpp"
#include "cuda/ops.hpp"
#include "cuda_test_util.hpp"
#include "optim/adam.hpp"
#include "trainer.hpp"

using namespace mt;
using namespace mt::train;
namespace ag = mt::autograd;
namespace gpu = mt::autograd::gpu;

namespace {

std::vector<float> random_values(size_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// sqrt(sum (ref - got)^2 / sum ref^2); the absolute error when ref is zero.
double relative_l2(const std::vector<float>& ref, const std::vector<float>& got) {
  REQUIRE(ref.size() == got.size());
  double e = 0, r = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double d = double(ref[i]) - got[i];
    e += d * d;
    r += double(ref[i]) * ref[i];
  }
  return r == 0 ? std::sqrt(e) : std::sqrt(e / r);
}

// Runs op on a CPU graph and a device graph with the same random inputs
// (parameters, so each gets a gradient), compares the outputs, then
// backpropagates sum(y * R) for a random R and compares every input's
// gradient. op(graph, inputs) uses unqualified op names: it runs on both.
template <class Op>
void check_op(const std::string& what, const std::vector<ag::Shape>& shapes, Op op, uint64_t seed = 1, float lo = -1.0f,
              float hi = 1.0f) {
  INFO(what);
  ag::Graph<float> cg(1);
  gpu::Graph dg;
  std::vector<ag::Tensor<float>*> ci;
  std::vector<gpu::Tensor*> di;
  for (size_t k = 0; k < shapes.size(); ++k) {
    const std::vector<float> v = random_values(size_t(shapes[k].numel()), seed * 101 + k, lo, hi);
    ci.push_back(cg.parameter("p" + std::to_string(k), shapes[k]));
    ci.back()->value = v;
    di.push_back(dg.parameter("p" + std::to_string(k), shapes[k]));
    dg.upload(di.back(), v);
  }
  ag::Tensor<float>* cy = op(cg, ci);
  gpu::Tensor* dy = op(dg, di);
  REQUIRE(cy->shape == dy->shape);
  test::require_close(cy->value, dg.download(dy), 1e-4, what + " forward");
  const std::vector<float> r = random_values(size_t(cy->numel()), seed * 7919);
  cg.backward(sum(cg, mul(cg, cy, cg.input(cy->shape, r))));
  dg.backward(sum(dg, mul(dg, dy, dg.input(dy->shape, r))));
  for (size_t k = 0; k < shapes.size(); ++k)
    test::require_close(ci[k]->grad, dg.download_grad(di[k]), 1e-3, what + " gradient of input " + std::to_string(k));
}

}  // namespace

TEST_CASE("gpu linear and matmuls match the CPU", "[cuda_trainer]") {
  MT_REQUIRE_CUDA_DEVICE();
  check_op("linear", {{2, 3, 5}, {7, 5}, {7}}, [](auto& g, auto& in) { return linear(g, in[0], in[1], in[2]); });
  check_op("linear without bias", {{6, 33}, {17, 33}}, [](auto& g, auto& in) { return linear(g, in[0], in[1]); });
  check_op("matmul", {{4, 6}, {6, 9}}, [](auto& g, auto& in) { return matmul(g, in[0], in[1]); });
  check_op("matmul b^T", {{4, 6}, {9, 6}}, [](auto& g, auto& in) { return matmul(g, in[0], in[1], true); });
  check_op("batched_matmul", {{3, 4, 5}, {3, 5, 2}}, [](auto& g, auto& in) { return batched_matmul(g, in[0], in[1]); });
  check_op("batched_matmul b^T", {{3, 4, 5}, {3, 2, 5}},
           [](auto& g, auto& in) { return batched_matmul(g, in[0], in[1], true); });
}

TEST_CASE("gpu layer_norm matches the CPU", "[cuda_trainer]") {
  MT_REQUIRE_CUDA_DEVICE();
  const int C = GENERATE(1, 7, 33, 512, 515);
  check_op(
      "layer_norm C=" + std::to_string(C), {{9, C}, {C}, {C}},
      [](auto& g, auto& in) { return layer_norm(g, in[0], in[1], in[2], 1e-5); }, 3, 0.5f, 1.5f);
}

TEST_CASE("gpu attention matches the CPU (padding and causal masks)", "[cuda_trainer]") {
  MT_REQUIRE_CUDA_DEVICE();
  const int B = 3, L = 6, C = 16, H = 4;
  const std::vector<int> lengths{6, 4, 1};
  const ag::SeqBatch seqs{B, L, lengths};
  for (bool causal : {false, true}) {
    check_op(
        causal ? "causal self_attention" : "self_attention", {{B * L, 3 * C}},
        [&](auto& g, auto& in) { return self_attention(g, in[0], seqs, H, causal); }, causal ? 5 : 6, -2.0f, 2.0f);
  }
  const int Lk = 7;
  const std::vector<int> k_len{7, 2, 5};
  const ag::SeqBatch keys{B, Lk, k_len};
  check_op(
      "cross_attention", {{B * L, C}, {B * Lk, 2 * C}},
      [&](auto& g, auto& in) { return cross_attention(g, in[0], seqs, in[1], keys, H); }, 7, -2.0f, 2.0f);
  // No lengths: every position valid; a longer sequence than a block's threads.
  const ag::SeqBatch full{2, 150, {}};
  check_op(
      "self_attention L=150", {{2 * 150, 3 * 32}},
      [&](auto& g, auto& in) { return self_attention(g, in[0], full, 2, true); }, 8);
}

TEST_CASE("gpu embedding matches the CPU", "[cuda_trainer]") {
  MT_REQUIRE_CUDA_DEVICE();
  const std::vector<int> ids{3, 0, 7, 3, 3, 1, 9, 2};  // repeats: the scatter-add
  check_op("embedding with positions", {{10, 6}},
           [&](auto& g, auto& in) { return embedding(g, in[0], ids, 4, std::sqrt(6.0)); });
  check_op("embedding without positions", {{10, 5}},
           [&](auto& g, auto& in) { return embedding(g, in[0], ids, 2, 0.5, false); });
}

TEST_CASE("gpu elementwise ops and activations match the CPU", "[cuda_trainer]") {
  MT_REQUIRE_CUDA_DEVICE();
  const ag::Shape s{37, 41};
  check_op("add", {s, s}, [](auto& g, auto& in) { return add(g, in[0], in[1]); });
  check_op("add_bias", {s, {41}}, [](auto& g, auto& in) { return add_bias(g, in[0], in[1]); });
  check_op("mul", {s, s}, [](auto& g, auto& in) { return mul(g, in[0], in[1]); });
  check_op("scale", {s}, [](auto& g, auto& in) { return scale(g, in[0], -0.75); });
  check_op("sum", {s}, [](auto& g, auto& in) { return sum(g, in[0]); });
  check_op("relu", {s}, [](auto& g, auto& in) { return relu(g, in[0]); });
  check_op(
      "gelu", {s}, [](auto& g, auto& in) { return gelu(g, in[0]); }, 1, -4.0f, 4.0f);
  check_op(
      "swish", {s}, [](auto& g, auto& in) { return swish(g, in[0]); }, 1, -4.0f, 4.0f);
  check_op(
      "softmax", {{5, 300}}, [](auto& g, auto& in) { return softmax(g, in[0]); }, 1, -4.0f, 4.0f);
}

TEST_CASE("gpu dropout draws the CPU's masks", "[cuda_trainer]") {
  MT_REQUIRE_CUDA_DEVICE();
  // Same seed and call order: the same counter-based masks, so the same values.
  check_op("dropout", {{33, 65}}, [](auto& g, auto& in) {
    g.set_seed(42);
    dropout(g, in[0], 0.5);  // advances the stream, as in a model
    return dropout(g, in[0], 0.3);
  });
}

TEST_CASE("gpu label-smoothed cross-entropy matches the CPU", "[cuda_trainer]") {
  MT_REQUIRE_CUDA_DEVICE();
  const int N = 7, V = 301, pad = 0;
  const std::vector<int> targets{5, 0, 300, 1, 0, 17, 2};
  const std::vector<float> z = random_values(size_t(N) * V, 9, -3.0f, 3.0f);
  for (double eps : {0.0, 0.1}) {
    INFO("label smoothing " << eps);
    ag::Graph<float> cg(1);
    gpu::Graph dg;
    ag::Tensor<float>* cz = cg.parameter("z", {N, V});
    cz->value = z;
    gpu::Tensor* dz = dg.parameter("z", {N, V});
    dg.upload(dz, z);
    const auto c = cross_entropy(cg, cz, targets, pad, eps);
    const auto d = cross_entropy(dg, dz, targets, pad, eps);
    CHECK(c.tokens == d.tokens);
    CHECK(d.nll == Approx(c.nll).epsilon(1e-5));
    CHECK(dg.download(d.loss)[0] == Approx(c.loss->value[0]).epsilon(1e-5));
    // A seed other than 1 checks that d loss is read from the device.
    cg.backward(c.loss, 0.25f);
    dg.backward(d.loss, 0.25f);
    test::require_close(cz->grad, dg.download_grad(dz), 1e-4, "cross_entropy gradient");
  }
}

namespace {

ModelConfig small_config(bool pre_norm) {
  ModelConfig c;
  c.encoder_layers = 2;
  c.decoder_layers = 2;
  c.d_model = 32;
  c.heads = 4;
  c.d_ff = 48;
  c.source_vocab_size = c.target_vocab_size = 61;
  c.max_positions = 64;
  c.shared_embeddings = c.tied_output = !pre_norm;  // both layouts of the embeddings
  c.pre_norm = pre_norm;
  c.activation = pre_norm ? Activation::gelu : Activation::relu;
  return c;
}

// Random sentence pairs of 2..11 tokens (ids past the specials).
std::vector<SentencePair> random_pairs(int count, int vocab, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> len(2, 11), id(4, vocab - 1);
  std::vector<SentencePair> pairs;
  for (int i = 0; i < count; ++i) {
    SentencePair p;
    for (int k = len(rng); k > 0; --k) p.source.push_back(id(rng));
    for (int k = len(rng); k > 0; --k) p.target.push_back(id(rng));
    p.line = uint32_t(i + 1);
    pairs.push_back(std::move(p));
  }
  return pairs;
}

SpecialIds specials(const ModelConfig& c) { return {c.pad_id, c.bos_id, c.eos_id}; }

}  // namespace

TEST_CASE("a whole model's gradient on the GPU matches the CPU", "[cuda_trainer]") {
  MT_REQUIRE_CUDA_DEVICE();
  for (bool pre_norm : {false, true}) {
    INFO((pre_norm ? "pre-norm, gelu, separate embeddings" : "post-norm, relu, tied embeddings"));
    const ModelConfig config = small_config(pre_norm);
    ag::Graph<float> cg(1);
    TransformerModel<float> cpu(cg, config);
    cpu.initialize(11);
    gpu::Graph dg;
    CudaTransformerModel dev(dg, config);
    dev.upload_from(cpu);
    const auto corpus = random_pairs(6, config.target_vocab_size, 3);
    const Batch batch = assemble_batch(corpus, {0, 1, 2, 3, 4, 5}, specials(config));
    ForwardOptions o;
    o.label_smoothing = 0.1;
    o.dropout = 0.1;  // the same masks on both devices
    cg.set_seed(4);
    dg.set_seed(4);
    const auto c = cpu.loss(batch, o);
    const auto d = dev.loss(batch, o);
    CHECK(d.tokens == c.tokens);
    CHECK(d.value == Approx(double(c.loss->value[0])).epsilon(1e-4));
    cg.backward(c.loss);
    dg.backward(d.loss);
    for (const ag::Tensor<float>* p : cg.parameters()) {
      INFO(p->name);
      CHECK(relative_l2(p->grad, dg.download_grad(dev.parameter(p->name))) < 1e-3);
    }
  }
}

TEST_CASE("20 Adam steps on the GPU follow the CPU's losses", "[cuda_trainer]") {
  MT_REQUIRE_CUDA_DEVICE();
  const ModelConfig config = small_config(false);
  AdamOptions adam;
  adam.lr = 1e-3;
  adam.warmup = 5;
  adam.clip_norm = 1.0;  // on: the norm (reduced on the device) decides the scale
  adam.weight_decay = 0.01;
  ag::Graph<float> cg(1);
  TransformerModel<float> cpu(cg, config);
  cpu.initialize(21);
  Adam<float> cpu_adam(cg, adam);
  gpu::Graph dg;
  CudaTransformerModel dev(dg, config);
  dev.upload_from(cpu);
  gpu::Adam dev_adam(dg, adam);
  const auto corpus = random_pairs(64, config.target_vocab_size, 5);
  BatchingOptions bo;
  bo.max_tokens = 120;
  const auto batches = make_batches(corpus, bo, 9);
  ForwardOptions o;
  o.label_smoothing = 0.1;  // dropout 0
  for (int step = 0; step < 20; ++step) {
    const Batch batch = assemble_batch(corpus, batches[size_t(step) % batches.size()], specials(config));
    cg.clear();
    cg.zero_grad();
    const auto c = cpu.loss(batch, o);
    cg.backward(c.loss);
    const double cpu_norm = cpu_adam.step(1.0 / double(c.tokens));
    dg.clear();
    dg.zero_grad();
    const auto d = dev.loss(batch, o);
    dg.backward(d.loss);
    const double dev_norm = dev_adam.step(1.0 / double(d.tokens));
    INFO("step " << step + 1);
    // Losses: the two models drift apart only by rounding (~1e-6 per op,
    // compounded over 20 updates); 1e-3 relative is far below what a wrong
    // gradient or update does to the loss within a few steps.
    CHECK(d.value / double(d.tokens) == Approx(double(c.loss->value[0]) / double(c.tokens)).epsilon(1e-3));
    CHECK(dev_norm == Approx(cpu_norm).epsilon(1e-3));
  }
  CHECK(dev_adam.steps() == 20);
  // Parameters: Adam moves each by about lr per step whatever the gradient's
  // size, so an element whose gradient is near zero may move differently on
  // the two devices (its sign decided by rounding). Most must agree closely
  // and every one within the 20 x 2 lr such a flip can cost. On an H100,
  // 156 of 40,605 (0.38%) differed by more than 1e-4 while all 20 losses
  // agreed to 1e-3: the bound is 1%, room for rounding but not for a wrong
  // update, which moves every element of its tensor.
  size_t total = 0, loose = 0;
  for (const ag::Tensor<float>* p : cg.parameters()) {
    const std::vector<float> got = dg.download(dev.parameter(p->name));
    for (size_t i = 0; i < got.size(); ++i) {
      const double diff = std::fabs(double(got[i]) - p->value[i]);
      ++total;
      if (diff > 1e-4 * (1.0 + std::fabs(p->value[i]))) ++loose;
      INFO(p->name << "[" << i << "]");
      REQUIRE(diff < 20 * 2 * adam.lr);
    }
  }
  INFO(loose << " of " << total << " parameters differ by more than 1e-4");
  CHECK(loose * 100 <= total);
}

TEST_CASE("the Trainer with Device::cuda follows the CPU Trainer, checkpoints included", "[cuda_trainer]") {
  MT_REQUIRE_CUDA_DEVICE();
  TrainerOptions o;
  o.model = small_config(false);
  o.adam.lr = 1e-3;
  o.adam.warmup = 5;
  o.batching.max_tokens = 120;
  o.dropout = 0.1;  // the devices draw the same masks
  o.seed = 3;
  const auto corpus = random_pairs(48, o.model.target_vocab_size, 8);
  Trainer cpu(o, corpus);
  o.device = Device::cuda;
  Trainer dev(o, corpus);
  for (int step = 0; step < 8; ++step) {
    const StepStats c = cpu.step(), d = dev.step();
    INFO("step " << step + 1);
    CHECK(d.tokens == c.tokens);
    CHECK(d.loss == Approx(c.loss).epsilon(1e-3));
    CHECK(d.learning_rate == c.learning_rate);
  }
  const StepStats ce = cpu.evaluate(corpus), de = dev.evaluate(corpus);
  CHECK(de.loss == Approx(ce.loss).epsilon(1e-3));
  // A GPU checkpoint resumes on the CPU (same file layout) and goes on alike.
  const std::string path = "test_cuda_trainer_checkpoint.bin";
  REQUIRE(dev.save_checkpoint(path).ok());
  o.device = Device::cpu;
  Trainer resumed(o, corpus);
  REQUIRE(resumed.load_checkpoint(path).ok());
  std::remove(path.c_str());
  CHECK(resumed.steps() == dev.steps());
  const StepStats r = resumed.step(), d = dev.step();
  CHECK(r.loss == Approx(d.loss).epsilon(1e-3));
}

TEST_CASE("without a device, CUDA training is refused with the reason", "[cuda_trainer]") {
  const std::string why = cuda_training_unavailable_reason();
  if (why.empty()) MT_SKIP("a CUDA device is present (the other cases cover it)");
  CHECK(why.find("CUDA") != std::string::npos);
  TrainerOptions o;
  o.model = small_config(false);
  o.device = Device::cuda;
  CHECK_THROWS_WITH(Trainer(o, random_pairs(4, o.model.target_vocab_size, 1)), Catch::Contains("CUDA"));
}

namespace {

// A launched world of one rank (mpirun -np 1) without MPI: the NCCL path
// with one GPU. Its sums of host numbers are the identity, as MPI's would be.
class OneLaunchedRank final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  bool launched() const override { return true; }
  int local_rank() const override { return 0; }
  Status sum(float*, size_t) override { return {}; }
  Status sum(double*, size_t) override { return {}; }
  Status broadcast(void*, size_t) override { return {}; }
  Status barrier() override { return {}; }
  std::string describe() const override { return "one launched rank (test)"; }
};

}  // namespace

TEST_CASE("one GPU rank summing through NCCL trains as the plain GPU Trainer and follows the CPU", "[cuda_trainer]") {
  MT_REQUIRE_CUDA_DEVICE();
  std::string why;
  if (!gpu::nccl_available(&why)) {
    if (std::getenv("MT_REQUIRE_NCCL") != nullptr) FAIL(why);
    MT_SKIP(why);
  }
  OneLaunchedRank one;
  TrainerOptions o;
  o.model = small_config(false);
  o.adam.lr = 1e-3;
  o.adam.warmup = 5;
  o.batching.max_tokens = 120;
  o.dropout = 0.1;
  o.seed = 3;
  const auto corpus = random_pairs(48, o.model.target_vocab_size, 8);
  Trainer cpu(o, corpus);
  o.device = Device::cuda;
  Trainer plain(o, corpus);
  o.communicator = &one;
  Trainer nccl(o, corpus);
  CHECK(nccl.device().find("NCCL") != std::string::npos);
  CHECK(plain.device().find("NCCL") == std::string::npos);
  for (int step = 0; step < 8; ++step) {
    const StepStats c = cpu.step(), p = plain.step(), n = nccl.step();
    INFO("step " << step + 1);
    // One rank's all-reduce leaves its gradients as they are: the plain GPU
    // step's (within the rounding its atomic adds may vary by).
    CHECK(n.loss == Approx(p.loss).epsilon(1e-6));
    CHECK(n.grad_norm == Approx(p.grad_norm).epsilon(1e-5));
    CHECK(n.tokens == c.tokens);
    CHECK(n.loss == Approx(c.loss).epsilon(1e-3));
  }
}
