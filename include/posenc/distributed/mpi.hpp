// posenc::mpi: a session started only under an MPI launcher, the data-parallel ProcessGroup, and text messages.
// Not part of the umbrella header: only code that links MPI (the posenc::mpi CMake target) includes it.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "posenc/config.hpp"
#include "posenc/threads.hpp"
#include "posenc/train/process_group.hpp"

namespace posenc::mpi {

// True when an MPI launcher (Open MPI's or MPICH's mpirun, Slurm's srun) started this process.
inline bool launched_by_mpi() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"})
    if (std::getenv(var) != nullptr) return true;
  return false;
}

// An MPI return code as an error naming the call.
inline void check(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  fail(call, " failed: ", std::string(text, static_cast<std::size_t>(length)));
}

// MPI from construction to destruction when an MPI launcher started the program; otherwise a world
// of one process that never touches MPI, so the same program runs alone exactly as before.
// Only the thread that made the session calls MPI (MPI_THREAD_FUNNELED).
class Session {
 public:
  Session(int& argc, char**& argv) {
    if (!launched_by_mpi()) return;
    int provided = 0;
    check(MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    active_ = true;
    if (provided < MPI_THREAD_FUNNELED)
      fail("MPI_Init_thread: this MPI library does not allow threads beside the MPI thread (MPI_THREAD_FUNNELED)");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);  // errors become posenc::Error
    check(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
    check(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
    MPI_Comm node;  // the ranks that share this machine's memory, and so its cores
    check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node),
          "MPI_Comm_split_type");
    check(MPI_Comm_size(node, &ranks_on_node_), "MPI_Comm_size");
    MPI_Comm_free(&node);
  }
  ~Session() {
    if (active_) MPI_Finalize();
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  bool active() const { return active_; }
  int rank() const { return rank_; }
  int size() const { return size_; }

  // This rank's share of its machine's cores: the machine's cores over the ranks placed on it, and
  // never more than the cores the launcher bound this rank to (Open MPI binds each rank to one
  // core when it starts two or fewer; `mpirun --bind-to none` lifts that). POSENC_NUM_THREADS,
  // when set, wins.
  int default_threads() const {
    if (const std::optional<int> n = env_num_threads()) return *n;
    const unsigned machine = std::thread::hardware_concurrency();
    const int share = std::max(1, static_cast<int>(machine == 0 ? 1 : machine) / ranks_on_node_);
    return std::min(share, available_cores());
  }

  // Ends every rank of the job: for an error after which the others would wait forever.
  [[noreturn]] void abort(int code) const {
    if (active_) MPI_Abort(MPI_COMM_WORLD, code);
    std::exit(code);
  }

 private:
  bool active_ = false;
  int rank_ = 0, size_ = 1, ranks_on_node_ = 1;
};

// Every rank of MPI_COMM_WORLD as a ProcessGroup.
class Group final : public ProcessGroup {
 public:
  explicit Group(const Session& session) : rank_(session.rank()), size_(session.size()) {
    if (!session.active()) fail("mpi::Group: MPI is not running (start the program with mpirun)");
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void sum(float* data, std::size_t n) override { allreduce(data, n, MPI_FLOAT); }
  void sum(double* data, std::size_t n) override { allreduce(data, n, MPI_DOUBLE); }
  void broadcast(void* bytes, std::size_t n) override {
    auto* p = static_cast<char*>(bytes);
    for (std::size_t done = 0; done < n;) {  // MPI counts are ints
      const int count = static_cast<int>(std::min<std::size_t>(n - done, INT_MAX));
      check(MPI_Bcast(p + done, count, MPI_BYTE, 0, MPI_COMM_WORLD), "MPI_Bcast");
      done += static_cast<std::size_t>(count);
    }
  }
  using ProcessGroup::broadcast;

 private:
  template <class S>
  static void allreduce(S* data, std::size_t n, MPI_Datatype type) {
    for (std::size_t done = 0; done < n;) {
      const int count = static_cast<int>(std::min<std::size_t>(n - done, INT_MAX));
      check(MPI_Allreduce(MPI_IN_PLACE, data + done, count, type, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
      done += static_cast<std::size_t>(count);
    }
  }
  int rank_, size_;
};

// Point-to-point text messages, for handing out work and collecting results.
struct Envelope {
  int source = 0;
  int tag = 0;
};

inline void send_text(const std::string& text, int destination, int tag) {
  if (text.size() > static_cast<std::size_t>(INT_MAX))
    fail("mpi::send_text: a message of ", text.size(), " bytes is too long");
  check(MPI_Send(text.data(), static_cast<int>(text.size()), MPI_CHAR, destination, tag, MPI_COMM_WORLD), "MPI_Send");
}

// The next message for this rank from `source` (any rank by default) with `tag` (any by default);
// blocks until there is one.
inline std::pair<Envelope, std::string> receive_text(int source = MPI_ANY_SOURCE, int tag = MPI_ANY_TAG) {
  MPI_Status status;
  check(MPI_Probe(source, tag, MPI_COMM_WORLD, &status), "MPI_Probe");
  int length = 0;
  check(MPI_Get_count(&status, MPI_CHAR, &length), "MPI_Get_count");
  std::string text(static_cast<std::size_t>(length), '\0');
  check(MPI_Recv(text.data(), length, MPI_CHAR, status.MPI_SOURCE, status.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
        "MPI_Recv");
  return {Envelope{status.MPI_SOURCE, status.MPI_TAG}, std::move(text)};
}

// Whether a message is waiting for this rank, without blocking.
inline bool message_waiting() {
  int flag = 0;
  check(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE), "MPI_Iprobe");
  return flag != 0;
}

}  // namespace posenc::mpi
