// The training loop: it learns, and a checkpointed run resumes bit-identically.
#include <algorithm>
#include <fstream>
#include <memory>

#include "mt/model_spec.hpp"

#include "data/subword_sampling.hpp"
#include "test_skip.hpp"
#include "test_util.hpp"
#include "trainer_corpus.hpp"
#include "trainer.hpp"
#include "vocab/vocab_train.hpp"

using namespace mt;
using namespace mt::train;

namespace {

// The trainer tests' corpus and vocabulary (trainer_corpus.hpp).
const test::TrainerCorpus& data() { return test::trainer_corpus(); }

TrainerOptions small_options() {
  TrainerOptions o;
  o.model = test::tiny_config();
  o.model.d_model = 32;
  o.model.d_ff = 64;
  o.model.source_vocab_size = o.model.target_vocab_size = int(data().vocab.pieces.size());
  o.adam.lr = 3e-3;
  o.adam.warmup = 10;
  o.batching.max_tokens = 400;
  o.dropout = 0.1;
  o.threads = 2;
  return o;
}

}  // namespace

TEST_CASE("training lowers the loss", "[trainer]") {
  Trainer trainer(small_options(), data().pairs);
  std::vector<SentencePair> dev(data().pairs.begin(), data().pairs.begin() + 40);
  const double before = trainer.evaluate(dev).nll;
  StepStats last;
  for (int i = 0; i < 60; ++i) last = trainer.step();
  const double after = trainer.evaluate(dev).nll;
  INFO("dev nll " << before << " -> " << after << ", last lr " << last.learning_rate);
  CHECK(after < before * 0.6);
  CHECK(trainer.steps() == 60);
  CHECK(trainer.epoch() >= 1);
}

TEST_CASE("a resumed run is bit-identical to a straight one", "[trainer]") {
  std::vector<SentencePair> part(data().pairs.begin(), data().pairs.begin() + 60);
  const TrainerOptions o = small_options();
  Trainer straight(o, part);
  const int steps = int(straight.batches_per_epoch()) + 3;  // crosses an epoch boundary
  for (int i = 0; i < steps; ++i) straight.step();

  Trainer first(o, part);
  for (int i = 0; i < steps / 2; ++i) first.step();
  const std::string path = test::scratch_path("resume.ckpt");
  REQUIRE(first.save_checkpoint(path).ok());
  Trainer exact(o, part);
  REQUIRE(exact.load_checkpoint(path).ok());
  for (int i = steps / 2; i < steps; ++i) exact.step();
  CHECK(exact.steps() == straight.steps());
  const ModelConfig& c = o.model;
  for (const TensorSpec& spec : model_tensor_specs(c)) {
    INFO(spec.name);
    REQUIRE(exact.model().parameter(spec.name)->value == straight.model().parameter(spec.name)->value);
  }
  CHECK_FALSE(exact.load_checkpoint(test::scratch_path("missing.ckpt")).ok());
}

