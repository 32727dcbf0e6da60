// A study over MPI ranks: rank 0 hands out pending runs one at a time and writes their records; every rank trains
// (and writes a base run's record as it evaluates it, StudyRunner::execute).
// Not part of the umbrella header: only code linked to posenc::mpi includes it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <exception>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "posenc/config.hpp"
#include "posenc/distributed/mpi.hpp"
#include "posenc/study/record.hpp"
#include "posenc/study/runner.hpp"

namespace posenc::mpi {

namespace detail {
enum StudyTag : int {
  want_run = 1,      // rank → 0: give me a run
  assigned_run = 2,  // 0 → rank: "<index> <follower index>…" (StudyRunner::WorkItem), or "-1": no more work
  run_record = 3,    // rank → 0: "<index>\n<record JSON>"
  run_failed = 4,    // rank → 0: "<index>\n<what went wrong>"
};

inline std::pair<std::size_t, std::string> split_indexed(const std::string& text) {
  const std::size_t newline = text.find('\n');
  return {std::stoul(text.substr(0, newline)), text.substr(newline + 1)};
}
}  // namespace detail

// A rank other than 0: asks rank 0 for runs until there are none left, and sends back each
// record (or what went wrong); a run's followers (its fine-tunes) follow it when it finished.
inline void serve_study_runs(const StudyRunner& runner, StudyObserver& observer) {
  const auto execute = [&](std::size_t index) {
    const RunSpec& spec = runner.plan().at(index);
    observer.started(0, spec.id());
    try {
      const RunRecord record = runner.execute(spec, observer, 0);
      send_text(std::to_string(index) + "\n" + to_json(record).dump(), 0, detail::run_record);
      // its fine-tunes, next on this rank, need the record now, before rank 0 may have written it
      if (!spec.fine_tune) write_record(record, runner.paths().record(spec));
      observer.finished(0, RunEnd::done, "done " + spec.id());
      return true;
    } catch (const std::exception& e) {
      send_text(std::to_string(index) + "\n" + e.what(), 0, detail::run_failed);
      observer.finished(0, RunEnd::failed, std::string("FAILED ") + spec.id() + ": " + e.what());
      return false;
    }
  };
  for (;;) {
    send_text("", 0, detail::want_run);
    std::istringstream assigned(receive_text(0, detail::assigned_run).second);
    long long index = -1;
    assigned >> index;
    if (index < 0) return;
    if (!execute(static_cast<std::size_t>(index))) continue;
    for (std::size_t follower = 0; assigned >> follower;) execute(follower);
  }
}

// Rank 0: trains pending runs itself in a thread (job 0) while this thread, the one that talks
// to MPI, answers the other `ranks − 1` until each has been told there is no more work. Rank r's
// runs show as job r.
inline void coordinate_study_runs(const StudyRunner& runner, const std::vector<std::size_t>& pending, int ranks,
                                  StudyObserver& observer, StudyFailures& failures) {
  const std::vector<StudyRunner::WorkItem> items = runner.work_items(pending);
  std::atomic<std::size_t> next{0};
  std::map<std::size_t, std::int64_t> steps_assigned;  // a run's steps still to train when a rank took it
  std::thread own([&] { runner.work(0, items, next, observer, failures, " (rank 0)"); });
  int serving = ranks - 1;
  while (serving > 0) {
    if (!message_waiting()) {  // sleep rather than spin: the cores are for training
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    const auto [from, text] = receive_text();
    const auto job = static_cast<std::size_t>(from.source);
    const std::string where = " (rank " + std::to_string(from.source) + ")";
    if (from.tag == detail::want_run) {
      const std::size_t i = next++;
      if (i < items.size()) {
        std::string assigned = std::to_string(items[i].run);
        steps_assigned[items[i].run] = runner.steps_to_train({items[i].run});
        for (std::size_t follower : items[i].followers) {
          assigned += " " + std::to_string(follower);
          steps_assigned[follower] = runner.steps_to_train({follower});
        }
        send_text(assigned, from.source, detail::assigned_run);
        observer.started(job, runner.plan()[items[i].run].id() + where);
      } else {
        send_text("-1", from.source, detail::assigned_run);
        --serving;
      }
    } else if (from.tag == detail::run_record) {
      const auto [index, json] = detail::split_indexed(text);
      const RunSpec& spec = runner.plan().at(index);
      write_record(run_record_from_json(nlohmann::json::parse(json)), runner.paths().record(spec));
      const auto steps = steps_assigned.find(index);
      observer.finished(job, RunEnd::done, "done " + spec.id() + where,
                        steps == steps_assigned.end() ? 0 : steps->second);
    } else if (from.tag == detail::run_failed) {
      const auto [index, what] = detail::split_indexed(text);
      const RunSpec& spec = runner.plan().at(index);
      failures.add(spec.id() + where + ": " + what);
      observer.finished(job, RunEnd::failed, "FAILED " + spec.id() + where + ": " + what);
    } else {
      own.join();
      fail("study: rank ", from.source, " sent a message with unknown tag ", from.tag);
    }
  }
  own.join();
}

}  // namespace posenc::mpi
