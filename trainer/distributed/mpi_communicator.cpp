// MPI's world as the trainer's Communicator. Sums run in a fixed order (a
// gather to rank 0, added rank by rank, then a broadcast) so that every rank
// holds the same bits and applies the same Adam update, and the result does
// not depend on the reduction algorithm MPI picks for the message size.
#include <mpi.h>

#include <cstdlib>
#include <vector>

#include "distributed/communicator.hpp"

namespace mt::train {

namespace {

Status mpi_error(int code, const char* what) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return Status::error(Errc::io_error, "MPI %s failed: %.*s", what, length, text);
}

template <class T>
MPI_Datatype type_of();
template <>
MPI_Datatype type_of<float>() {
  return MPI_FLOAT;
}
template <>
MPI_Datatype type_of<double>() {
  return MPI_DOUBLE;
}

class World final : public Communicator {
 public:
  World() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    // Errors are returned, not fatal: the trainer reports them in one line.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    // The ranks sharing this node's memory, numbered: the GPU each takes.
    MPI_Comm node;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
      MPI_Comm_rank(node, &local_rank_);
      MPI_Comm_free(&node);
    }
  }
  ~World() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  bool launched() const override { return true; }
  int local_rank() const override { return local_rank_; }
  Status sum(float* values, size_t n) override { return ordered_sum(values, n); }
  Status sum(double* values, size_t n) override { return ordered_sum(values, n); }
  Status broadcast(void* bytes, size_t n) override {
    for (size_t at = 0; at < n; at += kChunk) {
      const int count = int(std::min(kChunk, n - at));
      if (int e = MPI_Bcast(static_cast<char*>(bytes) + at, count, MPI_BYTE, 0, MPI_COMM_WORLD); e != MPI_SUCCESS)
        return mpi_error(e, "broadcast");
    }
    return {};
  }
  Status barrier() override {
    if (int e = MPI_Barrier(MPI_COMM_WORLD); e != MPI_SUCCESS) return mpi_error(e, "barrier");
    return {};
  }
  std::string describe() const override {
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int length = 0;
    MPI_Get_library_version(version, &length);
    std::string library(version, size_t(length));
    library = library.substr(0, library.find(','));
    return "MPI, " + std::to_string(size_) + " ranks (" + library + ")";
  }

 private:
  // MPI counts are ints: large buffers go in chunks.
  static constexpr size_t kChunk = size_t(1) << 28;

  template <class T>
  Status ordered_sum(T* values, size_t n) {
    if (size_ == 1) return {};
    std::vector<T>& all = buffer<T>();
    if (rank_ == 0) all.resize(n * size_t(size_));
    for (size_t at = 0; at < n; at += kChunk) {
      const int count = int(std::min(kChunk, n - at));
      // Rank r's chunk lands at all[r * count ...]: gathered per chunk, summed in rank order.
      if (int e = MPI_Gather(values + at, count, type_of<T>(), rank_ == 0 ? all.data() : nullptr, count, type_of<T>(),
                             0, MPI_COMM_WORLD);
          e != MPI_SUCCESS)
        return mpi_error(e, "gather");
      if (rank_ == 0) {
        for (int i = 0; i < count; ++i) {
          T s = all[size_t(i)];
          for (int r = 1; r < size_; ++r) s += all[size_t(r) * size_t(count) + size_t(i)];
          values[at + size_t(i)] = s;
        }
      }
    }
    return broadcast(values, n * sizeof(T));
  }

  template <class T>
  std::vector<T>& buffer();

  int rank_ = 0, size_ = 1, local_rank_ = 0;
  std::vector<float> floats_;
  std::vector<double> doubles_;
};

template <>
std::vector<float>& World::buffer<float>() {
  return floats_;
}
template <>
std::vector<double>& World::buffer<double>() {
  return doubles_;
}

}  // namespace

namespace {

// Whether a launcher started this process as one of several: mpirun (Open
// MPI), srun or another PMI/PMIx launcher, MPICH's Hydra.
bool launched_by_mpi() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "PMI_RANK"})
    if (std::getenv(name) != nullptr) return true;
  return false;
}

}  // namespace

Expected<std::unique_ptr<Communicator>> world_communicator(int* argc, char*** argv) {
  // A process no launcher started is a world of one: MPI_Init would only
  // cost there, and Open MPI's singleton start can abort the process without
  // a word of ours when memory is short (tools:low_memory's mt_train case).
  if (!launched_by_mpi()) return local_communicator();
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    if (int e = MPI_Init(argc, argv); e != MPI_SUCCESS) return mpi_error(e, "init");
  }
  return std::unique_ptr<Communicator>(new World());
}

bool mpi_available() { return true; }

}  // namespace mt::train
