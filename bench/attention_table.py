#!/usr/bin/env python3
"""Causal attention forward + backward per positional encoding: time, ratio to NoPE, RoPE against ALiBi.

    python3 bench/attention_table.py [--build build/release] [--lengths 128,256,512] [--repetitions 5]
                                     [--policies nope,rope,alibi,...] [--reference]

Runs build/release/bench/bench_attention (cmake --preset release && cmake --build --preset release
--target bench_attention) and prints one Markdown table per sequence length T: each policy's
fastest repetition, its ratio to NoPE's, and its rate in GFLOP/s of the causal work, computed from
that same fastest time. The shape is the study model's: batch B = 32, H = 4 heads of dimension 48.
Threads: POSENC_NUM_THREADS, else every core. Nothing here asserts a speed.
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
B, H, HD = 32, 4, 48  # bench_attention.cpp's shape


def causal_gflop(T):
    """Six (T×T)·hd products over the T(T+1)/2 unmasked pairs, per (batch, head): as bench_attention."""
    return 6 * 2 * HD * T * (T + 1) / 2 * B * H / 1e9


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build/release"))
    parser.add_argument("--lengths", default="128,256,512", help="sequence lengths T (bench_attention has 128, 256, 512)")
    parser.add_argument("--repetitions", type=int, default=5, help="repetitions per row; the fastest counts")
    parser.add_argument("--policies", help="default: every policy bench_attention has (posenc's registry)")
    parser.add_argument("--reference", action="store_true", help="time the reference kernels (T ≤ 256) instead of the fast ones")
    args = parser.parse_args()
    binary = os.path.join(args.build, "bench/bench_attention")
    if not os.path.exists(binary):
        sys.exit(f"attention_table.py: {binary} is missing; build it with cmake --preset release && "
                 "cmake --build --preset release --target bench_attention")
    lengths = [int(t) for t in args.lengths.split(",")]
    kind = "reference" if args.reference else "fast"
    listed = subprocess.run([binary, "--benchmark_list_tests=true", f"--benchmark_filter=^attention/{kind}/"],
                            check=True, text=True, capture_output=True).stdout.split()
    known = list(dict.fromkeys(name.split("/")[2] for name in listed))  # registry order, once each
    policies = args.policies.split(",") if args.policies else known
    unknown = [p for p in policies if p not in known]
    if unknown:
        sys.exit(f"attention_table.py: unknown policies {', '.join(unknown)} (expected some of {', '.join(known)})")
    if "nope" not in policies:
        policies = ["nope"] + policies  # the ratios' base
    pattern = f"^attention/{kind}/({'|'.join(policies)})/({'|'.join(map(str, lengths))})/real_time$"
    cmd = [binary, f"--benchmark_filter={pattern}", "--benchmark_format=json",
           f"--benchmark_repetitions={args.repetitions}"]
    print("$ " + " ".join(cmd), file=sys.stderr, flush=True)
    result = subprocess.run(cmd, check=True, text=True, capture_output=True)
    if not result.stdout.strip():
        sys.exit(f"attention_table.py: bench_attention printed nothing: {result.stderr.strip()}")
    report = json.loads(result.stdout)
    seconds = {}
    for b in report["benchmarks"]:
        if b.get("run_type") != "iteration":  # the repetitions themselves; the fastest counts
            continue
        _, _, policy, T = b["run_name"].removesuffix("/real_time").split("/")
        scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[b["time_unit"]]
        key = (policy, int(T))
        seconds[key] = min(seconds.get(key, float("inf")), b["real_time"] * scale)
    context = report["context"]
    threads = context.get("posenc_threads", os.environ.get("POSENC_NUM_THREADS", "every core"))
    print(f"# Causal attention forward + backward ({kind} kernels), B = {B}, H = {H}, head dim {HD}; "
          f"fastest of {args.repetitions}, {threads} thread(s), {context.get('num_cpus')} CPUs at "
          f"{context.get('mhz_per_cpu')} MHz\n")
    for T in lengths:
        if ("nope", T) not in seconds:
            print(f"T = {T}: not measured (the reference kernels stop at 256)\n")
            continue
        base = seconds[("nope", T)]
        print(f"## T = {T}\n\n| policy | ms | / NoPE | GFLOP/s |\n|---|---:|---:|---:|")
        for p in policies:
            if (p, T) in seconds:
                s = seconds[(p, T)]
                print(f"| {p} | {1e3 * s:.2f} | {s / base:.3f} | {causal_gflop(T) / s:.1f} |")
        if ("rope", T) in seconds and ("alibi", T) in seconds:
            print(f"\nRoPE / ALiBi: {seconds[('rope', T)] / seconds[('alibi', T)]:.3f}")
        print()


if __name__ == "__main__":
    main()
