// study: the positional-encoding study in one command — every run of the design, resumable, then the statistics.
//   study                      the published design (4 variants × 3 seeds × 2000 steps, + 4000-step runs for seed 1337)
//   study --variants rope,alibi --seeds 1,2 --steps 300 --extended-steps 0 --out runs/small-study
// Writes OUT/records/<run>.json per run, OUT/runs/<run>/ (checkpoints), and OUT/summary.{json,csv,md}.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <unistd.h>

#include <posenc/transformer.hpp>

#include "../common/any_model.hpp"
#include "../common/compute.hpp"
#include "../common/duration.hpp"
#include "../common/world.hpp"

namespace fs = std::filesystem;

namespace {

// The view across the whole study: runs done, each running run's progress, and an ETA.
class StudyProgress {
 public:
  // prefix starts every line (a rank's name in a distributed study); remaining_steps 0: no ETA;
  // redraw: a one-line view on a terminal (false under mpirun, which gives ranks a pseudo-terminal)
  StudyProgress(std::size_t total_runs, std::size_t done, std::int64_t remaining_steps, bool redraw,
                std::string prefix = "")
      : total_(total_runs), done_(done), remaining_steps_(remaining_steps), prefix_(std::move(prefix)),
        terminal_(redraw && ::isatty(::fileno(stdout)) == 1), start_(Clock::now()) {}

  void started(std::size_t worker, const std::string& id) {
    std::lock_guard lock(mutex_);
    if (workers_.size() <= worker) workers_.resize(worker + 1);
    workers_[worker] = {id, 0, 0};
    line("start " + id);
  }
  void step(std::size_t worker, const posenc::StepReport& r) {
    std::lock_guard lock(mutex_);
    workers_[worker].step = r.step;
    workers_[worker].total = r.total;
    ++steps_done_;
    if (terminal_) {
      std::string text = "\r\x1b[K[" + std::to_string(done_) + "/" + std::to_string(total_) + " runs]";
      for (const Worker& w : workers_)
        if (!w.id.empty()) text += "  " + w.id + " " + std::to_string(w.step) + "/" + std::to_string(w.total);
      text += "  ETA " + eta();
      std::fputs(text.c_str(), stdout);
      std::fflush(stdout);
      dirty_ = true;
    }
  }
  void eval(std::size_t worker, const posenc::EvalRecord& r) {
    std::lock_guard lock(mutex_);
    char text[160];
    std::snprintf(text, sizeof text, "%s step %lld: train %.4f val %.4f (estimates), ETA %s",
                  workers_[worker].id.c_str(), static_cast<long long>(r.step), r.train_loss, r.val_loss, eta().c_str());
    line(text);
  }
  // steps_elsewhere: the steps of a run another rank trained, which step() never saw
  void finished(std::size_t worker, const std::string& message, std::int64_t steps_elsewhere = 0) {
    std::lock_guard lock(mutex_);
    ++done_;
    steps_done_ += steps_elsewhere;
    workers_[worker].id.clear();
    line("[" + std::to_string(done_) + "/" + std::to_string(total_) + " runs] " + message);
  }