TEST_CASE("a resumed run with subword sampling is bit-identical to a straight one", "[trainer][sampling]") {
  // trainer_corpus() wrote the files its pairs came from.
  auto sampler =
      SegmentationSampler::create(test::scratch_path("t.en"), test::scratch_path("t.de"), data().vocab, 0.1, 100);
  INFO(sampler.status().message());
  REQUIRE(sampler.ok());
  std::shared_ptr<SegmentationSampler> shared = std::move(sampler.value());
  std::vector<int> epochs;  // the epochs the hook was called for
  TrainerOptions o = small_options();
  o.resegment = [&](int epoch, std::vector<SentencePair>* pairs) -> Status {
    epochs.push_back(epoch);
    auto kept_best = shared->resegment(o.seed, epoch, pairs);
    return kept_best ? Status() : kept_best.status();
  };
  std::vector<SentencePair> part(data().pairs.begin(), data().pairs.begin() + 60);
  Trainer straight(o, part);
  int steps = 0;  // into a third epoch (its batch count varies with the draws)
  while (straight.epoch() < 2 || straight.batch_in_epoch() < 3) straight.step(), ++steps;
  CHECK(epochs.front() == 0);
  CHECK(epochs.back() >= 2);

  Trainer first(o, part);
  for (int i = 0; i < steps / 2; ++i) first.step();
  const int resumed_epoch = first.epoch();
  const std::string path = test::scratch_path("resume-sampled.ckpt");
  REQUIRE(first.save_checkpoint(path).ok());
  Trainer exact(o, part);
  epochs.clear();
  REQUIRE(exact.load_checkpoint(path).ok());
  CHECK(epochs == std::vector<int>{resumed_epoch});  // the checkpoint's epoch drawn again
  for (int i = steps / 2; i < steps; ++i) exact.step();
  CHECK(exact.steps() == straight.steps());

  // Without sampling the same steps end elsewhere: the hook did change what trained.
  Trainer plain(small_options(), part);
  for (int i = 0; i < steps; ++i) plain.step();
  size_t differ = 0;
  for (const TensorSpec& spec : model_tensor_specs(o.model)) {
    INFO(spec.name);
    REQUIRE(exact.model().parameter(spec.name)->value == straight.model().parameter(spec.name)->value);
    differ += plain.model().parameter(spec.name)->value != straight.model().parameter(spec.name)->value;
  }
  CHECK(differ > 0);

  // An error the hook returns is thrown, naming the epoch.
  o.resegment = [](int, std::vector<SentencePair>*) { return Status::error(Errc::internal, "no draws today"); };
  CHECK_THROWS_WITH(Trainer(o, part), Catch::Contains("epoch 1") && Catch::Contains("no draws today"));
}

TEST_CASE("a run's weights do not depend on the thread count", "[trainer]") {
  // The tiny config and ~1,000-token batches, so the pool's split of the work
  // depends on the thread count: GEMM panels and rows, the weight gradients'
  // transposes, the gradient zeroing.
  TrainerOptions o = small_options();
  o.model = test::tiny_config();
  o.model.source_vocab_size = o.model.target_vocab_size = int(data().vocab.pieces.size());
  o.batching.max_tokens = 1000;
  auto run = [&](int threads) {
    o.threads = threads;
    Trainer trainer(o, data().pairs);
    for (int i = 0; i < 3; ++i) trainer.step();
    std::vector<float> all;
    for (const TensorSpec& spec : model_tensor_specs(o.model)) {
      const std::vector<float>& w = trainer.model().parameter(spec.name)->value;
      all.insert(all.end(), w.begin(), w.end());
    }
    return all;
  };
  const std::vector<float> one = run(1);
  CHECK(run(2) == one);
  CHECK(run(3) == one);
}

namespace {

std::shared_ptr<const Model> shipped(const char* name) {
  auto m = Model::load(std::string(MT_MODELS_DIR) + "/" + name);
  REQUIRE(m.ok());
  return m.value();
}

// The trainer corpus tokenized with a model's own vocabulary.
std::vector<SentencePair> pairs_for(const Model& model) {
  test::trainer_corpus();  // writes t.en and t.de
  return train::read_parallel_corpus(test::scratch_path("t.en"), test::scratch_path("t.de"), *model.vocabulary(), {},
                                     nullptr)
      .value();
}

TrainerOptions fine_tuning(std::shared_ptr<const Model> model) {
  TrainerOptions o;
  o.model = model->config();
  o.init = std::move(model);
  o.adam.lr = 1e-4;
  o.adam.warmup = 5;
  o.batching.max_tokens = 1000;
  o.threads = 2;
  return o;
}

}  // namespace

TEST_CASE("fine-tuning starts from the model file's weights, bit for bit", "[trainer][fine_tuning]") {
  const auto model = shipped("en-de-tiny.mtm");
  Trainer trainer(fine_tuning(model), pairs_for(*model));
  const std::string path = test::scratch_path("fine-tuned-0.mtm");
  REQUIRE(trainer.model().export_model(path, model->vocabulary(), model->metadata()).ok());
  const auto again = Model::load(path);
  REQUIRE(again.ok());
  for (const TensorSpec& spec : model_tensor_specs(model->config())) {
    INFO(spec.name);
    const TensorView* a = model->find_tensor(spec.name);
    const TensorView* b = (*again)->find_tensor(spec.name);
    REQUIRE((a != nullptr && b != nullptr));
    CHECK(std::equal(a->data.begin(), a->data.end(), b->data.begin(), b->data.end()));
  }
}

