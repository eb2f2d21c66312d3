# Cross-build for 64-bit ARM Linux with Debian's g++-aarch64-linux-gnu;
# programs and tests run under qemu-aarch64-static (qemu-user-static).
# scripts/test_aarch64.sh does all of it:
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=platforms/toolchains/aarch64-linux-gnu.cmake \
#         -DMT_AARCH64_DEPS=/dir/with/arm64/debs/unpacked
# Header-only dependencies (xsimd, FlatBuffers, Catch2) come from the host's
# /usr/include and flatc runs on the host. SentencePiece and FlatBuffers'
# library: their arm64 Debian packages unpacked in MT_AARCH64_DEPS
# (installing SentencePiece's would remove the host's). Benchmarks, the trainer and CUDA are left out.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(MT_AARCH64_DEPS "" CACHE PATH "arm64 Debian packages unpacked here (SentencePiece, FlatBuffers)")
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu ${MT_AARCH64_DEPS})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)  # flatc: the host's
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)    # header-only packages from /usr/include
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
if(MT_AARCH64_DEPS)
  set(ENV{PKG_CONFIG_LIBDIR} "${MT_AARCH64_DEPS}/usr/lib/aarch64-linux-gnu/pkgconfig")
  set(ENV{PKG_CONFIG_SYSROOT_DIR} "${MT_AARCH64_DEPS}")
endif()
# xsimd is header-only; Debian files its CMake package under the host's triplet.
set(xsimd_DIR /usr/lib/x86_64-linux-gnu/cmake/xsimd CACHE PATH "")
# The loader is named explicitly: Debian's qemu-user 7.2 started with -L hangs
# in pthread_create of dynamically linked programs; through ld.so it does not.
set(mt_aarch64_libs /usr/aarch64-linux-gnu/lib)
if(MT_AARCH64_DEPS)
  string(APPEND mt_aarch64_libs ":${MT_AARCH64_DEPS}/usr/lib/aarch64-linux-gnu")
endif()
set(CMAKE_CROSSCOMPILING_EMULATOR
    qemu-aarch64-static;/usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1;--library-path;${mt_aarch64_libs})
set(MT_CUDA OFF CACHE STRING "" FORCE)
set(MT_BUILD_BENCHMARKS OFF CACHE BOOL "" FORCE)
set(MT_BUILD_TRAINER OFF CACHE BOOL "" FORCE)