 private:
  using Clock = std::chrono::steady_clock;
  struct Worker {
    std::string id;
    std::int64_t step = 0, total = 0;
  };
  std::string eta() const {
    const double seconds = std::chrono::duration<double>(Clock::now() - start_).count();
    if (steps_done_ == 0 || remaining_steps_ == 0) return "?";
    return examples::format_duration(seconds / static_cast<double>(steps_done_) *
                           static_cast<double>(std::max<std::int64_t>(0, remaining_steps_ - steps_done_)));
  }
  void line(const std::string& text) {
    if (dirty_) std::fputc('\n', stdout);
    dirty_ = false;
    std::printf("%s%s\n", prefix_.c_str(), text.c_str());
    std::fflush(stdout);
  }
  std::mutex mutex_;
  std::size_t total_, done_;
  std::int64_t remaining_steps_, steps_done_ = 0;
  std::string prefix_;
  bool terminal_, dirty_ = false;
  Clock::time_point start_;
  std::vector<Worker> workers_;
};

struct StudyPaths {
  fs::path out;
  fs::path record(const posenc::RunSpec& r) const { return out / "records" / (r.id() + ".json"); }
  fs::path run_dir(const posenc::RunSpec& r) const { return out / "runs" / r.id(); }
};

std::optional<posenc::RunRecord> load_record(const fs::path& path) {
  if (!fs::exists(path)) return std::nullopt;
  std::ifstream in(path);
  try {
    return posenc::run_record_from_json(nlohmann::json::parse(in));
  } catch (const nlohmann::json::exception& e) {
    posenc::fail("run record '", path.string(), "' is not a run record: ", e.what(), " (delete it to run again)");
  }
}

void extrapolate_record(const posenc::StudyDesign& design, posenc::RunRecord& record, const posenc::CharDataset& data);

// Trains one run (resuming its directory if it was interrupted; an extended run starts from the
// finished base run of the same variant and seed), evaluates the final model by full passes (and
// a base run at the --extrapolate lengths) and returns the run's record.
posenc::RunRecord execute_run(const posenc::StudyDesign& design, const posenc::RunSpec& spec, const posenc::RunConfig& config,
                 const posenc::CharDataset& data, const StudyPaths& paths, StudyProgress& progress,
                 std::size_t worker) {
  const posenc::RunDirectory run(paths.run_dir(spec));
  const fs::path marker = run.dir() / "study-run.json";
  bool resume = false;
  if (fs::exists(run.optimizer()) && fs::exists(marker)) {
    std::ifstream in(marker);
    if (!posenc::run_config_from_json(nlohmann::json::parse(in), "'" + marker.string() + "'").same_run(config))
      posenc::fail("run directory '", run.dir().string(), "' was made with another configuration; delete it to run again");
    resume = true;
  } else if (spec.steps > design.steps) {
    // The first `steps` of an extended run are the base run (same seed, constant learning rate).
    const posenc::RunSpec base{spec.variant, spec.seed, design.steps};
    const posenc::RunDirectory base_run(paths.run_dir(base));
    if (fs::exists(paths.record(base)) && fs::exists(base_run.optimizer())) {
      fs::create_directories(run.dir());
      for (const auto& entry : fs::directory_iterator(base_run.dir()))
        if (entry.path().filename() != "study-run.json")
          fs::copy_file(entry.path(), run.dir() / entry.path().filename(), fs::copy_options::overwrite_existing);
      resume = true;
    }
  }
  fs::create_directories(run.dir());
  posenc::write_file_atomically(marker.string(), posenc::to_json(config).dump(2) + "\n");

  const posenc::TrainConfig& train = config.train;
  const auto model = examples::make_model(config.shape(),
                                          config.model_config(data.vocab_size()));
  posenc::TrainingCallbacks callbacks;
  callbacks.on_step = [&](const posenc::StepReport& r) { progress.step(worker, r); };
  callbacks.on_eval = [&](const posenc::EvalRecord& r) { progress.eval(worker, r); };
  const auto curve = model->train(data, train, run, resume, callbacks, nullptr);
  posenc::RunRecord record;
  record.config = config;
  record.curve = curve;
  record.final_train_loss = model->evaluate_loss(data.train(), train.context, train.batch).loss;
  record.final_val_loss = model->evaluate_loss(data.val(), train.context, train.batch).loss;
  record.wall_seconds = curve.back().elapsed_seconds;
  record.tokens_per_second = curve.back().tokens_per_second;
  record.checkpoint = run.final_model();
  if (spec.steps == design.steps) extrapolate_record(design, record, data);
  return record;
}

void write_record(const posenc::RunRecord& record, const fs::path& path) {
  fs::create_directories(path.parent_path());
  posenc::write_file_atomically(path.string(), posenc::to_json(record).dump(2) + "\n");
}

// Adds the lengths the record lacks to its extrapolation entries, evaluating its final checkpoint.
void extrapolate_record(const posenc::StudyDesign& design, posenc::RunRecord& record, const posenc::CharDataset& data) {
  std::vector<std::size_t> missing;
  for (std::size_t L : design.extrapolate)
    if (record.extrapolation_at(L) == nullptr) missing.push_back(L);
  if (missing.empty()) return;
  const posenc::SafetensorsFile file = posenc::read_safetensors(record.checkpoint);
  const posenc::CheckpointInfo info = posenc::read_checkpoint_info(file);
  const std::size_t longest = *std::max_element(missing.begin(), missing.end());
  const auto model = examples::make_model({info.policy, info.layers, info.dim, info.heads},
                                          posenc::ModelConfig{.vocab_size = data.vocab_size(),
                                                              .context = info.context,
                                                              .max_context = std::max(longest, 16 * info.context)});
  model->load_parameters(file);
  for (std::size_t L : missing)
    record.extrapolation.push_back(
        posenc::evaluate_at_length(*model, data.val(), L, std::max<std::size_t>(1, L / 2)));
}

#if POSENC_WITH_MPI
// A distributed study (mpirun -np N study): rank 0 hands out the pending runs one at a time as
// ranks ask for work, writes the records they send back, and writes the summary; every other rank
// trains what it is given. Rank 0 also trains, in a thread beside the one that talks to MPI.
enum MessageTag : int {
  want_run = 1,      // rank → 0: give me a run
  assigned_run = 2,  // 0 → rank: the run's index in the plan, or −1: no more work
  run_record = 3,    // rank → 0: "<index>\n<record JSON>"
  run_failed = 4,    // rank → 0: "<index>\n<what went wrong>"
};

std::pair<std::size_t, std::string> split_indexed(const std::string& text) {
  const std::size_t newline = text.find('\n');
  return {std::stoul(text.substr(0, newline)), text.substr(newline + 1)};
}

// A rank other than 0: asks for runs until there are none left.
void serve_as_worker(int rank, const posenc::StudyDesign& design, const std::vector<posenc::RunSpec>& plan,
                     const std::string& digest, const posenc::CharDataset& data, const StudyPaths& paths) {
  StudyProgress progress(plan.size(), 0, 0, false, "[rank " + std::to_string(rank) + "] ");
  for (;;) {
    posenc::mpi::send_text("", 0, want_run);
    const long long index = std::stoll(posenc::mpi::receive_text(0, assigned_run).second);
    if (index < 0) return;
    const posenc::RunSpec& spec = plan[static_cast<std::size_t>(index)];
    progress.started(0, spec.id());
    try {
      const posenc::RunRecord record =
          execute_run(design, spec, posenc::run_config(design, spec, digest), data, paths, progress, 0);
      posenc::mpi::send_text(std::to_string(index) + "\n" + posenc::to_json(record).dump(), 0, run_record);
      progress.finished(0, "done " + spec.id());
    } catch (const std::exception& e) {
      posenc::mpi::send_text(std::to_string(index) + "\n" + e.what(), 0, run_failed);
      progress.finished(0, std::string("FAILED ") + spec.id() + ": " + e.what());
    }
  }
}

// Rank 0's MPI thread: answers every other rank until each has been told there is no more work.
// `next` is shared with rank 0's own worker thread; rank r's runs show in progress slot r.
void coordinate(int ranks, std::atomic<std::size_t>& next, const std::vector<std::size_t>& pending,
                const std::vector<posenc::RunSpec>& plan, const StudyPaths& paths, StudyProgress& progress,
                std::vector<std::string>& failures, std::mutex& failures_mutex) {
  int serving = ranks - 1;
  while (serving > 0) {
    if (!posenc::mpi::message_waiting()) {  // sleep rather than spin: the cores are for training
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    const auto [from, text] = posenc::mpi::receive_text();
    const auto slot = static_cast<std::size_t>(from.source);
    const std::string where = " (rank " + std::to_string(from.source) + ")";
    if (from.tag == want_run) {
      const std::size_t i = next++;
      if (i < pending.size()) {
        posenc::mpi::send_text(std::to_string(pending[i]), from.source, assigned_run);
        progress.started(slot, plan[pending[i]].id() + where);
      } else {
        posenc::mpi::send_text("-1", from.source, assigned_run);
        --serving;
      }
    } else if (from.tag == run_record) {
      const auto [index, json] = split_indexed(text);
      const posenc::RunSpec& spec = plan.at(index);
      write_record(posenc::run_record_from_json(nlohmann::json::parse(json)), paths.record(spec));
      progress.finished(slot, "done " + spec.id() + where, spec.steps);
    } else if (from.tag == run_failed) {
      const auto [index, what] = split_indexed(text);
      const posenc::RunSpec& spec = plan.at(index);
      {
        std::lock_guard lock(failures_mutex);
        failures.push_back(spec.id() + where + ": " + what);
      }
      progress.finished(slot, "FAILED " + spec.id() + where + ": " + what);
    } else {
      posenc::fail("study: rank ", from.source, " sent a message with unknown tag ", from.tag);
    }
  }
}
#endif

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::string item;
  for (char c : text + ",") {
    if (c == ',') {
      if (!item.empty()) items.push_back(item);
      item.clear();
    } else if (c != ' ') {
      item.push_back(c);
    }
  }
  return items;
}

std::vector<std::uint64_t> parse_seeds(const std::string& text, const char* option) {
  std::vector<std::uint64_t> seeds;
  for (const std::string& s : split_list(text)) {
    if (s.find_first_not_of("0123456789") != std::string::npos || s.size() > 19)
      posenc::fail(option, ": '", s, "' is not a seed (a whole number ≥ 0)");
    seeds.push_back(std::stoull(s));
  }
  return seeds;
}

}  // namespace

