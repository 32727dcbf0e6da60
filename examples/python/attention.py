"""What each encoding attends to: the attention probabilities of one layer for one text, a row of
heads per checkpoint (query down, key across, the causal triangle), through Model.attention.

    python3 examples/python/attention.py OUT.png CHECKPOINT [CHECKPOINT ...] [--layer L] [--text TEXT]
    (layer: default the last; text: default a line of Tiny Shakespeare, cut to each model's context)
"""
import argparse

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import posenc  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("checkpoints", nargs="+")
    parser.add_argument("--layer", type=int, default=-1, help="0 the first, negative from the last (default -1)")
    parser.add_argument("--text", default="ROMEO: But, soft! what light through yonder window breaks?")
    args = parser.parse_args()
    models = [posenc.load(path) for path in args.checkpoints]
    heads = max(model.heads for model in models)
    fig, axes = plt.subplots(len(models), heads, figsize=(2.4 * heads, 2.5 * len(models)), squeeze=False)
    for row, model, path in zip(axes, models, args.checkpoints):
        try:
            ids = model.encode(args.text)[: model.max_context]
        except ValueError as error:  # a character model's vocabulary lacks one of the text's
            parser.error(f"{path}: {error}")
        weights = model.attention(ids, layer=args.layer)  # (H, T, T)
        layer = args.layer % model.layers
        for h, ax in enumerate(row):
            ax.set_xticks([])
            ax.set_yticks([])
            if h >= model.heads:
                ax.axis("off")
                continue
            ax.imshow(weights[h], cmap="viridis", vmin=0, vmax=1, interpolation="nearest")
            ax.set_title(f"{model.policy}, layer {layer}, head {h}", fontsize=7)
    shown = args.text if len(args.text) <= 90 else args.text[:60] + " … " + args.text[-25:]
    fig.suptitle(f"attention probabilities (query down, key across) for {shown!r}", fontsize=8)
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    print(f"{args.out}: {len(models)} models, {heads} heads each at most")


if __name__ == "__main__":
    main()
