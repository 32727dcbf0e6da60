#!/usr/bin/env python3
"""The training step's distance to the GEMM limit of this machine, for each precision.

    python3 bench/distance_to_limit.py [--build build/release] [--policy rope] [--threads 2] [--steps 20]

Runs BUILD/bench/profile_step (the study model's step, region by region) at fp32 and bf16, and
BUILD/bench/bench_gemm's posenc_parallel rows (the step's GEMM shapes, split over posenc's threads as
the model calls them), in one invocation; then, per precision, the time the step's linear layers
would take at bench_gemm's rate of each of their shapes (4 passes of 1,024 rows × 3 layers, each
linear's forward, dx and dW; attn_proj's dx and dW at its forward's rate and lm_head's at its own,
which bench_gemm does not time apart) against the time the step measured for them, and the whole
step had its linear layers run at that rate. bf16 needs a CPU with bf16 (profile_step refuses
otherwise, and its row is left out). Speed is measured, never asserted.
"""
import argparse
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
D, ROWS, VOCAB, LAYERS, PASSES = 192, 1024, 65, 3, 4  # the study model; batch 32 = 4 passes of 8 × 128
LINEARS = {"qkv": 3 * D * D, "attn_proj": D * D, "mlp_fc": 4 * D * D, "mlp_proj": 4 * D * D}  # N·K per row


def profile(binary, policy, precision, steps, env):
    """(ms per step, linear layers' ms, attention's ms, the line profile_step opens with), or None."""
    done = subprocess.run([binary, "--policy", policy, "--precision", precision, "--steps", str(steps)],
                          capture_output=True, text=True, env=env)
    if done.returncode != 0:
        print(f"distance_to_limit: profile_step --precision {precision}: {done.stderr.strip()}", file=sys.stderr)
        return None
    out = done.stdout
    step = float(re.search(r": ([\d.]+) ms per training step", out).group(1))
    linear = float(re.search(r"GFLOP per step in ([\d.]+) ms", out).group(1))
    attention = sum(float(m) for m in re.findall(r"\| (?:forward|backward): attention \| ([\d.]+) \|", out))
    return step, linear, attention, out.splitlines()[0]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    parser.add_argument("--policy", default="rope")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    bench = os.path.join(args.build, "bench")
    for tool in ("profile_step", "bench_gemm"):
        if not os.path.exists(os.path.join(bench, tool)):
            sys.exit(f"distance_to_limit: {bench}/{tool} is missing (build with -DPOSENC_BUILD_BENCHMARKS=ON)")
    env = dict(os.environ, POSENC_NUM_THREADS=str(args.threads))
    gemm = json.loads(subprocess.run([os.path.join(bench, "bench_gemm"), "--benchmark_filter=posenc_parallel",
                                      "--benchmark_format=json"], check=True, capture_output=True, text=True,
                                     env=env).stdout)
    rate = {}
    for b in gemm["benchmarks"]:
        _, backend, shape, _ = b["name"].split("/")
        rate[backend, shape] = b["FLOP/s"]
    print("| precision | step (ms) | linear layers, measured (ms) | at bench_gemm's rates (ms) | share of the "
          "GEMM rate | attention (ms) | the step at the GEMM rate (ms) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for precision, backend in (("fp32", "posenc_parallel"), ("bf16", "posenc_parallel_bf16")):
        if (backend, "qkv") not in rate:
            continue
        measured = profile(os.path.join(bench, "profile_step"), args.policy, precision, args.steps, env)
        if measured is None:
            continue
        step, linear, attention, header = measured

        def seconds(shape, flops, fallback):
            return flops / rate.get((backend, shape), rate[backend, fallback])

        ideal = 0.0
        for name, nk in LINEARS.items():
            flops = 2 * ROWS * nk
            ideal += LAYERS * sum(seconds(name + part, flops, name) for part in ("", "_dx", "_dw"))
        head = 2 * ROWS * VOCAB * D
        ideal += 3 * seconds("lm_head", head, "lm_head")
        ideal_ms = PASSES * ideal * 1e3
        print(f"| {precision} | {step:.1f} | {linear:.1f} | {ideal_ms:.1f} | {ideal_ms / linear:.0%} | "
              f"{attention:.1f} | {step - linear + ideal_ms:.1f} |")
        print(f"  ({header})", file=sys.stderr)


if __name__ == "__main__":
    main()
