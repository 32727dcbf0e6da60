// StopSignal: Ctrl-C or SIGTERM asks training to stop after its step or evaluation batch, saved; a second exits.
#pragma once

#include <unistd.h>

#include <csignal>

namespace examples {

// The signal that asked to stop, 0 while none has. A program-wide flag because a signal handler
// can reach nothing else.
inline volatile std::sig_atomic_t stop_signal = 0;

extern "C" inline void request_stop(int signal) {
  if (stop_signal != 0) _exit(130);  // the second: at once, as the shell's Ctrl-C would
  stop_signal = signal;
  static const char message[] =
      "\nstopping after this step (or this evaluation's batch) and saving the run (press Ctrl-C again to quit at "
      "once, losing what is not saved)\n";
  const ssize_t ignored = write(STDERR_FILENO, message, sizeof message - 1);
  (void)ignored;
}

// Installs request_stop for SIGINT and SIGTERM.
inline void stop_on_signals() {
  struct sigaction action {};
  action.sa_handler = request_stop;
  // system calls the signal interrupts restart rather than fail with EINTR inside a library
  // (OpenMP's, oneDNN's, MPI's) that may not expect it
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

inline bool stop_requested() { return stop_signal != 0; }

}  // namespace examples
