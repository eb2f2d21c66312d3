// The trainer's Transformer: its gradient against finite differences, its
// logits against libmt's for the same weights (exported through a model file).
#include <cmath>
#include <cstring>

#include "autograd/gradcheck.hpp"
#include "model/transformer_model.hpp"
#include "session/session_impl.hpp"
#include "test_util.hpp"
#include "access.hpp"

using namespace mt;
using namespace mt::train;

namespace {

// Two sentence pairs of different lengths.
std::vector<SentencePair> pairs(int vocab) {
  auto ids = [&](std::vector<int> v) {
    for (int& x : v) x = 4 + x % (vocab - 4);
    return std::vector<int32_t>(v.begin(), v.end());
  };
  return {{ids({5, 9, 14, 3, 8}), ids({7, 2, 11}), 1}, {ids({6, 1}), ids({3, 12, 4, 9, 10, 2}), 2}};
}

ModelConfig micro_config(int variant) {
  ModelConfig c;
  c.encoder_layers = 1;
  c.decoder_layers = 1;
  c.d_model = 8;
  c.heads = 2;
  c.d_ff = 12;
  c.source_vocab_size = c.target_vocab_size = 11;
  c.max_positions = 32;
  c.shared_embeddings = c.tied_output = variant != 2;
  c.pre_norm = variant == 1;
  c.activation = variant == 1 ? Activation::gelu : Activation::relu;
  if (variant == 3) {  // what converted models say (mt_train --init)
    c.activation = Activation::swish;
    c.stored_positions = true;
    c.embedding_scale = 1.5f;
    c.decoder_start_id = c.pad_id;
    c.source_eos = false;
  }
  return c;
}

}  // namespace

TEST_CASE("a whole tiny model's gradient matches finite differences", "[train_model]") {
  const int variant = GENERATE(0, 1, 2, 3);
  const ModelConfig config = micro_config(variant);
  autograd::Graph<double> g;
  TransformerModel<double> model(g, config);
  model.initialize(3);
  const auto corpus = pairs(config.target_vocab_size);
  const Batch batch =
      assemble_batch(corpus, {0, 1}, {config.pad_id, config.start_id(), config.eos_id, config.source_eos});
  ForwardOptions o;
  o.dropout = 0.1;  // the same masks on every evaluation
  o.label_smoothing = 0.1;
  g.set_seed(5);
  const auto result = autograd::grad_check(
      g, [&](autograd::Graph<double>& graph) { return model.loss(batch, o).loss; }, 1e-5, 1e-3, 6);
  INFO("variant " << variant << ": " << result.worst);
  CHECK(result.entries > 100);
  CHECK(result.max_rel_error < 1e-5);
}

// The loss as training computes it (TransformerModel::loss: the output layer
// and the loss fused, linear_cross_entropy.hpp) against the logits of
// forward() and cross_entropy: the same loss and every parameter's gradient
// bit for bit, the output weight tied to the embeddings (whose gradient sums
// both uses) or not, dropout on, 1 and 2 threads, over several row blocks.
TEST_CASE("the model's fused loss gives the unfused loss and gradients bit for bit", "[train_model]") {
  const bool tied = GENERATE(true, false);
  const int threads = GENERATE(1, 2);
  ModelConfig config = test::tiny_config();
  config.source_vocab_size = config.target_vocab_size = 5000;  // blocks of 102 rows
  config.shared_embeddings = config.tied_output = tied;
  std::vector<SentencePair> corpus;
  std::vector<uint32_t> all;
  for (int i = 0; i < 12; ++i) {
    std::vector<int32_t> src, tgt;
    for (int t = 0; t < 3 + i; ++t) src.push_back(4 + (i * 37 + t * 101) % 4996);
    for (int t = 0; t < 17 - i; ++t) tgt.push_back(4 + (i * 53 + t * 211) % 4996);
    corpus.push_back({src, tgt, uint32_t(i)});
    all.push_back(uint32_t(i));
  }
  const Batch batch = assemble_batch(corpus, all, {config.pad_id, config.start_id(), config.eos_id, config.source_eos});
  REQUIRE(batch.B * batch.T > 102);
  ForwardOptions o;
  o.dropout = 0.1;
  o.label_smoothing = 0.1;
  struct Result {
    float loss;
    double nll;
    std::vector<std::vector<float>> grads;
  };
  auto run = [&](bool fused) {
    autograd::Graph<float> g(threads);
    TransformerModel<float> model(g, config);
    model.initialize(7);
    g.set_seed(5);
    g.zero_grad();
    const autograd::CrossEntropy<float> ce =
        fused ? model.loss(batch, o)
              : autograd::cross_entropy(g, model.forward(batch, o), batch.target_output, config.pad_id, 0.1);
    g.backward(ce.loss);
    Result r{ce.loss->value[0], ce.nll, {}};
    for (const autograd::Tensor<float>* p : g.parameters()) r.grads.push_back(p->grad);
    return r;
  };
  const Result fused = run(true), unfused = run(false);
  INFO("tied " << tied << ", threads " << threads << ": loss " << fused.loss << " against " << unfused.loss);
  CHECK(std::memcmp(&fused.loss, &unfused.loss, sizeof(float)) == 0);
  CHECK(fused.nll == unfused.nll);
  REQUIRE(fused.grads.size() == unfused.grads.size());
  size_t differing = 0;
  for (size_t i = 0; i < fused.grads.size(); ++i) {
    const auto& a = fused.grads[i];
    const auto& b = unfused.grads[i];
    differing += a.size() != b.size() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) != 0;
  }
  CHECK(differing == 0);
}

