// The training loop: it learns, and a checkpointed run resumes bit-identically.
#include <fstream>

#include "mt/model_spec.hpp"

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

TEST_CASE("a swish model is refused, not trained as ReLU", "[trainer]") {
  TrainerOptions o = small_options();
  o.model.activation = Activation::swish;
  CHECK_THROWS_WITH(Trainer(o, data().pairs), Catch::Contains("relu and gelu"));
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
