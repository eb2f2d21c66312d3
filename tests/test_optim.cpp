// Adam and the learning-rate schedules against hand-computed values.
#include <cmath>

#include <catch2/catch.hpp>

#include "optim/adam.hpp"

using namespace mt;
using namespace mt::train;

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

  // Clipping scales every gradient by clip / norm.
  autograd::Graph<double> g2;
  auto* p = g2.parameter("p", autograd::Shape{2});
  p->value = {0.0, 0.0};
  p->grad = {3.0, 4.0};
  AdamOptions c;
  c.clip_norm = 1.0;
  c.warmup = 1;
  c.lr = 1.0;
  Adam<double> clipped(g2, c);
  CHECK(clipped.step() == Approx(5.0));
  // The first Adam step moves each weight by lr whatever the gradient's scale.
  CHECK(p->value[0] == Approx(-1.0).epsilon(1e-6));

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
