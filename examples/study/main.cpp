// study: the positional-encoding study in one command — every run of the design, resumable, then the statistics.
//   study                      the published design (4 variants × 3 seeds × 2000 steps, + 4000-step runs for seed 1337)
//   study --variants rope,alibi --seeds 1,2 --steps 300 --extended-steps 0 --out runs/small-study
//   study --grid init=normal,pytorch --grid grad_clip=none,1 --extended-steps 0 --out runs/grid
//   study --grid-point init=pytorch --grid-point 'lr_schedule=cosine warmup_steps=100' --extended-steps 0
//   study --extrapolate 128,256,512,1024 --per-position --copy-probe 64,128,256,512 --extrapolate-rope yarn:8
//   study --extrapolate 256,512,1024 --fine-tune 512 --fine-tune-steps 200 --fine-tune-rope linear:4,yarn:4
//   study --task copy --task-lengths 1-16 --variants rope,alibi,nope --seeds 1,2,3 --steps 3000 --extended-steps 0
// Writes OUT/records/<run>.json per run, OUT/runs/<run>/ (checkpoints), and OUT/summary.{json,csv,md}.
// The study itself is posenc's (posenc/study/); this is its command line.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <posenc/transformer.hpp>
#if POSENC_WITH_MPI
#include <posenc/study/mpi_scheduler.hpp>
#endif

#include "../common/any_model.hpp"
#include "../common/compute.hpp"
#include "../common/run_options.hpp"
#include "../common/study_summary.hpp"
#include "../common/task_options.hpp"
#include "../common/world.hpp"
#include "progress.hpp"

namespace {

// Whole numbers of at most `digits` digits, each named with `option` when it is not one.
std::vector<std::uint64_t> parse_numbers(const std::string& text, const char* option, std::size_t digits,
                                         const char* what) {
  std::vector<std::uint64_t> numbers;
  for (const std::string& s : posenc::split_list(text, option)) {
    if (s.find_first_not_of("0123456789") != std::string::npos || s.size() > digits)
      posenc::fail(option, ": '", s, "' is not ", what);
    numbers.push_back(std::stoull(s));
  }
  return numbers;
}

// METHOD:FACTOR,... (posenc::parse_rope_scaling_spec), each error named with `option`.
std::vector<posenc::RopeScaling> parse_scalings(const std::string& text, const char* option) {
  std::vector<posenc::RopeScaling> scalings;
  for (const std::string& spec : posenc::split_list(text, option))
    try {
      scalings.push_back(posenc::parse_rope_scaling_spec(spec));
    } catch (const posenc::Error& e) {
      posenc::fail(option, ": ", e.what());
    }
  return scalings;
}

template <class T>
std::string join(const std::vector<T>& items) {
  std::ostringstream text;
  for (std::size_t i = 0; i < items.size(); ++i) text << (i ? "," : "") << items[i];
  return text.str();
}

}  // namespace