TEST_CASE("fine-tuning the shipped model on new sentences lowers their loss", "[trainer][fine_tuning]") {
  if (MT_SLOW_BUILD) MT_SKIP("ten updates of the shipped model take minutes under sanitizers: the release build runs them");
  const auto model = shipped("en-de-tiny.mtm");
  const std::vector<SentencePair> pairs = pairs_for(*model);
  Trainer trainer(fine_tuning(model), pairs);
  const std::vector<SentencePair> dev(pairs.begin(), pairs.begin() + 40);
  const double before = trainer.evaluate(dev).nll;
  for (int i = 0; i < 10; ++i) trainer.step();
  const double after = trainer.evaluate(dev).nll;
  INFO("dev nll " << before << " -> " << after);
  CHECK(after < before - 0.05);
}

TEST_CASE("fine-tuning refuses an int8 model with the way out", "[trainer][fine_tuning]") {
  const auto int8 = shipped("en-de-tiny.int8.mtm");
  CHECK_THROWS_WITH(Trainer(fine_tuning(int8), pairs_for(*int8)),
                    Catch::Contains("fine-tune the fp32 model it was quantized from"));
}

// A converted model's features (swish, its own position table, another
// embedding scale, start id, no source EOS): the table is kept as it is,
// the rest trains, and the weights round-trip.
TEST_CASE("a model with swish and stored positions fine-tunes and keeps its position table", "[trainer][fine_tuning]") {
  ModelConfig c = test::tiny_config();
  c.d_model = 32, c.d_ff = 64, c.encoder_layers = c.decoder_layers = 1;
  c.source_vocab_size = c.target_vocab_size = int(data().vocab.pieces.size());
  c.max_positions = 128;
  c.activation = Activation::swish;
  c.stored_positions = true;
  c.embedding_scale = 1.0f;
  c.decoder_start_id = c.pad_id;
  c.source_eos = false;
  const std::string path = test::scratch_path("converted-style.mtm");
  REQUIRE(write_random_model(c, 9, path).ok());
  const auto model = Model::load(path).value();
  TrainerOptions o = fine_tuning(model);
  o.adam.lr = 3e-3;
  o.batching.max_tokens = 400;
  Trainer trainer(o, data().pairs);
  const std::vector<SentencePair> dev(data().pairs.begin(), data().pairs.begin() + 40);
  const double before = trainer.evaluate(dev).nll;
  for (int i = 0; i < 30; ++i) trainer.step();
  const double after = trainer.evaluate(dev).nll;
  INFO("dev nll " << before << " -> " << after);
  CHECK(after < before * 0.8);
  const std::string tuned = test::scratch_path("converted-style-tuned.mtm");
  REQUIRE(trainer.model().export_model(tuned, nullptr, {}).ok());
  const auto again = Model::load(tuned).value();
  const TensorView* a = model->find_tensor("position_encoding");
  const TensorView* b = again->find_tensor("position_encoding");
  REQUIRE((a != nullptr && b != nullptr));
  CHECK(std::equal(a->data.begin(), a->data.end(), b->data.begin(), b->data.end()));
}

// Built without nvcc, or run without a GPU: CUDA training says why instead
// of failing later (mt_train prints the same line for --device cuda).
TEST_CASE("Device::cuda without CUDA is refused with the reason", "[trainer]") {
  const std::string why = cuda_training_unavailable_reason();
  if (why.empty()) MT_SKIP("CUDA training is available here (tests/cuda/test_cuda_trainer covers it)");
  CHECK(why.find("CUDA") != std::string::npos);
  TrainerOptions o = small_options();
  o.device = Device::cuda;
  CHECK_THROWS_WITH(Trainer(o, data().pairs), Catch::Contains(why));
}
