"""Reproduces a figure of docs/results.md from a study's records through posenc.records: a task's
exact-match accuracy against length, one line per encoding (the mean over seeds), the trained
lengths shaded (docs/results/tasks/copy/plots/task_accuracy.png draws the same from summary.json).

    python3 examples/python/task_accuracy.py [STUDY] [OUT.png]
    (default: docs/results/tasks/copy and task_accuracy.png)
"""
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from posenc import records as study_records  # noqa: E402


def main():
    folder = sys.argv[1] if len(sys.argv) > 1 else "docs/results/tasks/copy"
    out = sys.argv[2] if len(sys.argv) > 2 else "task_accuracy.png"
    records = study_records.read_records(folder)
    task = records[0]["config"]["task"]  # {"name": "copy", "lengths": "1-16"}
    trained = [int(n) for n in task["lengths"].split("-")]
    by_variant = defaultdict(lambda: defaultdict(list))  # variant → length → accuracy of each seed
    for variant, _seed, length, accuracy in study_records.task_accuracy(records):
        by_variant[variant][length].append(accuracy)
    fig, ax = plt.subplots(figsize=(9, 5))
    ax.axvspan(trained[0], trained[-1], color="0.9", label="trained lengths")
    for variant, lengths in by_variant.items():
        xs = sorted(lengths)
        ax.plot(xs, [sum(lengths[x]) / len(lengths[x]) for x in xs], label=variant, linewidth=1.2)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("length")
    ax.set_ylabel(f"exact-match accuracy (mean over {len({r['seed'] for r in records})} seeds)")
    ax.set_title(f"{task['name']}, trained on lengths {task['lengths']}")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    print(f"{out}: {len(by_variant)} encodings, {len(records)} runs")


if __name__ == "__main__":
    main()
