// World: the processes a program runs as — an MPI job's ranks under mpirun (built with MPI), else this process.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <new>
#include <string>

#include <posenc/config.hpp>
#include <posenc/threads.hpp>
#include <posenc/train/process_group.hpp>

#if POSENC_WITH_MPI
#include <posenc/distributed/mpi.hpp>
#endif

namespace examples {

// Construct it first thing in main (MPI may edit argv), then call check() where errors are caught.
class World {
 public:
#if POSENC_WITH_MPI
  World(int& argc, char**& argv) : session_(argc, argv) {}
  int rank() const { return session_.rank(); }
  int size() const { return session_.size(); }
  // This rank's share of its machine's cores (POSENC_NUM_THREADS wins).
  int default_threads() const { return session_.default_threads(); }
  // The ranks as a ProcessGroup for data-parallel training; nullptr when alone.
  std::unique_ptr<posenc::ProcessGroup> group() const {
    if (size() == 1) return nullptr;
    return std::make_unique<posenc::mpi::Group>(session_);
  }
  // Ends the whole job: after an error on one rank the others would wait for it forever.
  [[noreturn]] void abort(int code) const { session_.abort(code); }
  void check() const {}

 private:
  posenc::mpi::Session session_;
#else
  World(int&, char**&) {}
  // mpirun -np N of a build without MPI would start N independent copies writing the same files.
  void check() const {
    for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
      if (const char* n = std::getenv(var); n != nullptr && std::atoi(n) > 1)
        posenc::fail("this program was built without MPI, but ", var, "=", n,
                     " says mpirun started several copies; rebuild with libopenmpi-dev installed");
  }
  int rank() const { return 0; }
  int size() const { return 1; }
  int default_threads() const { return posenc::default_num_threads(); }
  std::unique_ptr<posenc::ProcessGroup> group() const { return nullptr; }
  [[noreturn]] void abort(int code) const { std::exit(code); }
#endif
};

// A program's last words on an error: "<program>: <what>" on stderr and exit status 2; under mpirun
// the rank is named and the whole job ends, since the other ranks would wait for this one forever.
inline int fail_and_exit(const World& world, const char* program, const std::exception& caught) {
  std::fflush(stdout);
  // an allocation past what the memory checks foresaw: say so in words, not as "std::bad_alloc"
  const posenc::Error out_of_memory(
      "out of memory: an allocation failed (std::bad_alloc); lower --batch, --context or the lengths evaluated");
  const std::exception& error = dynamic_cast<const std::bad_alloc*>(&caught) != nullptr ? out_of_memory : caught;
  if (world.size() > 1) {
    std::fprintf(stderr, "%s (rank %d): %s\n", program, world.rank(), error.what());
    world.abort(2);
  }
  std::fprintf(stderr, "%s: %s\n", program, error.what());
  return 2;
}

}  // namespace examples
