// Adam and the learning-rate schedules against hand-computed values.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include <catch2/catch.hpp>

#include "optim/adam.hpp"

using namespace mt;
using namespace mt::train;

namespace {

// The first moment m and second moment v of a graph's only parameter, read
// from the optimizer's saved state (step, tensor count, then per tensor n, m[n], v[n]).
struct Moments {
  std::vector<double> m, v;
};

Moments moments_of(const Adam<double>& adam) {
  std::vector<char> state;
  adam.save(&state);
  uint64_t count = 0, n = 0;
  REQUIRE(state.size() >= sizeof(int64_t) + 2 * sizeof(uint64_t));
  std::memcpy(&count, state.data() + sizeof(int64_t), sizeof(count));
  REQUIRE(count == 1);
  std::memcpy(&n, state.data() + sizeof(int64_t) + sizeof(count), sizeof(n));
  const size_t at = sizeof(int64_t) + 2 * sizeof(uint64_t);
  REQUIRE(state.size() == at + 2 * n * sizeof(double));
  Moments out{std::vector<double>(n), std::vector<double>(n)};
  std::memcpy(out.m.data(), state.data() + at, n * sizeof(double));
  std::memcpy(out.v.data(), state.data() + at + n * sizeof(double), n * sizeof(double));
  return out;
}

}  // namespace

TEST_CASE("schedules follow their formulas", "[optim]") {
  AdamOptions o;
  o.schedule = Schedule::noam;
  o.lr = 2.0;
  o.warmup = 4000;
  o.d_model = 512;
  // Vaswani et al. eq. 3 (with factor 2): rises linearly, peaks at warmup, decays as step^-0.5.
  CHECK(learning_rate(o, 1) == Approx(2.0 / std::sqrt(512.0) * 1.0 * std::pow(4000.0, -1.5)));
  CHECK(learning_rate(o, 4000) == Approx(2.0 / std::sqrt(512.0) / std::sqrt(4000.0)));
  CHECK(learning_rate(o, 16000) == Approx(learning_rate(o, 4000) / 2));
  o.schedule = Schedule::inverse_sqrt;
  o.lr = 5e-4;
  CHECK(learning_rate(o, 2000) == Approx(2.5e-4));
  CHECK(learning_rate(o, 4000) == Approx(5e-4));
  CHECK(learning_rate(o, 16000) == Approx(2.5e-4));
}

TEST_CASE("a cooldown takes the last updates linearly down to zero", "[optim]") {
  AdamOptions o;
  o.lr = 5e-4;
  o.warmup = 4000;
  const AdamOptions plain = o;
  o.total = 16000;
  o.cooldown = 4;
  // Before the cooldown: the schedule as it was.
  CHECK(learning_rate(o, 1) == learning_rate(plain, 1));
  CHECK(learning_rate(o, 15996) == learning_rate(plain, 15996));
  // Updates 15997..16000 are the cooldown's 1..4: 4/4, 3/4, 2/4, 1/4 of the schedule.
  for (int k = 1; k <= 4; ++k)
    CHECK(learning_rate(o, 15996 + k) == Approx(learning_rate(plain, 15996 + k) * (4 - k + 1) / 4.0));
  // A run continued past its length keeps the last update's fraction, never zero or negative.
  CHECK(learning_rate(o, 16010) == Approx(learning_rate(plain, 16010) / 4.0));
  // A cooldown over the whole run starts at the first update, inside the warm-up.
  o.cooldown = o.total;
  CHECK(learning_rate(o, 1) == Approx(learning_rate(plain, 1)));
  CHECK(learning_rate(o, 8000) == Approx(learning_rate(plain, 8000) * 8001.0 / 16000.0));
  // Either schedule.
  o.schedule = Schedule::noam;
  AdamOptions noam = plain;
  noam.schedule = Schedule::noam;
  CHECK(learning_rate(o, 12000) == Approx(learning_rate(noam, 12000) * 4001.0 / 16000.0));
}