TEST_CASE("trainer logits equal libmt's for the same weights", "[train_model]") {
  const int variant = GENERATE(0, 1, 2);
  ModelConfig config = test::tiny_config();
  config.pre_norm = variant == 1;
  config.activation = variant == 1 ? Activation::gelu : Activation::relu;
  if (variant == 2) config.shared_embeddings = config.tied_output = false;
  autograd::Graph<float> g;
  TransformerModel<float> model(g, config);
  model.initialize(11);
  g.set_training(false);
  const auto corpus = pairs(config.target_vocab_size);
  const Batch batch = assemble_batch(corpus, {0, 1}, {config.pad_id, config.bos_id, config.eos_id});
  const autograd::Tensor<float>* logits = model.forward(batch, {});
  const int V = config.target_vocab_size;
  REQUIRE(logits->rows() == int64_t(batch.B) * batch.T);

  const std::string path = test::scratch_path("trained-" + std::to_string(variant) + ".mtm");
  REQUIRE(model.export_model(path, nullptr, {}).ok());
  auto loaded = Model::load(path);
  INFO(loaded.status().message());
  REQUIRE(loaded.ok());
  SessionOptions so;
  so.max_batch_size = 1;
  so.max_beam_size = 1;
  auto session = Session::create(loaded.value(), so);
  REQUIRE(session.ok());
  Session::Impl& s = *detail::impl_of(*session);
  for (int b = 0; b < batch.B; ++b) {
    const SentencePair& p = corpus[size_t(b)];
    const std::span<const int32_t> src[] = {p.source};
    REQUIRE(s.load_sources(src, {}).ok());
    s.encode(1);
    const int T = batch.target_lengths[size_t(b)], C = config.d_model, F = config.d_ff;
    std::vector<float> x(T * C), y(T * C), qkv(T * 3 * C), q(T * C), attn(T * C), hidden(T * F), full(T * V);
    s.transformer->decode_full(batch.target_input.data() + size_t(b) * batch.T, 1, T, s.decoder_state(1),
                               {x.data(), y.data(), qkv.data(), q.data(), attn.data(), hidden.data()}, full.data());
    double max_diff = 0.0, max_abs = 0.0;
    for (int t = 0; t < T; ++t) {
      for (int v = 0; v < V; ++v) {
        const float ours = logits->value[(size_t(b) * batch.T + t) * V + v];
        max_diff = std::max(max_diff, double(std::fabs(ours - full[size_t(t) * V + v])));
        max_abs = std::max(max_abs, double(std::fabs(full[size_t(t) * V + v])));
      }
    }
    INFO("variant " << variant << " sentence " << b << ": max diff " << max_diff << " of " << max_abs);
    CHECK(max_diff / max_abs <= 1e-4);
  }
}

TEST_CASE("Session::score equals the trainer's teacher-forced log-softmax on the same weights", "[train_model]") {
  const int variant = GENERATE(0, 1, 2);
  ModelConfig config = test::tiny_config();
  config.pre_norm = variant == 1;
  if (variant == 2) {  // what converted models (fine-tuned with mt_train --init) may say
    config.embedding_scale = 3.0f;
    config.decoder_start_id = config.pad_id;
    config.source_eos = false;
    config.suppressed_ids = {config.unk_id};
    config.activation = Activation::swish;
    config.stored_positions = true;  // the table read from the file (the stored path)
  }
  autograd::Graph<float> g;
  TransformerModel<float> model(g, config);
  model.initialize(23);
  if (variant == 2) {
    const std::string random = test::scratch_path("scored-random.mtm");
    REQUIRE(write_random_model(config, 23, random).ok());
    REQUIRE(model.initialize_from(*Model::load(random).value()).ok());
  }
  g.set_training(false);
  const auto corpus = pairs(config.target_vocab_size);
  const Batch batch =
      assemble_batch(corpus, {0, 1}, {config.pad_id, config.start_id(), config.eos_id, config.source_eos});
  const autograd::Tensor<float>* logits = model.forward(batch, {});
  const int V = config.target_vocab_size;
  const std::string path = test::scratch_path("scored-" + std::to_string(variant) + ".mtm");
  REQUIRE(model.export_model(path, nullptr, {}).ok());
  auto loaded = Model::load(path);
  REQUIRE(loaded.ok());
  SessionOptions so;
  so.max_batch_size = 2;
  auto session = Session::create(loaded.value(), so);
  REQUIRE(session.ok());
  std::vector<std::span<const int32_t>> sources, targets;
  for (const SentencePair& p : corpus) sources.push_back(p.source), targets.push_back(p.target);
  Translations scored;
  REQUIRE(session->score(sources, targets, {}, &scored).ok());
  for (int b = 0; b < batch.B; ++b) {
    const Hypothesis& h = scored[size_t(b)][0];
    const int T = batch.target_lengths[size_t(b)];  // EOS included
    REQUIRE(int(h.token_log_probs.size()) == T);
    for (int t = 0; t < T; ++t) {
      const float* row = logits->value.data() + (size_t(b) * batch.T + t) * V;
      double max = row[0], sum = 0.0;
      for (int v = 1; v < V; ++v) max = std::max(max, double(row[v]));
      for (int v = 0; v < V; ++v) sum += std::exp(double(row[v]) - max);
      const double want = double(row[batch.target_output[size_t(b) * batch.T + t]]) - max - std::log(sum);
      INFO("variant " << variant << " sentence " << b << " position " << t << ": " << h.token_log_probs[size_t(t)]
                      << " vs " << want);
      CHECK(std::fabs(h.token_log_probs[size_t(t)] - want) <= 1e-4 * std::fabs(want));
    }
  }
}
