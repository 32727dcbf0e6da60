#!/usr/bin/env python3
"""Plots a posenc study from its JSON files alone (Debian's python3-matplotlib).

    python3 tools/plot_study.py STUDY_DIR

reads STUDY_DIR/summary.json and STUDY_DIR/records/*.json and writes, as PNG and SVG, into
STUDY_DIR/plots/:
  val_curves      estimated validation loss against step per variant: mean over seeds, band ±1 sd
  final_val_loss  full-pass validation loss per variant: mean with 95% confidence interval, each
                  seed as a dot, and the published mean ± sd beside it where there is one
  generalization_gap  val − train per variant: mean and each seed
  extrapolation   (when the study has --extrapolate) validation loss against evaluation length per
                  variant, mean ± sd over seeds, in the non-overlapping and sliding-window protocols;
                  a rotary variant under each --extrapolate-rope scaling, and each --fine-tune model, as its own line
  per_position    (with --per-position) mean loss by position in the window at each length, one
                  panel per length, the trained (and fine-tuning) context marked
  copy_probe      (with --copy-probe) the copy probe's drop against the distance n, mean ± sd over
                  seeds: the loss on a segment after an unrelated one minus after itself (the same
                  targets at the same positions); a drop near 0 says the model does not read from n
                  back. The probe takes 2n positions: the lines mark n = half the trained (and
                  fine-tuning) context, past which the probe is longer than the model was trained on
A study with --grid gets instead
  grid_final_val_loss  full-pass validation loss of each variant at each setting: mean ± sd over
                       seeds, each seed as a dot, the settings along x; the published means dashed
                       when the first setting is the published design
  grid_differences     each variant at each setting minus itself at the first setting (the study's
                       own for --grid-point), paired by seed: the mean, each seed as a dot
"""
import glob
import json
import os
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(study):
    with open(os.path.join(study, "summary.json")) as f:
        summary = json.load(f)
    records = []
    for path in sorted(glob.glob(os.path.join(study, "records", "*.json"))):
        with open(path) as f:
            records.append(json.load(f))
    return summary, records


def save(fig, study, name):
    out = os.path.join(study, "plots")
    os.makedirs(out, exist_ok=True)
    for ext in ("png", "svg"):
        fig.savefig(os.path.join(out, f"{name}.{ext}"), dpi=130, bbox_inches="tight")
    plt.close(fig)


