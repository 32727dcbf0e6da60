#!/usr/bin/python3
"""posenc.train against `shakespeare train` on this machine: the same run, alternated, tokens/s side by side.

    /usr/bin/python3 bench/python_parity.py [--build build/release] [--steps 200] [--rounds 5] [--threads 2]

Each round trains the study's model (the programs' defaults: 3 layers, dim 192, 4 heads, batch 32,
context 128) for --steps steps once through the program and once through the Python module of the
same build (BUILD/examples/shakespeare, BUILD/python), in alternating order, and reads the training
throughput each wrote to its run's log.jsonl (evaluations excluded). Prints each round, the median
of each and their ratio, and whether the two final models are the same bytes (they must be: the
same code trains them). Needs Tiny Shakespeare (scripts/fetch-data.sh). Speed is measured, never
asserted.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def throughput(run_folder):
    """The tokens/s of the run's last interval in log.jsonl (the whole run: one evaluation at its end)."""
    with open(os.path.join(run_folder, "log.jsonl")) as log:
        return json.loads(log.read().splitlines()[-1])["tokens_per_second"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--data", default=os.path.join(ROOT, "data", "tinyshakespeare", "input.txt"))
    args = parser.parse_args()
    program = os.path.join(args.build, "examples", "shakespeare")
    module = os.path.join(args.build, "python")
    for path, how in ((program, "build the programs"), (module, "build with POSENC_BUILD_PYTHON=ON"),
                      (args.data, "run scripts/fetch-data.sh")):
        if not os.path.exists(path):
            sys.exit(f"python_parity: {path} is missing ({how})")
    settings = {"steps": args.steps, "eval_every": args.steps, "eval_iters": 2}
    python_train = (
        "import posenc, sys\n"
        f"posenc.set_num_threads({args.threads})\n"
        f"posenc.train(sys.argv[1], data={args.data!r}, progress=False, on_eval=lambda r: None, "
        f"steps={args.steps}, eval_every={args.steps}, eval_iters=2)\n")
    env = dict(os.environ, PYTHONPATH=module)
    cli_rates, python_rates, same = [], [], True
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            runs = {}
            order = ("program", "python") if r % 2 == 0 else ("python", "program")
            for which in order:
                out = os.path.join(tmp, f"{which}-{r}")
                if which == "program":
                    subprocess.run([program, "train", "--data", args.data, "--threads", str(args.threads), "--out", out]
                                   + [f"--{k.replace('_', '-')}={v}" for k, v in settings.items()],
                                   check=True, capture_output=True)
                else:
                    subprocess.run([sys.executable, "-c", python_train, out], check=True, capture_output=True,
                                   env=env)
                runs[which] = out
            cli, py = throughput(runs["program"]), throughput(runs["python"])
            cli_rates.append(cli)
            python_rates.append(py)
            model = [open(os.path.join(runs[w], "model.safetensors"), "rb").read() for w in ("program", "python")]
            same = same and model[0] == model[1]
            print(f"round {r + 1} ({order[0]} first): program {cli:,.0f} tokens/s, Python {py:,.0f} tokens/s, "
                  f"Python/program {py / cli:.3f}", flush=True)
    cli, py = statistics.median(cli_rates), statistics.median(python_rates)
    print(f"median of {args.rounds}: program {cli:,.0f} tokens/s, Python {py:,.0f} tokens/s, "
          f"Python/program {py / cli:.3f}; final models {'the same bytes' if same else 'DIFFER'}")


if __name__ == "__main__":
    main()