int main(int argc, char** argv) {
  const examples::World world(argc, argv);  // MPI under mpirun: the runs spread over the ranks
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // redirected too, lines in order with stderr's
  CLI::App app{"Run the positional-encoding study: every variant × seed, resumable, then the statistics."};
  posenc::StudyDesign design;
  design.run.data = "data/tinyshakespeare/input.txt";
  std::string variants = join(design.variants), seeds = join(design.seeds),
              extended_seeds = join(design.extended_seeds);
  std::string out = "runs/study", extrapolate;
  int jobs = 1, threads = 0;
  bool summary_only = false;
  app.add_option("--variants", variants, "Comma-separated positional encodings: " + join(posenc::policy_names()))
      ->capture_default_str();
  app.add_option("--seeds", seeds, "Comma-separated seeds of the base runs")->capture_default_str();
  app.add_option("--steps", design.steps, "Steps of the base runs")
      ->check(examples::whole_number_in(1, examples::most_steps))
      ->capture_default_str();
  app.add_option("--extended-steps", design.extended_steps, "Steps of the extended runs (0: none)")
      ->check(examples::whole_number_in(0, examples::most_steps))
      ->capture_default_str();
  app.add_option("--extended-seeds", extended_seeds, "Seeds of the extended runs")->capture_default_str();
  examples::RunOptions run_options(app, design.run);
  app.add_option("--out", out, "Study directory")->capture_default_str();
  app.add_option("--jobs", jobs, "Runs at once; the cores are split between them (under mpirun: 1, one run per rank)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--threads", threads,
                 "Cores in all, fixed (default: every free core, fewer while other processes busy them, or "
                 "$POSENC_NUM_THREADS; under mpirun: per rank, "
                 "default the rank's share of its machine)")
      ->check(CLI::Range(1, 4096));
  app.add_option("--extrapolate", extrapolate,
                 "Evaluate every base run's final model at these lengths, e.g. 128,256,512,1024");
  bool per_position = false;
  std::size_t bins = 16;
  app.add_flag("--per-position", per_position,
               "With --extrapolate: also the mean loss by position at each length, in --bins ranges");
  app.add_option("--bins", bins, "Ranges of positions --per-position records")
      ->check(CLI::Range(std::size_t{1}, std::size_t{4096}))
      ->capture_default_str();
  std::string copy_probe, extrapolate_rope;
  app.add_option("--copy-probe", copy_probe,
                 "The copy probe of every base run's final model at these distances, e.g. 64,128,256,512: the loss on "
                 "a segment of the validation split after itself against that after an unrelated segment");
  app.add_option("--copy-segments", design.copy_segments, "Segments of the validation split per copy-probe distance")
      ->check(CLI::Range(std::size_t{1}, std::size_t{100000}))
      ->capture_default_str();
  app.add_option("--extrapolate-rope", extrapolate_rope,
                 "METHOD:FACTOR[:NAME=VALUE...],...: the rotary variants' --extrapolate and --copy-probe again under "
                 "each RoPE scaling (linear, ntk, dynamic-ntk, yarn), e.g. linear:8,ntk:8,dynamic-ntk:8,yarn:8 or "
                 "yarn:8:beta_fast=16:base=500 (NAME: base, original_context, beta_fast, beta_slow, "
                 "attention_factor); base=B alone sets a new base without a scaling");
  std::string fine_tune_rope;
  app.add_option("--fine-tune", design.fine_tune_context,
                 "Fine-tune every base run's final model at this context (a learned table interpolated), and evaluate "
                 "the fine-tuned models as the base runs'")
      ->check(examples::whole_number_in(1, examples::longest_context));
  app.add_option("--fine-tune-steps", design.fine_tune_steps, "Steps of each fine-tune")
      ->check(examples::whole_number_in(1, examples::most_steps))
      ->capture_default_str();
  app.add_option("--fine-tune-batch", design.fine_tune_batch,
                 "Windows per fine-tuning step (default: as many tokens per step as the base runs')")
      ->check(examples::whole_number_in(1, examples::longest_context));
  app.add_option("--fine-tune-rope", fine_tune_rope,
                 "METHOD:FACTOR[:NAME=VALUE...],...: the rotary variants fine-tuned again under each RoPE "
                 "scaling, its factor stretching the base runs' context, e.g. linear:4,yarn:4 (or base=B: at a new "
                 "base, as Llama 2 Long's base=500000)");
  app.add_flag("--summary-only", summary_only, "Write the summary of the finished runs without training");
  examples::TaskOptions task_options(app, "Train every run on a synthetic task instead of --data's text, and test each "
                                          "final model's exact-match accuracy at --task-test-lengths");
  task_options.add_curriculum(app);
  std::string task_test_lengths;
  app.add_option("--task-test-lengths", task_test_lengths,
                 "A-B,N,...: the lengths each final model is tested at (default: to 8 × the longest trained, every "
                 "length up to 128 of them, else 128 evenly spaced)")
      ->needs("--task");
  app.add_option("--task-examples", design.task_examples, "Examples of each tested length")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1000000}))
      ->needs("--task")
      ->capture_default_str();
  app.add_option("--task-seed", design.task_seed, "Seed of the tested examples (each length its own stream)")
      ->needs("--task")
      ->capture_default_str();
  std::vector<std::string> grid;
  app.add_option("--grid", grid,
                 "NAME=V1,V2,...: run every variant and seed at each value of a training setting, named by its key "
                 "in a run's config.json (lr, lr_schedule, warmup_steps, grad_clip, grad_accum, weight_decay_scope, "
                 "init, tie_weights, dropout, embedding_std, batch, ...; 'none' for no value); several --grid cross");
  std::vector<std::string> grid_list;
  app.add_option("--grid-point", grid_list,
                 "'NAME=VALUE NAME=VALUE ...': run every variant and seed also at these settings together (names as "
                 "--grid's); each --grid-point is one more setting, compared with the study's own");
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& done) {
    return app.exit(done);
  } catch (const CLI::ParseError& error) {
    app.exit(error);
    return 2;
  }

  try {
    world.check();
    if (world.size() > 1 && jobs != 1)
      posenc::fail("--jobs ", jobs, ": under mpirun every rank trains one run at a time; start more ranks instead");
    design.variants = posenc::split_list(variants, "--variants");
    design.seeds = parse_numbers(seeds, "--seeds", 19, "a seed (a whole number ≥ 0)");
    design.extended_seeds = parse_numbers(extended_seeds, "--extended-seeds", 19, "a seed (a whole number ≥ 0)");
    if (design.extended_steps == 0) design.extended_seeds.clear();  // no extended runs: nothing to check
    for (const std::uint64_t L : parse_numbers(extrapolate, "--extrapolate", 9, "a length (a whole number ≥ 1)"))
      design.extrapolate.push_back(static_cast<std::size_t>(L));
    if (per_position) design.per_position_bins = bins;
    else if (app.count("--bins") > 0) posenc::fail("--bins: the ranges are those of --per-position; give it too");
    for (const std::uint64_t n : parse_numbers(copy_probe, "--copy-probe", 9, "a distance (a whole number ≥ 2)"))
      design.copy_probe.push_back(static_cast<std::size_t>(n));
    design.extrapolate_rope = parse_scalings(extrapolate_rope, "--extrapolate-rope");
    design.fine_tune_rope = parse_scalings(fine_tune_rope, "--fine-tune-rope");
    for (const char* option : {"--fine-tune-steps", "--fine-tune-batch"})
      if (app.count(option) > 0 && design.fine_tune_context == 0)
        posenc::fail(option, ": it sets the fine-tunes; give --fine-tune CONTEXT too");
    run_options.apply();
    task_options.apply(design.run, app);
    if (!task_test_lengths.empty()) {
      try {
        design.task_lengths = posenc::parse_length_list(task_test_lengths);
      } catch (const posenc::Error& e) {
        posenc::fail("--task-test-lengths: ", e.what());
      }
    }
    for (const std::string& axis : grid) design.grid.push_back(posenc::parse_grid_axis(axis));
    for (const std::string& point : grid_list) design.grid_list.push_back(posenc::parse_grid_point(point));
    // a setting a crossed grid sets in every run is not also given alone (which every run would
    // ignore); beside --grid-point it is the baseline's, which the points are compared with
    for (const posenc::GridAxis& axis : design.grid)
      if (const auto option = run_options.option_for(axis.name); option && app.count(*option) > 0)
        posenc::fail(*option, ": --grid ", axis.name, " sets it in every run; give its values in --grid only");
    if (app.count("--embedding-std") > 0)
      for (const posenc::GridPoint& point : posenc::study_points(design))
        if (point.sets("init") && !point.sets("embedding_std"))
          posenc::fail("--embedding-std with a grid point '", point.label(), "': init there starts the embeddings "
                       "at its own std (0.02 normal, 1 pytorch); set embedding_std in the point too to keep yours");
    posenc::validate_design(design);  // before the corpus is read
    if (design.run.precision == posenc::Precision::bf16)
      if (const auto reason = posenc::bf16_unsupported_reason()) posenc::fail("--precision bf16: ", *reason);
    // another study writing the folder is refused; a --summary-only look at one still running is not
    std::optional<posenc::DirectoryLock> study_lock;
    if (world.rank() == 0 && !summary_only) study_lock.emplace(out);
    // a token folder (shakespeare prepare) gives its tokens, and its tokenizer unless one is asked for
    std::optional<posenc::TokenFolder> tokens;
    if (design.run.reads_corpus() && posenc::is_token_folder(design.run.data)) {
      tokens = posenc::read_token_folder(design.run.data);
      if (app.count("--tokenizer") == 0 && app.count("--vocab-size") == 0 && !posenc::grid_crosses_tokens(design))
        design.run.tokenizer = tokens->data.tokenizer().spec();
    }
    const posenc::StudyRunner runner =
        tokens ? posenc::StudyRunner(design, out, std::move(*tokens), examples::make_model)
               : posenc::StudyRunner(design, out,
                                     design.run.reads_corpus() ? posenc::read_corpus(design.run.data) : "",
                                     examples::make_model);
    const int cores = threads > 0 ? threads : world.default_threads();
    if (threads > 0) posenc::set_num_threads(std::max(1, cores / jobs));
    else posenc::set_adaptive_num_threads(std::max(1, cores / jobs));
    posenc::StudyFailures failures;
#if POSENC_WITH_MPI
    if (world.rank() != 0) {
      study::StudyProgress progress(runner.plan().size(), 0, 0, false, "[rank " + std::to_string(world.rank()) + "] ");
      posenc::mpi::serve_study_runs(runner, progress);
      return 0;
    }
#endif
    std::filesystem::create_directories(runner.paths().out / "records");
    std::vector<std::size_t> pending = runner.pending();
    const std::size_t planned = runner.plan().size();
    std::printf("%s\n", examples::compute_summary().c_str());
    if (summary_only) {
      std::printf("study: %zu runs in the design, %zu finished; --summary-only: %zu not run -> %s\n", planned,
                  planned - pending.size(), pending.size(), out.c_str());
      pending.clear();
    } else {
      std::printf("study: %zu runs in the design, %zu finished, %zu to run with %d %s × %d thread(s) -> %s\n",
                  planned, planned - pending.size(), pending.size(), world.size() > 1 ? world.size() : jobs,
                  world.size() > 1 ? "MPI rank(s)" : "job(s)", std::max(1, cores / jobs), out.c_str());
    }
    std::fflush(stdout);
    // for the training and for the evaluations after it, which can take long on their own (records()
    // adds a new --extrapolate length to every finished run); under mpirun, mpirun's own handling
    if (world.size() == 1) examples::stop_on_signals();
    if (!pending.empty() || world.size() > 1) {
      study::StudyProgress progress(planned, planned - pending.size(), runner.steps_to_train(pending),
                                    world.size() == 1);
#if POSENC_WITH_MPI
      if (world.size() > 1) {
        try {
          posenc::mpi::coordinate_study_runs(runner, pending, world.size(), progress, failures);
        } catch (const std::exception& e) {
          std::fprintf(stderr, "study (rank 0): %s\n", e.what());
          world.abort(2);  // the other ranks would wait for an answer forever
        }
      } else {
        runner.run(pending, static_cast<std::size_t>(jobs), progress, failures);
      }
#else
      runner.run(pending, static_cast<std::size_t>(jobs), progress, failures);
#endif
    }
    const auto interrupted = [] {
      std::fprintf(stderr, "study interrupted: the runs in progress are saved; the same command continues them\n");
      return 130;
    };
    if (examples::stop_requested()) return interrupted();
    // the finished runs' evaluations after training, as many at once as runs trained
    const auto on_evaluated = [&](const std::string& run, std::size_t entries, std::size_t checked) {
      std::printf("evaluated %s after training: %zu new %s (%zu/%zu runs checked)\n", run.c_str(), entries,
                  entries == 1 ? "entry" : "entries", checked, planned);
    };
    if (!summary_only && (!design.extrapolate.empty() || !design.copy_probe.empty() ||
                          !posenc::tested_task_lengths(design).empty()))
      std::printf("checking that every finished run has the evaluations after training\n");
    const std::vector<posenc::RunRecord> records =
        runner.records(!summary_only, failures, world.size() > 1 ? 1 : static_cast<std::size_t>(jobs),
                       examples::stop_requested, on_evaluated);
    if (examples::stop_requested()) return interrupted();
    const std::string markdown = examples::write_study_summary(design, records, out).markdown;
    std::printf("\n%s\nsummary: %s/summary.{md,json,csv}; plots: python3 tools/plot_study.py %s\n", markdown.c_str(),
                out.c_str(), out.c_str());
    if (const auto failed = failures.list(); !failed.empty()) {
      std::fprintf(stderr, "study: %zu run(s) failed:\n", failed.size());
      for (const std::string& f : failed) std::fprintf(stderr, "  %s\n", f.c_str());
      return 1;
    }
    return 0;
  } catch (const std::exception& error) {
    return examples::fail_and_exit(world, "study", error);
  }
}