def variant_style(summary, variant):
    """The same colour, line and marker for a variant in every plot; distinct for up to 30 variants
    (matplotlib's 10 colours, then again dashed, then dotted)."""
    i = summary["design"]["variants"].index(variant)
    return {"color": f"C{i % 10}", "linestyle": ("-", "--", ":")[(i // 10) % 3], "marker": "osD^v<>ph*"[i % 10]}


def variant_axis(ax, names):
    """Variant names along x, slanted when there are too many to sit side by side."""
    many = len(names) > 5
    ax.set_xticks(range(len(names)), names, rotation=35 if many else 0, ha="right" if many else "center")


def figure_width(count):
    return max(7.0, 0.75 * count + 2)


def plot_curves(summary, records, study):
    steps = summary["design"]["steps"]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for v in summary["design"]["variants"]:
        runs = [r for r in records if r["config"]["posenc"] == v and r["config"]["steps"] == steps]
        if not runs:
            continue
        points = sorted({e["step"] for r in runs for e in r["curve"]})
        mean, low, high, xs = [], [], [], []
        for s in points:
            vals = [e["val_loss"] for r in runs for e in r["curve"] if e["step"] == s]
            m = statistics.fmean(vals)
            sd = statistics.stdev(vals) if len(vals) > 1 else 0.0
            xs.append(s), mean.append(m), low.append(m - sd), high.append(m + sd)
        style = variant_style(summary, v)
        ax.plot(xs, mean, label=f"{v} (n={len(runs)})", color=style["color"], linestyle=style["linestyle"])
        ax.fill_between(xs, low, high, color=style["color"], alpha=0.2, linewidth=0)
    ax.set_xlabel("step")
    ax.set_ylabel("validation loss (estimate, nats)")
    ax.set_title("Validation loss during training: mean over seeds, band ±1 sd")
    tail = [e["val_loss"] for r in records for e in r["curve"] if e["step"] >= steps // 4]
    if tail:
        ax.set_ylim(min(tail) - 0.05, max(tail) + 0.3)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", ncol=2 if len(summary["design"]["variants"]) > 6 else 1)
    save(fig, study, "val_curves")


def is_published_design(summary):
    """The published numbers are shown only beside a run of the published design: the summary says
    whether it is one (its size, steps, every training setting and the corpus); a summary written
    before it said so (2026-12-03) is judged by the size and steps."""
    if "published_design" in summary:
        return summary["published_design"]
    published = {"layers": 3, "dim": 192, "heads": 4, "steps": 2000, "context": 128, "batch": 32}
    return all(summary["design"].get(k) == v for k, v in published.items())


def plot_final(summary, study):
    variants = [v for v in summary["variants"] if v["n"] > 0]
    show_published = is_published_design(summary)
    fig, ax = plt.subplots(figsize=(figure_width(len(variants)), 4.5))
    labelled_published = False  # the legend entry goes with the first variant that has a published value
    for i, v in enumerate(variants):
        ci = v["ci95_val_loss"]
        err = [[v["mean_val_loss"] - ci[0]], [ci[1] - v["mean_val_loss"]]] if ci else None
        ax.bar(i - 0.18, v["mean_val_loss"], width=0.36, color="C0", yerr=err, capsize=4,
               label="posenc: mean, 95% CI" if i == 0 else None)
        ax.scatter([i - 0.18] * len(v["val_loss"]), v["val_loss"], color="black", s=12, zorder=3,
                   label="posenc: each seed" if i == 0 else None)
        if show_published and "published" in v:
            p = v["published"]
            ax.bar(i + 0.18, p["mean_val_loss"], width=0.36, color="C1", yerr=p["sd_val_loss"], capsize=4,
                   label="published: mean ± sd" if not labelled_published else None)
            labelled_published = True
    variant_axis(ax, [v["variant"] for v in variants])
    published = [v["published"]["mean_val_loss"] for v in variants if show_published and "published" in v]
    lows = [min(v["val_loss"]) for v in variants] + published
    highs = [max(v["val_loss"]) for v in variants] + published
    ax.set_ylim(min(lows) - 0.05, max(highs) + 0.05)
    ax.set_ylabel("final validation loss (full pass, nats)")
    ax.set_title(f"Final validation loss after {summary['design']['steps']} steps")
    ax.grid(axis="y", alpha=0.3)
    ax.legend()
    save(fig, study, "final_val_loss")


def plot_gap(summary, study):
    variants = [v for v in summary["variants"] if v["n"] > 0]
    fig, ax = plt.subplots(figsize=(figure_width(len(variants)), 4.5))
    for i, v in enumerate(variants):
        ax.bar(i, v["mean_gap"], width=0.5, color="C2")
        ax.scatter([i] * len(v["gap"]), v["gap"], color="black", s=12, zorder=3)
    variant_axis(ax, [v["variant"] for v in variants])
    ax.set_ylabel("val loss − train loss (nats)")
    ax.set_title("Generalization gap: mean over seeds, each seed as a dot")
    ax.grid(axis="y", alpha=0.3)
    save(fig, study, "generalization_gap")


def model_kinds(summary):
    """(fine-tune, scaling) of every evaluated model in the summary's order: the base model with its
    trained angles, under each --extrapolate-rope scaling, then each fine-tune (and its scalings)."""
    design = summary["design"]
    kinds = [("none", s) for s in ["none"] + design.get("extrapolate_rope", [])]
    tune = design.get("fine_tune")
    if tune:
        kinds += [(tune["label"], s) for s in ["none"] + tune["rope"]]
    return kinds


def mark_contexts(ax, summary, upto=None, positions_per_unit=1):
    """The trained context dotted and, with fine-tunes, theirs dashed (a panel of positions below
    `upto` only, so the line does not stretch its axis), on an axis whose unit takes
    `positions_per_unit` positions (the copy probe's distance n takes 2); the words for a label."""
    unit = "" if positions_per_unit == 1 else f" / {positions_per_unit}"
    ax.axvline(summary["design"]["context"] / positions_per_unit, color="gray", linestyle=":", linewidth=1)
    tune = summary["design"].get("fine_tune")
    if not tune:
        return f"dotted: trained context{unit}"
    if upto is None or tune["context"] < upto:
        ax.axvline(tune["context"] / positions_per_unit, color="gray", linestyle="--", linewidth=1)
    return f"dotted: trained context{unit}; dashed: fine-tuning context{unit}"


def kind_of(cell):
    return cell.get("fine_tune", "none"), cell.get("scaling", "none")


def evaluated_rows(summary, cells):
    """(variant, (fine-tune, scaling)) in the design's order, as the cells have them."""
    return [(v, kind) for v in summary["design"]["variants"] for kind in model_kinds(summary)
            if any(c["variant"] == v and kind_of(c) == kind for c in cells)]


def row_label(variant, kind):
    return " · ".join([variant] + [part for part in kind if part != "none"])


def row_style(summary, variant, kind):
    """The variant's colour; each other model of it (a RoPE scaling, a fine-tune) its own line style and marker."""
    style = variant_style(summary, variant)
    kinds = model_kinds(summary)
    k = kinds.index(kind) if kind in kinds else 0
    if k > 0:
        style["linestyle"] = ("--", ":", "-.", (0, (5, 1)), (0, (1, 3)))[(k - 1) % 5]
        style["marker"] = "xP+1*"[(k - 1) % 5]
    return style


def plot_extrapolation(summary, study):
    cells = summary.get("extrapolation", [])
    if not cells:
        return False
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5), sharey=True)
    for ax, protocol, title in zip(axes, ("non_overlapping", "sliding"), ("non-overlapping windows", "sliding window")):
        for v, kind in evaluated_rows(summary, cells):
            points = [c for c in cells if c["variant"] == v and kind_of(c) == kind
                      and c["protocol"] == protocol and c["mean"] is not None]
            if not points:
                continue
            xs = [c["length"] for c in points]
            ys = [c["mean"] for c in points]
            err = [c["sd"] or 0.0 for c in points]
            ax.errorbar(xs, ys, yerr=err, capsize=3, label=row_label(v, kind), **row_style(summary, v, kind))
        marks = mark_contexts(ax, summary)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("evaluation length (tokens)")
        ax.set_title(title)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("validation loss (nats)")
    axes[1].legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize="small")
    fig.suptitle(f"Length extrapolation: mean ± sd over seeds; {marks}")
    save(fig, study, "extrapolation")
    return True


def plot_position_curves(summary, study):
    curves = summary.get("position_curves", [])
    if not curves:
        return False
    lengths = sorted({c["length"] for c in curves})
    fig, axes = plt.subplots(1, len(lengths), figsize=(4.5 * len(lengths) + 2, 4.5), sharey=True, squeeze=False)
    for ax, length in zip(axes[0], lengths):
        for v, kind in evaluated_rows(summary, curves):
            for c in curves:
                if c["variant"] == v and kind_of(c) == kind and c["length"] == length:
                    xs = [(a + b) / 2 for a, b in zip(c["first"], c["last"])]
                    ax.plot(xs, c["mean"], label=row_label(v, kind), markersize=4, **row_style(summary, v, kind))
        marks = mark_contexts(ax, summary, upto=length)
        ax.set_xlabel("position in the window (range midpoint)")
        ax.set_title(f"windows of {length}")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("validation loss at the position (nats)")
    axes[0][-1].legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize="small")
    fig.suptitle(f"Loss by position: mean over seeds; {marks}")
    save(fig, study, "per_position")
    return True


