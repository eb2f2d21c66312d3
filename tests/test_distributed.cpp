// Data-parallel training over MPI, run by CTest as `mpirun -np 2 test_distributed`:
// two ranks, each taking half of every batch, train bit for bit as one
// process cutting each batch in two slices (TrainerOptions::slices: the
// slices' gradients summed in slice order, as the ranks' are, each slice's
// dropout masks from its own stream), dropout on; against one process taking
// the whole batch at once the sums group the tokens otherwise, and the loss
// curves agree to rounding (below). A checkpoint moves between one rank and two.
#include <cmath>
#include <fstream>

#include "distributed/communicator.hpp"
#include "mt/model_spec.hpp"
#include "test_util.hpp"
#include "trainer_corpus.hpp"
#include "trainer.hpp"
#include "vocab/vocab_train.hpp"

using namespace mt;
using namespace mt::train;

namespace {

Communicator& world() {
  static const std::unique_ptr<Communicator> comm = [] {
    auto made = world_communicator(nullptr, nullptr);
    if (!made) std::abort();
    return std::move(made.value());
  }();
  return *comm;
}

// The trainer tests' corpus and vocabulary (trainer_corpus.hpp).
const test::TrainerCorpus& data() { return test::trainer_corpus(); }

TrainerOptions options(Communicator* communicator, int slices = 0) {
  TrainerOptions o;
  o.model = test::tiny_config();
  o.model.d_model = 32;
  o.model.d_ff = 64;
  o.model.source_vocab_size = o.model.target_vocab_size = int(data().vocab.pieces.size());
  o.adam.lr = 3e-3;
  o.adam.warmup = 10;
  o.batching.max_tokens = 400;
  o.dropout = 0.1;
  o.threads = 1;
  o.communicator = communicator;
  o.slices = slices;
  return o;
}

// The largest |a - b| / max(|a|, |b|, 1e-3) over every weight.
double largest_difference(Trainer& a, Trainer& b) {
  double worst = 0.0;
  for (const TensorSpec& spec : model_tensor_specs(a.model().config())) {
    const auto& x = a.model().parameter(spec.name)->value;
    const auto& y = b.model().parameter(spec.name)->value;
    REQUIRE(x.size() == y.size());
    double tensor = 0.0;
    for (size_t j = 0; j < x.size(); ++j) {
      tensor = std::max(tensor, std::fabs(double(x[j]) - double(y[j])) /
                                    std::max({std::fabs(double(x[j])), std::fabs(double(y[j])), 1e-3}));
    }
    worst = std::max(worst, tensor);
  }
  return worst;
}

// A whole checkpoint path every rank agrees on (rank 0's scratch directory).
std::string shared_path(const std::string& name) {
  char path[512] = {};
  if (world().rank() == 0) std::snprintf(path, sizeof path, "%s", test::scratch_path(name).c_str());
  REQUIRE(world().broadcast(path, sizeof path).ok());
  return path;
}

}  // namespace

TEST_CASE("two ranks train as one process with two slices does, bit for bit", "[distributed]") {
  REQUIRE(world().size() == 2);
  Trainer ranks(options(&world()), data().pairs);
  double losses[20], norms[20];
  for (int i = 0; i < 20; ++i) {
    const StepStats s = ranks.step();
    losses[i] = s.loss, norms[i] = s.grad_norm;
  }
  if (world().rank() != 0) return;
  Trainer sliced(options(nullptr, 2), data().pairs);
  for (int i = 0; i < 20; ++i) {
    const StepStats s = sliced.step();
    CHECK(s.loss == losses[i]);
    CHECK(s.grad_norm == norms[i]);
  }
  CHECK(largest_difference(ranks, sliced) == 0.0);
}

// The whole batch at once sums the same tokens in other groups (and draws
// other dropout masks: off here): the same loss curve, to rounding. Through
// the warm-up (10 updates) the losses agree to 1e-6 (seen: 4e-8). Then the
// curves drift apart by more: the key biases' true gradient is 0, Adam
// divides their rounding noise by its own scale, and at the peak learning
// rate that noise moves the loss (seen: 1.2e-5 by update 18 on an AMD EPYC
// with AVX2, whose sums group otherwise than AVX-512's); 1e-4 bounds it. A
// slice's gradient lost or counted twice changes the updates' direction, not
// their rounding.
TEST_CASE("two ranks follow one process taking whole batches", "[distributed]") {
  TrainerOptions o = options(&world());
  o.dropout = 0.0;
  Trainer ranks(o, data().pairs);
  double losses[20];
  for (double& loss : losses) loss = ranks.step().loss;
  if (world().rank() != 0) return;
  o.communicator = nullptr;
  Trainer whole(o, data().pairs);
  for (int i = 0; i < 20; ++i) {
    const double loss = whole.step().loss;
    INFO("update " << i);
    CHECK(std::fabs(loss - losses[i]) <= (i < o.adam.warmup ? 1e-6 : 1e-4) * std::fabs(loss));
  }
}

TEST_CASE("a checkpoint moves from two ranks to one and back", "[distributed]") {
  const std::string two_ranks = shared_path("two.ckpt"), one_rank = shared_path("one.ckpt");
  // Two ranks, 10 updates, saved by rank 0.
  Trainer ranks(options(&world()), data().pairs);
  for (int i = 0; i < 10; ++i) ranks.step();
  if (world().rank() == 0) REQUIRE(ranks.save_checkpoint(two_ranks).ok());
  // One process, 10 updates, saved.
  Trainer one(options(nullptr, 2), data().pairs);
  for (int i = 0; i < 10; ++i) one.step();
  if (world().rank() == 0) REQUIRE(one.save_checkpoint(one_rank).ok());
  REQUIRE(world().barrier().ok());
  // One process's run continued on two ranks...
  Trainer resumed_on_two(options(&world()), data().pairs);
  REQUIRE(resumed_on_two.load_checkpoint(one_rank).ok());
  for (int i = 0; i < 10; ++i) resumed_on_two.step();
  if (world().rank() != 0) return;
  // ...and two ranks' run continued in one process, against one process throughout.
  Trainer resumed_on_one(options(nullptr, 2), data().pairs);
  REQUIRE(resumed_on_one.load_checkpoint(two_ranks).ok());
  for (int i = 0; i < 10; ++i) resumed_on_one.step(), one.step();
  CHECK(resumed_on_one.steps() == 20);
  CHECK(resumed_on_two.steps() == 20);
  CHECK(largest_difference(resumed_on_one, one) == 0.0);
  CHECK(largest_difference(resumed_on_two, one) == 0.0);
}
