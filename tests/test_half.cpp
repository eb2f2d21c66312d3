// The host's half conversions (mt/half.h), which make the GPU's fp16
// weights: against the compiler's _Float16 where it has one, at every
// rounding boundary of the format, and against values worked out by hand.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include "mt/half.h"

using namespace mt;

namespace {

uint32_t bits(float f) { return half_detail::bits_as<uint32_t>(f); }
[[maybe_unused]] float from_bits(uint32_t b) { return half_detail::bits_as<float>(b); }

// The floats where rounding to half is decided, for every finite half h:
// h itself, the midpoint to the next half up, and a float either side of
// each (and their negatives).
template <class Check>
void for_each_boundary(Check check) {
  for (uint32_t h = 0; h < 0x7c00u; ++h) {
    const float low = f16_bits_to_f32(uint16_t(h));
    const float high = h + 1 == 0x7c00u ? 65536.0f : f16_bits_to_f32(uint16_t(h + 1));
    const float mid = low + (high - low) / 2;  // exact: one more bit than a half
    for (float f : {low, mid, std::nextafter(low, 0.0f), std::nextafter(low, high), std::nextafter(mid, 0.0f),
                    std::nextafter(mid, high)}) {
      check(f);
      check(-f);
    }
  }
}

}  // namespace

TEST_CASE("half: values worked out by hand", "[half]") {
  CHECK(f32_to_f16_bits(0.0f) == 0x0000);
  CHECK(f32_to_f16_bits(-0.0f) == 0x8000);
  CHECK(f32_to_f16_bits(1.0f) == 0x3c00);
  CHECK(f32_to_f16_bits(-2.0f) == 0xc000);
  CHECK(f32_to_f16_bits(65504.0f) == 0x7bff);    // the largest half
  CHECK(f32_to_f16_bits(65519.996f) == 0x7bff);  // just under the midpoint to 2^16
  CHECK(f32_to_f16_bits(65520.0f) == 0x7c00);    // the midpoint ties to even: infinity
  CHECK(f32_to_f16_bits(1e9f) == 0x7c00);
  CHECK(f32_to_f16_bits(-std::numeric_limits<float>::infinity()) == 0xfc00);
  CHECK(f32_to_f16_bits(0x1p-14f) == 0x0400);  // the smallest normal
  CHECK(f32_to_f16_bits(0x1p-24f) == 0x0001);  // the smallest subnormal
  CHECK(f32_to_f16_bits(0x1p-25f) == 0x0000);  // half of it ties to even: zero
  CHECK(f32_to_f16_bits(0x1.000002p-25f) == 0x0001);
  CHECK(f32_to_f16_bits(-0x1p-26f) == 0x8000);
  CHECK(f32_to_f16_bits(0x3p-25f) == 0x0002);         // 1.5 units ties to even: 2
  CHECK(f32_to_f16_bits(1.0f + 0x1p-11f) == 0x3c00);  // ties to even, down
  CHECK(f32_to_f16_bits(1.0f + 0x3p-11f) == 0x3c02);  // ties to even, up
  CHECK(f32_to_f16_bits(0x1.ffep-15f) == 0x0400);     // the largest subnormal's round-up carries into a normal
  const uint16_t nan = f32_to_f16_bits(std::numeric_limits<float>::quiet_NaN());
  CHECK((nan & 0x7c00) == 0x7c00);
  CHECK((nan & 0x03ff) != 0);
  CHECK(std::isnan(f16_bits_to_f32(nan)));
  CHECK(std::isnan(f16_bits_to_f32(f32_to_f16_bits(-std::numeric_limits<float>::signaling_NaN()))));
  CHECK(f16_bits_to_f32(0x0001) == 0x1p-24f);
  CHECK(f16_bits_to_f32(0x83ff) == -0x3ffp-24f);
  CHECK(f16_bits_to_f32(0x7bff) == 65504.0f);
  CHECK(f16_bits_to_f32(0xfc00) == -std::numeric_limits<float>::infinity());
}

TEST_CASE("half: every half survives the round trip through float", "[half]") {
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    const float f = f16_bits_to_f32(uint16_t(h));
    if (std::isnan(f)) {
      CHECK(((h >> 10) & 0x1f) == 0x1f);
      continue;
    }
    INFO("half " << h);
    REQUIRE(f32_to_f16_bits(f) == h);
  }
}

TEST_CASE("half: rounding is to nearest, ties to even, at every boundary", "[half]") {
  // Without a second implementation: the result is one of the two halves
  // around the value, the nearer one, the even one on a tie.
  for_each_boundary([](float f) {
    const uint16_t h = f32_to_f16_bits(f);
    const float r = f16_bits_to_f32(h);
    INFO("value " << f << " (0x" << std::hex << bits(f) << ") -> 0x" << h);
    if (std::fabs(f) >= 65520.0f) {
      REQUIRE(std::isinf(r));
      return;
    }
    REQUIRE(std::signbit(r) == std::signbit(f));
    const float other = f16_bits_to_f32(uint16_t(r == f ? h : (std::fabs(r) < std::fabs(f) ? h + 1 : h - 1)));
    const float error = std::fabs(r - f), other_error = std::fabs(other - f);
    REQUIRE(error <= other_error);
    if (error == other_error && r != f) REQUIRE((h & 1) == 0);
  });
}

#if defined(__FLT16_MAX__)
TEST_CASE("half: the same bits as the compiler's _Float16", "[half]") {
  const auto same = [](float f) {
    const _Float16 expected = static_cast<_Float16>(f);
    const uint16_t want = half_detail::bits_as<uint16_t>(expected);
    INFO("value " << f << " (0x" << std::hex << bits(f) << ")");
    REQUIRE(f32_to_f16_bits(f) == want);
    REQUIRE(bits(f16_bits_to_f32(want)) == bits(static_cast<float>(expected)));
  };
  for_each_boundary(same);
  std::mt19937 rng(7);
  for (int i = 0; i < 1000000; ++i) {
    const float f = from_bits(uint32_t(rng()));
    if (!std::isnan(f)) same(f);  // NaN payloads are the compiler's choice
  }
}
#endif
