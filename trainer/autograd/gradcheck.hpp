// Gradient checking: every parameter gradient of a Graph<double> against
// central finite differences, (f(x + h) - f(x - h)) / 2h, error O(h^2).
// For the op tests here and for the trainer's layer and model tests.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "autograd/graph.hpp"

namespace mt::autograd {

struct GradCheckResult {
  double max_rel_error = 0.0;  // max over entries of |a - n| / max(|a|, |n|, floor)
  std::string worst;           // "name[index] analytic a numeric n" of that entry
  int64_t entries = 0;         // parameter values checked
};

// build(g) records a one-element loss on g from g's parameters (it may add
// inputs and any ops; it is called 1 + 2 * entries times, each after
// g.clear(), with g's RngState restored so dropout draws the same masks).
// Checks every parameter of g, or at most max_per_param evenly spaced
// entries of each when max_per_param > 0. floor keeps gradients that are
// zero up to rounding from inflating the relative error. step: the error is
// O(step^2) truncation plus ~1e-16 |loss| / step rounding, smallest near
// cbrt(1e-16) ~ 5e-6; 1e-5 measured best on a small transformer (loss ~10,
// 1e-6 gave 10x the error, all rounding). Parameter values
// are restored; their gradients end up holding the analytic gradient.
GradCheckResult grad_check(Graph<double>& g, const std::function<Tensor<double>*(Graph<double>&)>& build,
                           double step = 1e-5, double floor = 1e-3, int64_t max_per_param = 0);

}  // namespace mt::autograd