def plot_copy_probe(summary, study):
    cells = [c for c in summary.get("copy_probe", []) if c["mean_drop"] is not None]
    if not cells:
        return False
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for v, kind in evaluated_rows(summary, cells):
        points = [c for c in cells if c["variant"] == v and kind_of(c) == kind]
        ax.errorbar([c["distance"] for c in points], [c["mean_drop"] for c in points],
                    yerr=[c["sd_drop"] or 0.0 for c in points], capsize=3, label=row_label(v, kind),
                    **row_style(summary, v, kind))
    ax.axhline(0, color="black", linewidth=0.8)
    marks = mark_contexts(ax, summary, positions_per_unit=2)  # a probe of distance n takes 2n positions
    ax.set_xscale("log", base=2)
    ax.set_xlabel(f"distance n back to the first copy (tokens); {marks}")
    # a summary written before 2026-12-03 holds drops against the first copy
    against = "an unrelated segment" if any("mean_control_loss" in c for c in cells) else "the first copy"
    ax.set_ylabel(f"loss after {against} − after the copy (nats)")
    ax.set_title("Copy probe: mean ± sd over seeds")
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize="small")
    save(fig, study, "copy_probe")
    return True


def grid_variants(summary):
    """Every variant of any setting, in the order they first appear (a setting may lack some)."""
    variants = []
    for setting in summary["settings"]:
        for v in setting["summary"]["variants"]:
            if v["variant"] not in variants:
                variants.append(v["variant"])
    return variants


