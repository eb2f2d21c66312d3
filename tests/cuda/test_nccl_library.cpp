// NCCL's loader (trainer/cuda/nccl_library.hpp), which needs no GPU: the
// library scripts/install-deps.sh unpacked opens with every entry point and
// the header's major version; a missing file or a library that is not NCCL
// is refused with a message that says what to install.
#include <cstdlib>
#include <filesystem>
#include <string>

#include <catch2/catch.hpp>

#include "cuda/nccl_gradient_sum.hpp"
#include "cuda/nccl_library.hpp"
#include "test_skip.hpp"

namespace gpu = mt::autograd::gpu;

TEST_CASE("NCCL's library opens with every entry point and the header's version", "[nccl]") {
#ifndef MT_NCCL_TEST_LIBRARY
  MT_SKIP("no libnccl.so.2 beside the nccl.h this build found (scripts/install-deps.sh unpacks both)");
#else
  // The library beside the build's header; on a machine the binary was copied
  // to (a lent GPU machine), the one MT_NCCL_LIBRARY names, of the same major
  // version (the trainer's loader accepts no other).
  const bool build_library = std::filesystem::exists(MT_NCCL_TEST_LIBRARY);
  const char* named = std::getenv("MT_NCCL_LIBRARY");
  if (!build_library && named == nullptr) {
    MT_SKIP("the build's " MT_NCCL_TEST_LIBRARY " is not on this machine and MT_NCCL_LIBRARY names no other");
  }
  const std::string path = build_library ? MT_NCCL_TEST_LIBRARY : named;
  INFO("library " << path);
  std::string why;
  const gpu::NcclLibrary* nccl = gpu::open_nccl_library(path, &why);
  INFO(why);
  REQUIRE(nccl != nullptr);
  CHECK(nccl->path == path);
  if (build_library) {
    CHECK(nccl->version == NCCL_VERSION_CODE);  // the wheel the header came from
  } else {
    CHECK(nccl->version / 10000 == NCCL_MAJOR);
  }
  CHECK(std::string(nccl->error_string(ncclInvalidArgument)).find("invalid") != std::string::npos);
  // The trainer's own lookup finds one too (MT_NCCL_LIBRARY, the loader's path, or the build's).
  CHECK(gpu::nccl_available(&why));
#endif
}

TEST_CASE("a missing NCCL or a library that is not NCCL is refused, saying what to install", "[nccl]") {
  std::string why;
  CHECK(gpu::open_nccl_library("/nonexistent/libnccl.so.2", &why) == nullptr);
  CHECK(why.find("/nonexistent/libnccl.so.2") != std::string::npos);
  CHECK(why.find("nvidia-nccl-cu13") != std::string::npos);
  CHECK(why.find("MT_NCCL_LIBRARY") != std::string::npos);
  why.clear();
  CHECK(gpu::open_nccl_library("libm.so.6", &why) == nullptr);
  CHECK(why.find("libm.so.6 lacks an entry point") != std::string::npos);
}
