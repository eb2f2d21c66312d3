// The sum of a row in independent partial sums, for loops the compiler
// vectorizes: one chain of dependent adds waits on every add's latency.
#pragma once

namespace mt::autograd {

inline constexpr int kSumLanes = 16;

// sum of f(c) for c < n: lane i adds f(c) for the c with c mod kSumLanes = i,
// in c order, then the lanes are added in lane order. The same value for a
// row whatever the thread count or the rows around it.
template <class T, class F>
T lane_sum(int n, F&& f) {
  T part[kSumLanes] = {};
  int c = 0;
  for (; c + kSumLanes <= n; c += kSumLanes)
    for (int i = 0; i < kSumLanes; ++i) part[i] += f(c + i);
  for (int i = 0; c < n; ++c, ++i) part[i] += f(c);
  T sum = 0;
  for (int i = 0; i < kSumLanes; ++i) sum += part[i];
  return sum;
}

}  // namespace mt::autograd
