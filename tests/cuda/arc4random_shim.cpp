// The test binary links libstdc++ statically so that GPU machines need no
// particular GCC runtime. GCC 12's static std::random_device (which Catch2
// references) calls arc4random, new in glibc 2.36; defining it here keeps the
// binary's floor at glibc 2.34 (Ubuntu 22.04, RHEL 9), which the CUDA 13
// runtime needs anyway.
#include <sys/random.h>

#include <cstdint>

extern "C" uint32_t arc4random(void) {
  uint32_t value = 0;
  while (getrandom(&value, sizeof value, 0) != sizeof value) {
  }
  return value;
}