int main(int argc, char** argv) {
  const examples::World world(argc, argv);  // MPI under mpirun: the runs spread over the ranks
  CLI::App app{"Run the positional-encoding study: every variant × seed, resumable, then the statistics."};
  posenc::StudyDesign design;
  const auto join = [](const auto& items) {
    std::string text;
    for (const auto& item : items) {
      std::ostringstream one;
      one << item;
      text += (text.empty() ? "" : ",") + one.str();
    }
    return text;
  };
  std::string variants = join(design.variants), seeds = join(design.seeds), extended_seeds = join(design.extended_seeds);
  std::string data = "data/tinyshakespeare/input.txt", out = "runs/study", precision = "fp32";
  std::string extrapolate;
  int jobs = 1, threads = 0;
  bool summary_only = false;
  app.add_option("--variants", variants, "Comma-separated positional encodings: " + [] {
    std::string names;
    for (const auto& n : posenc::policy_names()) names += (names.empty() ? "" : ", ") + n;
    return names;
  }())->capture_default_str();
  app.add_option("--seeds", seeds, "Comma-separated seeds of the base runs")->capture_default_str();
  app.add_option("--steps", design.steps, "Steps of the base runs")->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 40))->capture_default_str();
  app.add_option("--extended-steps", design.extended_steps, "Steps of the extended runs (0: none)")->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 40))->capture_default_str();
  app.add_option("--extended-seeds", extended_seeds, "Seeds of the extended runs")->capture_default_str();
  app.add_option("--eval-every", design.run.train.eval_every, "Steps between loss estimates")->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 40))->capture_default_str();
  app.add_option("--eval-iters", design.run.train.eval_iters, "Batches per loss estimate")->check(CLI::Range(std::size_t{1}, std::size_t{1} << 30))->capture_default_str();
  app.add_option("--batch", design.run.train.batch, "Windows per batch")->check(CLI::Range(std::size_t{1}, std::size_t{1} << 20))->capture_default_str();
  app.add_option("--context", design.run.train.context, "Tokens per window")->check(CLI::Range(std::size_t{1}, std::size_t{1} << 20))->capture_default_str();
  app.add_option("--lr", design.run.train.lr, "AdamW learning rate")->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--weight-decay", design.run.train.weight_decay, "AdamW weight decay")->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--embedding-std", design.run.embedding_std,
                 "Std of the token and learned position tables' normal start (PyTorch's nn.Embedding: 1)")
      ->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--precision", precision,
                 "The training GEMMs' operands: fp32, or bf16 with float accumulation (needs oneDNN and a CPU with "
                 "AVX512_BF16 or AMX)")
      ->check(CLI::IsMember({"fp32", "bf16"}))->capture_default_str();
  app.add_option("--layers", design.run.layers, "Transformer blocks")->capture_default_str();
  app.add_option("--dim", design.run.dim, "Model width")->capture_default_str();
  app.add_option("--heads", design.run.heads, "Attention heads")->capture_default_str();
  app.add_option("--data", data, "Corpus")->capture_default_str();
  app.add_option("--out", out, "Study directory")->capture_default_str();
  app.add_option("--jobs", jobs, "Runs at once; the cores are split between them (under mpirun: 1, one run per rank)")->check(CLI::Range(1, 64))->capture_default_str();
  app.add_option("--threads", threads, "Cores in all, fixed (default: every free core, fewer while other processes busy them, or $POSENC_NUM_THREADS; under mpirun: per rank, "
                                       "default the rank's share of its machine)")->check(CLI::Range(1, 4096));
  app.add_option("--extrapolate", extrapolate, "Evaluate every base run's final model at these lengths, e.g. 128,256,512,1024");
  app.add_flag("--summary-only", summary_only, "Write the summary of the finished runs without training");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help);
  } catch (const CLI::ParseError& error) {
    app.exit(error);
    return 2;
  }

  try {
    world.check();
    if (world.size() > 1 && jobs != 1)
      posenc::fail("--jobs ", jobs, ": under mpirun every rank trains one run at a time; start more ranks instead");
    design.variants = split_list(variants);
    design.seeds = parse_seeds(seeds, "--seeds");
    design.extended_seeds = parse_seeds(extended_seeds, "--extended-seeds");
    // A repeated variant or seed would count the same runs twice in every statistic.
    const auto reject_repeats = [](const auto& values, const char* option) {
      for (std::size_t i = 0; i < values.size(); ++i)
        if (std::find(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(i), values[i]) !=
            values.begin() + static_cast<std::ptrdiff_t>(i))
          posenc::fail(option, ": '", values[i], "' is given twice");
    };
    reject_repeats(design.variants, "--variants");
    reject_repeats(design.seeds, "--seeds");
    reject_repeats(design.extended_seeds, "--extended-seeds");
    if (design.variants.empty()) posenc::fail("--variants: no variant given");
    if (design.seeds.empty()) posenc::fail("--seeds: no seed given");
    for (const std::string& v : design.variants) posenc::with_policy(v, []<class P>() {});  // names check
    if (design.extended_steps == 0) design.extended_seeds.clear();  // no extended runs: nothing to check
    for (std::uint64_t seed : design.extended_seeds)
      if (std::find(design.seeds.begin(), design.seeds.end(), seed) == design.seeds.end())
        posenc::fail("--extended-seeds: ", seed, " is not among --seeds; an extended run continues the base run of its seed");
    if (design.extended_steps != 0 && design.extended_steps <= design.steps)
      posenc::fail("--extended-steps ", design.extended_steps, " must exceed --steps ", design.steps, " (or be 0)");
    for (const std::string& L : split_list(extrapolate)) {
      if (L.find_first_not_of("0123456789") != std::string::npos || L.size() > 9 || std::stoul(L) == 0)
        posenc::fail("--extrapolate: '", L, "' is not a length (a whole number ≥ 1)");
      design.extrapolate.push_back(std::stoul(L));
    }
    reject_repeats(design.extrapolate, "--extrapolate");
    design.run.data = data;
    design.run.precision = posenc::parse_precision(precision);
    if (design.run.precision == posenc::Precision::bf16)
      if (const auto reason = posenc::bf16_unsupported_reason()) posenc::fail("--precision bf16: ", *reason);
    const std::string text = posenc::read_text_file(data);
    const posenc::CharDataset dataset(text);
    const std::string digest = posenc::corpus_digest(text);
    const StudyPaths paths{out};
    const int cores = threads > 0 ? threads : world.default_threads();
    if (threads > 0) posenc::set_num_threads(std::max(1, cores / jobs));
    else posenc::set_adaptive_num_threads(std::max(1, cores / jobs));
    const std::vector<posenc::RunSpec> plan = posenc::plan_runs(design);
#if POSENC_WITH_MPI
    if (world.rank() != 0) {
      serve_as_worker(world.rank(), design, plan, digest, dataset, paths);
      return 0;
    }
#endif
    fs::create_directories(paths.out / "records");

    std::vector<std::size_t> pending;  // indices into plan
    std::int64_t pending_steps = 0;
    for (std::size_t i = 0; i < plan.size(); ++i) {
      const posenc::RunSpec& spec = plan[i];
      const posenc::RunConfig config = posenc::run_config(design, spec, digest);
      if (const auto record = load_record(paths.record(spec))) {
        if (!record->config.same_run(config))
          posenc::fail("'", paths.record(spec).string(), "' holds a run made with another configuration (",
                       posenc::to_json(record->config).dump(), "); use another --out or delete it");
        continue;
      }
      pending.push_back(i);
      // an extended run continues its base run: only the steps past the base run are trained
      pending_steps += spec.steps > design.steps ? spec.steps - design.steps : spec.steps;
    }
    if (summary_only) pending.clear();
    std::printf("%s\n", examples::compute_summary().c_str());
    std::printf("study: %zu runs in the design, %zu finished, %zu to run with %d %s × %d thread(s) -> %s\n",
                plan.size(), plan.size() - pending.size(), pending.size(), world.size() > 1 ? world.size() : jobs,
                world.size() > 1 ? "MPI rank(s)" : "job(s)", std::max(1, cores / jobs), out.c_str());
    std::fflush(stdout);

    std::vector<std::string> failures;
    if (!pending.empty() || world.size() > 1) {
      StudyProgress progress(plan.size(), plan.size() - pending.size(), pending_steps, world.size() == 1);
      std::atomic<std::size_t> next{0};
      std::mutex failures_mutex;
      const std::string where = world.size() > 1 ? " (rank 0)" : "";
      auto worker = [&](std::size_t id) {
        for (std::size_t i = next++; i < pending.size(); i = next++) {
          const posenc::RunSpec& spec = plan[pending[i]];
          progress.started(id, spec.id() + where);
          try {
            write_record(execute_run(design, spec, posenc::run_config(design, spec, digest), dataset, paths, progress, id),
                         paths.record(spec));
            progress.finished(id, "done " + spec.id() + where);
          } catch (const std::exception& e) {
            {
              std::lock_guard lock(failures_mutex);
              failures.push_back(spec.id() + where + ": " + e.what());
            }
            progress.finished(id, "FAILED " + spec.id() + where + ": " + e.what());
          }
        }
      };
      std::vector<std::thread> workers;
      for (int j = 1; j < jobs; ++j) workers.emplace_back(worker, static_cast<std::size_t>(j));
#if POSENC_WITH_MPI
      if (world.size() > 1) {
        workers.emplace_back(worker, std::size_t{0});  // this thread talks to the other ranks
        try {
          coordinate(world.size(), next, pending, plan, paths, progress, failures, failures_mutex);
        } catch (const std::exception& e) {
          std::fprintf(stderr, "study (rank 0): %s\n", e.what());
          world.abort(2);  // the other ranks would wait for an answer forever
        }
      } else {
        worker(0);
      }
#else
      worker(0);
#endif
      for (auto& w : workers) w.join();
    }

    std::vector<posenc::RunRecord> records;
    for (const posenc::RunSpec& spec : plan)
      if (auto r = load_record(paths.record(spec))) {
        if (!summary_only && spec.steps == design.steps && !design.extrapolate.empty()) {
          try {  // runs finished before --extrapolate was given (needs their checkpoints here)
            const std::size_t before = r->extrapolation.size();
            extrapolate_record(design, *r, dataset);
            if (r->extrapolation.size() != before) write_record(*r, paths.record(spec));
          } catch (const std::exception& e) {
            failures.push_back(spec.id() + " (extrapolation): " + e.what());
          }
        }
        records.push_back(std::move(*r));
      }
    const posenc::StudySummary summary = posenc::summarize_study(design, records);
    posenc::write_file_atomically((paths.out / "summary.json").string(), posenc::summary_json(summary).dump(2) + "\n");
    posenc::write_file_atomically((paths.out / "summary.csv").string(), posenc::summary_csv(summary));
    posenc::write_file_atomically((paths.out / "summary.md").string(), posenc::summary_markdown(summary));
    std::printf("\n%s\nsummary: %s/summary.{md,json,csv}; plots: python3 tools/plot_study.py %s\n",
                posenc::summary_markdown(summary).c_str(), out.c_str(), out.c_str());
    if (!failures.empty()) {
      std::fprintf(stderr, "study: %zu run(s) failed:\n", failures.size());
      for (const std::string& f : failures) std::fprintf(stderr, "  %s\n", f.c_str());
      return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    if (world.size() > 1) {
      std::fprintf(stderr, "study (rank %d): %s\n", world.rank(), e.what());
      world.abort(2);
    }
    std::fprintf(stderr, "study: %s\n", e.what());
    return 2;
  }
}