TEST_CASE("Adam steps as the paper's update rule", "[optim]") {
  autograd::Graph<double> g;
  auto* w = g.parameter("w", autograd::Shape{2, 1});
  auto* b = g.parameter("b", autograd::Shape{1});
  w->value = {1.0, -2.0};
  b->value = {0.5};
  w->grad = {0.3, -0.1};
  b->grad = {2.0};
  AdamOptions o;
  o.schedule = Schedule::inverse_sqrt;
  o.lr = 0.1;
  o.warmup = 1;
  o.weight_decay = 0.01;
  Adam<double> adam(g, o);
  const double norm = adam.step();
  CHECK(norm == Approx(std::sqrt(0.09 + 0.01 + 4.0)));
  // Step 1: m_hat = g, v_hat = g^2, so w -= lr * g / (|g| + eps) + lr * wd * w (matrices only).
  CHECK(w->value[0] == Approx(1.0 - 0.1 * (1.0 - 1e-8) - 0.1 * 0.01 * 1.0).epsilon(1e-9));
  CHECK(w->value[1] == Approx(-2.0 + 0.1 - 0.1 * 0.01 * -2.0).epsilon(1e-9));
  CHECK(b->value[0] == Approx(0.5 - 0.1).epsilon(1e-9));

  // State round trip.
  std::vector<char> state;
  adam.save(&state);
  Adam<double> restored(g, o);
  size_t used = 0;
  REQUIRE(restored.load(state.data(), state.size(), &used).ok());
  CHECK(used == state.size());
  CHECK(restored.steps() == 1);
  CHECK_FALSE(restored.load(state.data(), state.size() - 3, &used).ok());
}

// Adam's first step moves each weight by lr whatever the gradient's scale, so
// checking the weights after one step cannot tell a clipped gradient from an
// unclipped one. The moments can, and so can a second step.
TEST_CASE("gradient clipping scales the gradient Adam's moments see by clip / norm", "[optim]") {
  autograd::Graph<double> g;
  auto* p = g.parameter("p", autograd::Shape{2});
  p->value = {0.0, 0.0};
  AdamOptions c;
  c.clip_norm = 1.0;
  c.warmup = 1;
  c.lr = 1.0;
  c.schedule = Schedule::inverse_sqrt;  // lr 1 at step 1, sqrt(1/2) at step 2

  SECTION("a norm above clip_norm: the moments see the gradient scaled to norm clip_norm") {
    Adam<double> adam(g, c);
    p->grad = {3.0, 4.0};
    CHECK(adam.step() == Approx(5.0));  // the norm before clipping
    const Moments first = moments_of(adam);
    // Clipped to (0.6, 0.8): m = (1 - beta1) g, v = (1 - beta2) g^2. Unclipped m would be (0.3, 0.4).
    CHECK(first.m[0] == Approx(0.1 * 0.6).epsilon(1e-12));
    CHECK(first.m[1] == Approx(0.1 * 0.8).epsilon(1e-12));
    CHECK(first.v[0] == Approx(0.02 * 0.36).epsilon(1e-12));
    CHECK(first.v[1] == Approx(0.02 * 0.64).epsilon(1e-12));
    CHECK(p->value[0] == Approx(-1.0).epsilon(1e-6));

    // Step 2 with the clipped gradient itself (norm 1: not clipped again).
    // With clipping both steps saw the same gradient, so m_hat = g and
    // v_hat = g^2: each weight moves by the step's lr again. Without it the
    // first step's (3, 4) is in the moments and the move is 0.81 lr.
    p->grad = {0.6, 0.8};
    CHECK(adam.step() == Approx(1.0));
    const double lr2 = std::sqrt(0.5);
    CHECK(p->value[0] == Approx(-1.0 - lr2).epsilon(1e-6));
    CHECK(p->value[1] == Approx(-1.0 - lr2).epsilon(1e-6));
  }

  SECTION("grad_scale applies first: (6, 8) at scale 0.5 has norm 5 and is clipped to norm 1") {
    Adam<double> adam(g, c);
    p->grad = {6.0, 8.0};
    CHECK(adam.step(0.5) == Approx(5.0));
    const Moments first = moments_of(adam);
    CHECK(first.m[0] == Approx(0.1 * 0.6).epsilon(1e-12));
    CHECK(first.m[1] == Approx(0.1 * 0.8).epsilon(1e-12));
  }

  SECTION("a norm at or below clip_norm is left as it is") {
    Adam<double> adam(g, c);
    p->grad = {0.3, 0.4};
    CHECK(adam.step() == Approx(0.5));
    const Moments first = moments_of(adam);
    CHECK(first.m[0] == Approx(0.1 * 0.3).epsilon(1e-12));
    CHECK(first.v[1] == Approx(0.02 * 0.16).epsilon(1e-12));
  }

  SECTION("clip_norm 0 clips nothing") {
    c.clip_norm = 0.0;
    Adam<double> adam(g, c);
    p->grad = {3.0, 4.0};
    CHECK(adam.step() == Approx(5.0));
    CHECK(moments_of(adam).m[1] == Approx(0.1 * 4.0).epsilon(1e-12));
  }
}
