#!/usr/bin/env python3
"""Causal attention per positional encoding: time, ratio to NoPE, RoPE against ALiBi, the heap's peak.

    python3 bench/attention_table.py [--build build/release] [--lengths 128,256,512] [--repetitions 5]
                                     [--policies nope,rope,alibi,...] [--tiled | --bf16 | --reference] [--eval]

Runs build/release/bench/bench_attention (cmake --preset release && cmake --build --preset release
--target bench_attention) and prints one Markdown table per sequence length T: each policy's
fastest repetition, its ratio to NoPE's, its rate in GFLOP/s of the causal work, computed from
that same fastest time, and the heap's peak while the benchmark ran (its inputs and outputs and
what the kernel allocates; bench_attention counts it). Forward + backward at the study model's
shape, batch B = 32, H = 4 heads of dimension 48, keeping the probabilities for the backward as
training does (--tiled: recomputing them, memory linear in T, to T = 2048; --bf16: a bf16 training
pass's kernel, its products in bfloat16, on CPUs with AVX512-BF16 or AMX); with --eval the
forward alone, as an evaluation runs it, at B = 1 and T = 512, 2048 and 8192. Threads: POSENC_NUM_THREADS, else every core.
Nothing here asserts a speed.
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
H, HD = 4, 48  # bench_attention.cpp's shape
TRAIN_BATCH, EVAL_BATCH = 32, 1


def causal_gflop(T, batch, products):
    """(T×T)·hd products over the T(T+1)/2 unmasked pairs, per (batch, head): as bench_attention.

    Six for forward + backward, two for the forward alone."""
    return products * 2 * HD * T * (T + 1) / 2 * batch * H / 1e9


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build/release"))
    parser.add_argument("--lengths", help="sequence lengths T (bench_attention has 128, 256, 512; --tiled 128, 512, "
                        "2048; --eval 512, 2048, 8192, the reference to 2048); default: all")
    parser.add_argument("--repetitions", type=int, default=5, help="repetitions per row; the fastest counts")
    parser.add_argument("--policies", help="default: every policy bench_attention has (posenc's registry)")
    kinds = parser.add_mutually_exclusive_group()
    kinds.add_argument("--reference", action="store_true", help="time the reference kernels (T ≤ 256) instead of the fast ones")
    kinds.add_argument("--tiled", action="store_true", help="the fast kernels recomputing the probabilities in tiles")
    kinds.add_argument("--bf16", action="store_true", help="a bf16 training pass's kernel (products in bfloat16)")
    parser.add_argument("--eval", action="store_true", help="the forward alone, as an evaluation runs it (B = 1)")
    args = parser.parse_args()
    binary = os.path.join(args.build, "bench/bench_attention")
    if not os.path.exists(binary):
        sys.exit(f"attention_table.py: {binary} is missing; build it with cmake --preset release && "
                 "cmake --build --preset release --target bench_attention")
    if args.eval and (args.tiled or args.bf16):
        sys.exit("attention_table.py: --eval times the fast forward, which keeps nothing and runs in tiles; "
                 "drop --tiled and --bf16")
    default_lengths = "512,2048,8192" if args.eval else "128,512,2048" if args.tiled else "128,256,512"
    lengths = [int(t) for t in (args.lengths or default_lengths).split(",")]
    kind = "reference" if args.reference else "tiled" if args.tiled else "bf16" if args.bf16 else "fast"
    family = "attention-eval" if args.eval else "attention"
    batch, products = (EVAL_BATCH, 2) if args.eval else (TRAIN_BATCH, 6)
    listed = subprocess.run([binary, "--benchmark_list_tests=true", f"--benchmark_filter=^{family}/{kind}/"],
                            check=True, text=True, capture_output=True).stdout.split()
    known = list(dict.fromkeys(name.split("/")[2] for name in listed))  # registry order, once each
    if not known:
        sys.exit(f"attention_table.py: bench_attention has no {family}/{kind} benchmarks"
                 + (" (bf16 needs oneDNN and a CPU with AVX512-BF16 or AMX)" if kind == "bf16" else ""))
    policies = args.policies.split(",") if args.policies else known
    unknown = [p for p in policies if p not in known]
    if unknown:
        sys.exit(f"attention_table.py: unknown policies {', '.join(unknown)} (expected some of {', '.join(known)})")
    if "nope" not in policies:
        policies = ["nope"] + policies  # the ratios' base
    pattern = f"^{family}/{kind}/({'|'.join(policies)})/({'|'.join(map(str, lengths))})/real_time$"
    cmd = [binary, f"--benchmark_filter={pattern}", "--benchmark_format=json",
           f"--benchmark_repetitions={args.repetitions}"]
    print("$ " + " ".join(cmd), file=sys.stderr, flush=True)
    result = subprocess.run(cmd, check=True, text=True, capture_output=True)
    if not result.stdout.strip():
        sys.exit(f"attention_table.py: bench_attention printed nothing: {result.stderr.strip()}")
    report = json.loads(result.stdout)
    seconds, peak = {}, {}
    for b in report["benchmarks"]:
        if b.get("run_type") != "iteration":  # the repetitions themselves; the fastest counts
            continue
        _, _, policy, T = b["run_name"].removesuffix("/real_time").split("/")
        scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[b["time_unit"]]
        key = (policy, int(T))
        seconds[key] = min(seconds.get(key, float("inf")), b["real_time"] * scale)
        if "heap_peak_bytes" in b:
            peak[key] = max(peak.get(key, 0), b["heap_peak_bytes"])
    context = report["context"]
    threads = context.get("posenc_threads", os.environ.get("POSENC_NUM_THREADS", "every core"))
    what = "forward alone" if args.eval else "forward + backward"
    print(f"# Causal attention {what} ({kind} kernels), B = {batch}, H = {H}, head dim {HD}; "
          f"fastest of {args.repetitions}, {threads} thread(s), {context.get('num_cpus')} CPUs at "
          f"{context.get('mhz_per_cpu')} MHz\n")
    for T in lengths:
        if ("nope", T) not in seconds:
            print(f"T = {T}: not measured (bench_attention has no such row)\n")
            continue
        base = seconds[("nope", T)]
        print(f"## T = {T}\n\n| policy | ms | / NoPE | GFLOP/s | heap peak MB |\n|---|---:|---:|---:|---:|")
        for p in policies:
            if (p, T) in seconds:
                s = seconds[(p, T)]
                mb = f"{peak[(p, T)] / 2**20:.1f}" if (p, T) in peak else "–"
                print(f"| {p} | {1e3 * s:.2f} | {s / base:.3f} | {causal_gflop(T, batch, products) / s:.1f} | {mb} |")
        if ("rope", T) in seconds and ("alibi", T) in seconds:
            print(f"\nRoPE / ALiBi: {seconds[('rope', T)] / seconds[('alibi', T)]:.3f}")
        print()


if __name__ == "__main__":
    main()
