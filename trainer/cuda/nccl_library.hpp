// NCCL opened at run time (dlopen), as cuBLAS is (platforms/cuda/
// cublas_library.hpp): mt_train starts and trains on machines without NCCL;
// only a data-parallel run on GPUs needs it. Built when nccl.h was found at
// configure time (MT_HAVE_NCCL; scripts/install-deps.sh fetches it).
#pragma once

#include <nccl.h>

#include <string>

namespace mt::autograd::gpu {

// The NCCL entry points the trainer calls (types only from the header).
struct NcclLibrary {
  decltype(&ncclGetVersion) get_version = nullptr;
  decltype(&ncclGetUniqueId) get_unique_id = nullptr;
  decltype(&ncclCommInitRank) comm_init_rank = nullptr;
  decltype(&ncclCommDestroy) comm_destroy = nullptr;
  decltype(&ncclCommAbort) comm_abort = nullptr;
  decltype(&ncclAllReduce) all_reduce = nullptr;
  decltype(&ncclGroupStart) group_start = nullptr;
  decltype(&ncclGroupEnd) group_end = nullptr;
  decltype(&ncclGetErrorString) error_string = nullptr;
  std::string path;  // the file opened
  int version = 0;   // NCCL_VERSION_CODE of that file (2.32.3: 23203)
};

// Opened on the first call: $MT_NCCL_LIBRARY when set, else libnccl.so.<the
// header's major> from the loader's path, else the one beside the header
// the build found. Null when none opens, lacks a symbol or is another major
// version than the header; *why then says which and how to install NCCL.
const NcclLibrary* nccl_library(std::string* why);

// Opens the file at `path` as nccl_library() does, for tests of the loader.
// Null with *why when it fails; the library stays loaded otherwise.
const NcclLibrary* open_nccl_library(const std::string& path, std::string* why);

}  // namespace mt::autograd::gpu
