#!/usr/bin/env python3
"""The distance biases the associative-recall study's relative-bias models attend with, per layer
and head: Kerple's learned −r1·log(1 + r2·d), ALiBi's fixed −m·d (its 4 heads) and T5's learned buckets, at the
distances that matter here — 1 (the previous character), 35 (the longest trained example's inputs,
8 pairs) and 204 (64 pairs, the longest tested). Needs the study's checkpoints
(docs/results/tasks/study.sh associative-recall, under runs/tasks-study/associative-recall).
    /usr/bin/python3 docs/results/tasks/associative-recall/biases.py
"""
import json
import math
import os
import sys

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..")
sys.path.insert(0, os.path.join(root, "tools"))
import torch.nn.functional as F  # noqa: E402
from posenc_torch import alibi_slopes, load_safetensors  # noqa: E402

DISTANCES = (1, 35, 204)
runs = os.path.join(root, "runs", "tasks-study", "associative-recall", "runs")


def t5_bucket(n, buckets=32, max_distance=128):  # Hugging Face's rule, causal (as posenc's t5_bucket)
    exact = buckets // 2
    if n < exact:
        return n
    return min(buckets - 1, exact + int(math.log(n / exact) / math.log(max_distance / exact) * (buckets - exact)))


def row(label, values):
    print(f"{label:28s}" + "  ".join(f"{v:7.2f}" for v in values))


def main():
    print("bias at distance " + ", ".join(map(str, DISTANCES)) + " (one column a distance, heads in turn)")
    for h, m in enumerate(alibi_slopes(4)):  # fixed: the same in every layer and seed
        row(f"alibi, every layer, head {h}", [-m * d for d in DISTANCES])
    for policy in ("kerple", "t5"):
        for seed in (1, 2, 3):
            path = os.path.join(runs, f"{policy}-seed{seed}-steps140000", "model.safetensors")
            if not os.path.exists(path):
                sys.exit(f"biases.py: {path} is missing: run docs/results/tasks/study.sh associative-recall first")
            w, _ = load_safetensors(path)
            with open(os.path.join(os.path.dirname(path), "config.json")) as f:
                config = json.load(f)
            for layer in range(config["layers"]):
                p = f"transformer.h.{layer}.attn."
                if policy == "kerple":
                    r1, r2 = F.softplus(w[p + "kerple.r1"]), F.softplus(w[p + "kerple.r2"])
                    heads = [[-float(r1[h]) * math.log1p(float(r2[h]) * d) for d in DISTANCES] for h in range(len(r1))]
                else:
                    table = w[p + "relative_attention_bias.weight"]  # (buckets, heads)
                    heads = [[float(table[t5_bucket(d), h]) for d in DISTANCES] for h in range(table.shape[1])]
                for h, values in enumerate(heads):
                    row(f"{policy} seed {seed} layer {layer} head {h}", values)
    print(f"t5: distance {DISTANCES[1]} falls in bucket {t5_bucket(DISTANCES[1])}, the last one training reaches; "
          f"{DISTANCES[2]} in bucket {t5_bucket(DISTANCES[2])}")


if __name__ == "__main__":
    main()