def grid_cells(variants, columns, row_of):
    """(x, style, label, row) for each variant at each column where row_of(variant, column) has a
    row, the variants side by side within a column; label names the variant at its first cell only,
    so the legend lists each variant once (whichever columns it is missing from)."""
    width = 0.8 / max(1, len(variants))
    for i, variant in enumerate(variants):
        style = {"color": f"C{i % 10}", "marker": "osD^v<>ph*"[i % 10]}
        labelled = False
        for k, column in enumerate(columns):
            row = row_of(variant, column)
            if row is None:
                continue
            yield k - 0.4 + width * (i + 0.5), style, None if labelled else variant, row
            labelled = True


def grid_figure(columns, variants):
    return plt.subplots(figsize=(figure_width(len(columns) * max(1, len(variants)) / 2), 4.5))


def plot_grid(summary, study):
    settings = summary["settings"]
    variants = grid_variants(summary)

    def row_of(variant, setting):
        rows = [v for v in setting["summary"]["variants"] if v["variant"] == variant and v["n"] > 0]
        return rows[0] if rows else None

    fig, ax = grid_figure(settings, variants)
    for x, style, label, row in grid_cells(variants, settings, row_of):
        sd = row["sd_val_loss"] or 0.0
        ax.errorbar([x], [row["mean_val_loss"]], yerr=[sd], capsize=3, linestyle="none", label=label, **style)
        ax.scatter([x] * len(row["val_loss"]), row["val_loss"], s=10, alpha=0.5, color=style["color"])
    # The published means, when the grid's first setting is the published design: the settings it
    # varies are then the published study's unstated choices, and the question is which comes near.
    first = settings[0]["summary"]
    title = "each variant at each setting: mean ± sd over seeds, seeds as dots"
    if first.get("published_design"):
        for i, variant in enumerate(variants):
            published = next((v["published"] for v in first["variants"]
                              if v["variant"] == variant and "published" in v), None)
            if published:
                ax.axhline(published["mean_val_loss"], color=f"C{i % 10}", linestyle="--", linewidth=0.8)
        title += "; dashed: published mean"
    ax.set_xticks(range(len(settings)), [s["setting"].replace(" ", "\n") for s in settings])
    ax.set_ylabel("final validation loss (full pass)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    save(fig, study, "grid_final_val_loss")


def plot_grid_differences(summary, study):
    """Each variant at each setting minus the same variant at the first setting, paired by seed."""
    first = summary["settings"][0]["setting"]
    # a crossed grid also compares points one axis apart; this plot keeps those against the first
    across = [c for c in summary.get("across", []) if c["val_loss"] and c["baseline"] == first]
    if not across:
        return False
    settings = [s["setting"] for s in summary["settings"][1:]]
    variants = grid_variants(summary)

    def row_of(variant, setting):
        rows = [c for c in across if c["variant"] == variant and c["setting"] == setting]
        return rows[0] if rows else None

    fig, ax = grid_figure(settings, variants)
    for x, style, label, row in grid_cells(variants, settings, row_of):
        differences = [a - b for a, b in zip(row["val_loss"], row["baseline_val_loss"])]
        ax.scatter([x] * len(differences), differences, s=10, alpha=0.5, color=style["color"])
        ax.plot([x], [row["mean_difference"]], linestyle="none", label=label, markersize=7, **style)
    ax.axhline(0, color="gray", linewidth=0.8)
    ax.set_xticks(range(len(settings)), [s.replace(" ", "\n") for s in settings])
    ax.set_ylabel(f"val loss − at {summary['settings'][0]['setting']}")
    ax.set_title("each setting against the first, paired by seed: mean, seeds as dots")
    ax.legend(fontsize=8)
    save(fig, study, "grid_differences")
    return True


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    study = sys.argv[1]
    summary, records = load(study)
    if "settings" in summary:  # a grid study
        plot_grid(summary, study)
        names = ["grid_final_val_loss"] + (["grid_differences"] if plot_grid_differences(summary, study) else [])
        print(f"plots: {os.path.join(study, 'plots')}/{{{','.join(names)}}}.{{png,svg}}")
        return
    plot_curves(summary, records, study)
    plot_final(summary, study)
    plot_gap(summary, study)
    names = ["val_curves", "final_val_loss", "generalization_gap"]
    if plot_extrapolation(summary, study):
        names.append("extrapolation")
    if plot_position_curves(summary, study):
        names.append("per_position")
    if plot_copy_probe(summary, study):
        names.append("copy_probe")
    print(f"plots: {os.path.join(study, 'plots')}/{{{','.join(names)}}}.{{png,svg}}")


if __name__ == "__main__":
    main()
