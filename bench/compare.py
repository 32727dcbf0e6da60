#!/usr/bin/python3
"""posenc against PyTorch on this machine, back to back in one invocation: fp32 and bf16 training, attention, generation.

    /usr/bin/python3 bench/compare.py [--build build/release] [--rss-steps 1000] [--repetitions 3] [--rounds 5]

Needs a Release build with the benchmarks (cmake --preset release && cmake --build build/release),
Debian's python3-torch (scripts/install-deps.sh --bench), /usr/bin/time, and Tiny Shakespeare
(scripts/fetch-data.sh) for the validation pass and the posenc RSS run. Prints a table; speed is
measured, never asserted.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
POLICIES = [("NoPE", "nope"), ("Learned", "learned"), ("Sinusoidal", "sinusoidal"), ("RoPE", "rope"),
            ("ALiBi", "alibi"), ("ALiBiSingleSlope", "alibi-single")]


def run(cmd, env=None, **kw):
    prefix = " ".join(f"{k}={v}" for k, v in (env or {}).items() if os.environ.get(k) != v)
    print("$ " + (prefix + " " if prefix else "") + " ".join(cmd), file=sys.stderr, flush=True)
    if env is not None:
        kw["env"] = env
    return subprocess.run(cmd, check=True, text=True, capture_output=True, **kw)


def google_benchmark(binary, pattern, repetitions):
    """{run name: {"seconds": fastest repetition's real time per iteration, ...}} from Google Benchmark.
    On a shared machine the fastest repetition is the least disturbed one; PyTorch is measured the
    same way (the fastest of its timed blocks). Taken from the repetitions themselves, so a row's
    counters belong to its time (an aggregate "min" of a rate counter would be the slowest rate)."""
    cmd = [binary, f"--benchmark_filter={pattern}", "--benchmark_format=json"]
    if repetitions > 1:
        cmd += [f"--benchmark_repetitions={repetitions}"]
    out = run(cmd).stdout
    results = {}
    for b in json.loads(out)["benchmarks"]:
        if b.get("run_type") == "aggregate" or "error_occurred" in b:
            continue
        scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[b["time_unit"]]
        seconds = b["real_time"] * scale
        if b["run_name"] not in results or seconds < results[b["run_name"]]["seconds"]:
            results[b["run_name"]] = dict(b, seconds=seconds)
    return results


def cpu_has(flag):
    with open("/proc/cpuinfo") as f:
        return any(flag in line.split() for line in f if line.startswith("flags"))


def pytorch(baseline, args, env_extra, extra):
    env = dict(os.environ, **env_extra)
    out = run(["/usr/bin/python3", baseline, "--steps", str(args.torch_steps), "--repeats",
               str(args.repetitions)] + extra, env=env).stdout
    return [json.loads(line) for line in out.splitlines()]


def pytorch_or_none(baseline, args, env_extra, extra):
    """As pytorch(), or [] when that setting fails (an OpenBLAS kernel this CPU cannot run)."""
    try:
        return pytorch(baseline, args, env_extra, extra)
    except subprocess.CalledProcessError as e:
        print(f"  (failed with exit status {e.returncode}; setting skipped)", file=sys.stderr)
        return []


def peak_rss_kib(cmd):
    """Peak resident set of a command, from /usr/bin/time -v."""
    err = run(["/usr/bin/time", "-v"] + cmd).stderr
    return int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", err).group(1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build/release"))
    parser.add_argument("--rss-steps", type=int, default=1000, help="steps of the peak-memory runs")
    parser.add_argument("--repetitions", type=int, default=3,
                        help="repetitions of every timing, posenc's and PyTorch's; the fastest counts")
    parser.add_argument("--torch-steps", type=int, default=5, help="PyTorch steps per timed block")
    parser.add_argument("--rounds", type=int, default=5,
                        help="rounds of the alternated RoPE comparison (posenc, then PyTorch, each round)")
    args = parser.parse_args()
    bench = os.path.join(args.build, "bench")
    shakespeare = os.path.join(args.build, "examples/shakespeare")
    data = os.path.join(ROOT, "data/tinyshakespeare/input.txt")
    baseline = os.path.join(ROOT, "bench/pytorch_baseline.py")

    # 1. training step per policy: posenc at its defaults (every core); PyTorch at its best setting,
    #    searched on RoPE over torch threads × OpenBLAS threads × OpenMP wait policy × OpenBLAS's
    #    kernel (as the environment has it, and the ones posenc's warning would advise), fp32 and
    #    bf16 autocast
    tokens = 32 * 128
    posenc_steps = google_benchmark(os.path.join(bench, "bench_model"), "train_step", args.repetitions)
    advised = ["Haswell"] + (["SkylakeX"] if cpu_has("avx512f") else [])
    coretypes = [""] + [c for c in advised if c != os.environ.get("OPENBLAS_CORETYPE")]  # "": as the environment has it
    grid = []
    for coretype in coretypes:
        for wait in ("", "passive"):
            for blas in ("", "1"):
                env = {}
                if wait:
                    env["OMP_WAIT_POLICY"] = wait
                if coretype:
                    env["OPENBLAS_CORETYPE"] = coretype
                extra = ["--policies", "rope", "--threads", "1,2"] + (["--blas-threads", blas] if blas else [])
                grid += [(r, env, blas) for r in pytorch_or_none(baseline, args, env, extra)]
    print("\n## PyTorch settings (RoPE training step, fp32)\n")
    print("| torch threads | OpenBLAS threads | OMP_WAIT_POLICY | OPENBLAS_CORETYPE | tokens/s |\n|---:|---:|---|---|---:|")
    for r, env, blas in grid:
        print(f"| {r['threads']} | {r['blas_threads']} | {r['omp_wait_policy']} | {r['openblas_coretype']} | "
              f"{r['tokens_per_second']:,.0f} |")
    best, best_env, best_blas = max(grid, key=lambda g: g[0]["tokens_per_second"])
    best_args = ["--threads", str(best["threads"])] + (["--blas-threads", best_blas] if best_blas else [])
    others = ",".join(py for _, py in POLICIES if py != "rope")
    torch_runs = [best] + pytorch(baseline, args, best_env, ["--policies", others] + best_args)
    torch_bf16 = {r["policy"]: r for r in pytorch_or_none(
        baseline, args, best_env, ["--policies", "rope,alibi-single", "--precision", "bf16"] + best_args)}
    setting = (f"torch threads {best['threads']}, OpenBLAS threads {best['blas_threads']}, "
               f"OMP_WAIT_POLICY {best['omp_wait_policy']}, OPENBLAS_CORETYPE {best['openblas_coretype']}")
    print(f"\n## Training step, B = 32, T = 128 (tokens/s; PyTorch at {setting})\n")
    print("| policy | posenc | PyTorch | posenc / PyTorch |\n|---|---:|---:|---:|")
    for cpp, py in POLICIES:
        mine = tokens / posenc_steps[f"train_step<{cpp}>/real_time"]["seconds"]
        theirs = next(r for r in torch_runs if r["policy"] == py)["tokens_per_second"]
        print(f"| {py} | {mine:,.0f} | {theirs:,.0f} | {mine / theirs:.2f}× |")
    print("\n## bf16 against fp32 (tokens/s; PyTorch bf16 is torch.autocast(\"cpu\", bfloat16) at the same setting)\n")
    print("| policy | posenc fp32 | posenc bf16 | PyTorch fp32 | PyTorch bf16 | posenc bf16 / PyTorch fp32 | "
          "posenc bf16 / PyTorch bf16 |\n|---|---:|---:|---:|---:|---:|---:|")
    for cpp, py in (("RoPE", "rope"), ("ALiBiSingleSlope", "alibi-single")):
        fp32 = tokens / posenc_steps[f"train_step<{cpp}>/real_time"]["seconds"]
        key = f"train_step_bf16<{cpp}>/real_time"
        bf16 = tokens / posenc_steps[key]["seconds"] if key in posenc_steps else None
        t32 = next(r for r in torch_runs if r["policy"] == py)["tokens_per_second"]
        t16 = torch_bf16[py]["tokens_per_second"] if py in torch_bf16 else None
        cell = lambda v: f"{v:,.0f}" if v else "n/a"  # noqa: E731
        ratio = lambda a, b: f"{a / b:.2f}×" if a and b else "n/a"  # noqa: E731
        print(f"| {py} | {cell(fp32)} | {cell(bf16)} | {cell(t32)} | {cell(t16)} | {ratio(bf16, t32)} | {ratio(bf16, t16)} |")

    # 1b. RoPE alternated: posenc (fp32, bf16) and PyTorch's best fp32 setting timed in turn, round
    #     by round, so that a machine whose speed drifts over minutes (a shared host) moves both
    #     sides of each round's ratio alike; the tables above time all of PyTorch first
    print(f"\n## RoPE alternated, {args.rounds} rounds (tokens/s; each round posenc fp32 and bf16, then PyTorch "
          f"fp32 at its best setting, each the fastest of {args.repetitions} repetitions)\n")
    print("| round | posenc fp32 | posenc bf16 | PyTorch fp32 | fp32 / PyTorch | bf16 / PyTorch |\n"
          "|---:|---:|---:|---:|---:|---:|")
    fp32_ratios, bf16_ratios = [], []
    for i in range(args.rounds):
        # as many repetitions as the tables above: PyTorch's first timed block after its warm-up is
        # often its slowest (one block a round measured it 25–40% below its best)
        ours = google_benchmark(os.path.join(bench, "bench_model"), "train_step(_bf16)?<RoPE>", args.repetitions)
        theirs = pytorch(baseline, args, best_env, ["--policies", "rope"] + best_args)[0]["tokens_per_second"]
        fp32 = tokens / ours["train_step<RoPE>/real_time"]["seconds"]
        bf16_row = ours.get("train_step_bf16<RoPE>/real_time")
        bf16 = tokens / bf16_row["seconds"] if bf16_row else None
        fp32_ratios.append(fp32 / theirs)
        if bf16:
            bf16_ratios.append(bf16 / theirs)
        bf16_cells = f"{bf16:,.0f} | " if bf16 else "n/a | "
        print(f"| {i + 1} | {fp32:,.0f} | {bf16_cells}{theirs:,.0f} | {fp32 / theirs:.2f}× | "
              f"{f'{bf16 / theirs:.2f}×' if bf16 else 'n/a'} |")
    median = lambda xs: sorted(xs)[len(xs) // 2] if xs else None  # noqa: E731
    print(f"\nmedian of the rounds' ratios: fp32 {median(fp32_ratios):.2f}×"
          + (f", bf16 {median(bf16_ratios):.2f}×" if bf16_ratios else ""))

    # 2. RoPE and ALiBi attention against NoPE's
    att = google_benchmark(os.path.join(bench, "bench_attention"), "attention/fast", args.repetitions)
    print("\n## Causal attention forward + backward, B = 32, H = 4, hd = 48 (ms; ratio to NoPE)\n")
    print("| T | NoPE | RoPE | ALiBi | RoPE / NoPE | ALiBi / NoPE | NoPE GFLOP/s |\n|---:|---:|---:|---:|---:|---:|---:|")
    for T in (128, 256, 512):
        t = {p: att[f"attention/fast/{p}/{T}/real_time"] for p in ("nope", "rope", "alibi")}
        print(f"| {T} | {1e3 * t['nope']['seconds']:.2f} | {1e3 * t['rope']['seconds']:.2f} | "
              f"{1e3 * t['alibi']['seconds']:.2f} | {t['rope']['seconds'] / t['nope']['seconds']:.3f} | "
              f"{t['alibi']['seconds'] / t['nope']['seconds']:.3f} | "
              f"{12 * 48 * T * (T + 1) / 2 * 32 * 4 / t['nope']['seconds'] / 1e9:.1f} |")

    # 3. generation with the cache against full recompute, per token
    gen = google_benchmark(os.path.join(bench, "bench_model"), "generate", args.repetitions)
    print("\n## Generation, RoPE model, 128-token prompt (the training context; ms per token)\n")
    print("| tokens | cached | recompute | recompute / cached |\n|---:|---:|---:|---:|")
    for n in (64, 384):
        c, r = gen[f"generate/cached/{n}/real_time"], gen[f"generate/recompute/{n}/real_time"]
        print(f"| {n} | {1e3 * c['seconds'] / n:.3f} | {1e3 * r['seconds'] / n:.3f} | {r['seconds'] / c['seconds']:.1f}× |")

    # 4. a full validation pass against 10 training steps
    if os.path.exists(data):
        ev = google_benchmark(os.path.join(bench, "bench_model"), "evaluate", 1)
        v = next(b["seconds"] for k, b in ev.items() if k.startswith("evaluate/"))
        s = posenc_steps["train_step<RoPE>/real_time"]["seconds"]
        print(f"\n## Full validation pass vs 10 training steps (RoPE)\n\nvalidation pass {v:.2f} s, "
              f"10 steps {10 * s:.2f} s: ratio {v / (10 * s):.2f}")

    # 5. peak resident memory of a training run
    if args.rss_steps > 0 and os.path.exists(data):
        with tempfile.TemporaryDirectory() as out:
            mine = peak_rss_kib([shakespeare, "train", "--posenc", "rope", "--steps", str(args.rss_steps),
                                 "--eval-every", str(args.rss_steps), "--eval-iters", "1", "--data", data,
                                 "--out", os.path.join(out, "run")])
        theirs = peak_rss_kib(["/usr/bin/python3", baseline, "--policies", "rope", "--threads",
                               str(best["threads"]), "--rss-steps", str(args.rss_steps)] +
                              (["--blas-threads", best_blas] if best_blas else []))
        print(f"\n## Peak resident memory of a {args.rss_steps}-step RoPE training run\n\n"
              f"posenc {mine / 1024:.0f} MiB, PyTorch {theirs / 1024:.0f} MiB: ratio {mine / theirs:.2f}")


if __name__ == "__main__":
    main()
