#!/usr/bin/env python3
"""Plots a posenc study from its JSON files alone (Debian's python3-matplotlib).

    python3 tools/plot_study.py STUDY_DIR

reads STUDY_DIR/summary.json and STUDY_DIR/records/*.json and writes, as PNG and SVG, into
STUDY_DIR/plots/:
  val_curves      estimated validation loss against step per variant: mean over seeds, band ±1 sd
  final_val_loss  full-pass validation loss per variant: mean with 95% confidence interval, each
                  seed as a dot, and the published mean ± sd beside it where there is one
  generalization_gap  val − train per variant: mean and each seed
  extrapolation   (when the study has --extrapolate) validation loss against evaluation length, mean
                  ± sd over seeds, a line per variant, in the non-overlapping and sliding-window
                  protocols (columns), the trained models and each --fine-tune's models (rows)
  rope_scaling    (with --extrapolate-rope or --fine-tune-rope) the same for each rotary variant (a
                  column each), a line per model: the trained angles, each scaling, each fine-tune
  per_position    (with --per-position) mean loss by position in the window, a line per variant,
                  one column per length, the trained and fine-tuned models as rows, the trained (and
                  fine-tuning) context marked
  rope_scaling_per_position  the same for each rotary variant's models in the longest windows
  copy_probe      (with --copy-probe) the copy probe's drop against the distance n, mean ± sd over
                  seeds, a line per variant, the trained and fine-tuned models side by side: the
                  loss on a segment after an unrelated one minus after itself (the same targets at
                  the same positions); a drop near 0 says the model does not read from n back. The
                  probe takes 2n positions: the lines mark n = half the trained (and fine-tuning)
                  context, past which the probe is longer than the model was trained on
  rope_scaling_copy_probe  the same for each rotary variant's models
  task_accuracy   (a study with --task) exact-match accuracy against the tested length, mean ± sd over
                  seeds, a line per variant, the trained lengths shaded; a panel per RoPE scaling
                  when the study has --extrapolate-rope (the rotary variants under it)
A study with --grid gets instead
  grid_final_val_loss  full-pass validation loss of each variant at each setting (in bits per byte
                       when the grid crosses the tokens): mean ± sd over seeds, each seed as a dot,
                       the settings along x; the published means dashed when the first setting is
                       the published design
  grid_differences     each variant at each setting minus itself at the first setting (the study's
                       own for --grid-point), paired by seed: the mean, each seed as a dot
  task_accuracy-SETTING  (a task grid) task_accuracy at each setting
"""
import glob
import json
import os
import re
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(study):
    """The study's summary and records; a folder that holds no summary yet, or none with a run,
    ends the program with a message saying so."""
    if not os.path.isdir(study):
        sys.exit(f"plot_study.py: '{study}' is not a folder; give a study's --out folder")
    path = os.path.join(study, "summary.json")
    try:
        with open(path) as f:
            summary = json.load(f)
    except FileNotFoundError:
        sys.exit(f"plot_study.py: '{study}' holds no summary.json; the study writes it when its runs are done "
                 "(study --summary-only writes it for the runs finished so far)")
    except (OSError, json.JSONDecodeError) as e:
        sys.exit(f"plot_study.py: cannot read '{path}': {e}")
    records = []
    for path in sorted(glob.glob(os.path.join(study, "records", "*.json"))):
        with open(path) as f:
            records.append(json.load(f))
    if not records:
        sys.exit(f"plot_study.py: the study in '{study}' has no finished run yet; nothing to plot")
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


def kind_label(kind):
    """A model's name without its variant: "trained angles", "yarn ×4", "ft 512×200 · linear ×4"."""
    return " · ".join(part for part in kind if part != "none") or "trained angles"


def kind_style(summary, kind):
    """A colour and marker per model kind (the variant is the panel): the trained angles black, each
    scaling and fine-tune its own; fine-tuned models dashed."""
    k = model_kinds(summary).index(kind)
    return {"color": "black" if k == 0 else f"C{(k - 1) % 10}", "marker": "osD^v<>ph*"[k % 10],
            "linestyle": "-" if kind[0] == "none" else "--"}


def model_groups(summary, cells):
    """The models at their own angles, one figure row each: the trained models, then each fine-tune."""
    return [kind for kind in model_kinds(summary)
            if kind[1] == "none" and any(kind_of(c) == kind for c in cells)]


def group_title(kind):
    return "trained models" if kind[0] == "none" else f"fine-tuned ({kind[0]})"


def scaled_variants(summary, cells):
    """The variants with a model under a RoPE scaling (the rotary ones), in the design's order."""
    return [v for v in summary["design"]["variants"]
            if any(c["variant"] == v and kind_of(c)[1] != "none" for c in cells)]


def rotary_kinds(summary, cells, variant):
    return [kind for kind in model_kinds(summary)
            if any(c["variant"] == variant and kind_of(c) == kind for c in cells)]


def panels(rows, columns, width=4.5, height=3.8):
    fig, axes = plt.subplots(rows, columns, figsize=(max(7.0, width * columns + 0.5), height * rows), sharey=True,
                             squeeze=False, constrained_layout=True)
    return fig, axes


def legend_beside(fig, axes):
    """One legend right of the figure with every line of every panel once (panels differ in lines)."""
    labels = {}
    for ax in axes.flat:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            labels.setdefault(label, handle)
    fig.legend(labels.values(), labels.keys(), loc="upper left", bbox_to_anchor=(1.0, 0.93), fontsize="small")


def draw_extrapolation(ax, summary, cells, protocol, lines):
    """One line per (variant, kind, label, style) in `lines`: the loss against the length, mean ± sd."""
    for variant, kind, label, style in lines:
        points = [c for c in cells if c["variant"] == variant and kind_of(c) == kind
                  and c["protocol"] == protocol and c["mean"] is not None]
        if points:
            ax.errorbar([c["length"] for c in points], [c["mean"] for c in points],
                        yerr=[c["sd"] or 0.0 for c in points], capsize=3, label=label, **style)
    ax.set_xscale("log", base=2)
    ax.grid(alpha=0.3)
    return mark_contexts(ax, summary)


PROTOCOLS = (("non_overlapping", "non-overlapping windows"), ("sliding", "sliding window"))


def plot_extrapolation(summary, study):
    """Every variant's models at their own angles: one row per group (trained, each fine-tune), one
    column per protocol."""
    cells = [c for c in summary.get("extrapolation", []) if c["mean"] is not None]
    groups = model_groups(summary, cells)
    if not groups:
        return False
    fig, axes = panels(len(groups), len(PROTOCOLS))
    for row, kind in zip(axes, groups):
        lines = [(v, kind, v, variant_style(summary, v)) for v in summary["design"]["variants"]]
        for ax, (protocol, title) in zip(row, PROTOCOLS):
            marks = draw_extrapolation(ax, summary, cells, protocol, lines)
            ax.set_title(f"{group_title(kind)}: {title}")
        row[0].set_ylabel("validation loss (nats)")
    for ax in axes[-1]:
        ax.set_xlabel("evaluation length (tokens)")
    legend_beside(fig, axes)
    fig.suptitle(f"Length extrapolation: mean ± sd over seeds\n{marks}")
    save(fig, study, "extrapolation")
    return True


def plot_rope_scaling(summary, study):
    """Each rotary variant's models under every RoPE scaling (a column each), one row per protocol."""
    cells = [c for c in summary.get("extrapolation", []) if c["mean"] is not None]
    variants = scaled_variants(summary, cells)
    if not variants:
        return False
    fig, axes = panels(len(PROTOCOLS), len(variants))
    for row, (protocol, title) in zip(axes, PROTOCOLS):
        for ax, v in zip(row, variants):
            lines = [(v, kind, kind_label(kind), kind_style(summary, kind)) for kind in rotary_kinds(summary, cells, v)]
            marks = draw_extrapolation(ax, summary, cells, protocol, lines)
            ax.set_title(f"{v}: {title}")
        row[0].set_ylabel("validation loss (nats)")
    for ax in axes[-1]:
        ax.set_xlabel("evaluation length (tokens)")
    legend_beside(fig, axes)
    fig.suptitle(f"RoPE scaling: validation loss, mean ± sd over seeds\n{marks}")
    save(fig, study, "rope_scaling")
    return True


def draw_position_curves(ax, summary, curves, length, lines):
    for variant, kind, label, style in lines:
        for c in curves:
            if c["variant"] == variant and kind_of(c) == kind and c["length"] == length:
                xs = [(a + b) / 2 for a, b in zip(c["first"], c["last"])]
                ax.plot(xs, c["mean"], label=label, markersize=4, **style)
    ax.grid(alpha=0.3)
    return mark_contexts(ax, summary, upto=length)


def plot_position_curves(summary, study):
    """Every variant's models at their own angles: one row per group, one column per length."""
    curves = summary.get("position_curves", [])
    groups = model_groups(summary, curves)
    if not groups:
        return False
    lengths = sorted({c["length"] for c in curves})
    fig, axes = panels(len(groups), len(lengths))
    for row, kind in zip(axes, groups):
        lines = [(v, kind, v, variant_style(summary, v)) for v in summary["design"]["variants"]]
        for ax, length in zip(row, lengths):
            marks = draw_position_curves(ax, summary, curves, length, lines)
            ax.set_title(f"{group_title(kind)}: windows of {length}")
        row[0].set_ylabel("validation loss at the position (nats)")
    for ax in axes[-1]:
        ax.set_xlabel("position in the window (range midpoint)")
    legend_beside(fig, axes)
    fig.suptitle(f"Loss by position: mean over seeds\n{marks}")
    save(fig, study, "per_position")
    return True


def plot_rope_scaling_positions(summary, study):
    """Each rotary variant's models under every RoPE scaling, in the longest windows (whose first
    positions are those of every shorter window)."""
    curves = summary.get("position_curves", [])
    variants = scaled_variants(summary, curves)
    if not variants:
        return False
    length = max(c["length"] for c in curves)
    fig, axes = panels(1, len(variants))
    for ax, v in zip(axes[0], variants):
        lines = [(v, kind, kind_label(kind), kind_style(summary, kind)) for kind in rotary_kinds(summary, curves, v)]
        marks = draw_position_curves(ax, summary, curves, length, lines)
        ax.set_title(v)
        ax.set_xlabel("position in the window (range midpoint)")
    axes[0][0].set_ylabel("validation loss at the position (nats)")
    legend_beside(fig, axes)
    fig.suptitle(f"RoPE scaling: loss by position in windows of {length}, mean over seeds\n{marks}")
    save(fig, study, "rope_scaling_per_position")
    return True


def draw_copy_probe(ax, summary, cells, lines):
    for variant, kind, label, style in lines:
        points = [c for c in cells if c["variant"] == variant and kind_of(c) == kind]
        if points:
            ax.errorbar([c["distance"] for c in points], [c["mean_drop"] for c in points],
                        yerr=[c["sd_drop"] or 0.0 for c in points], capsize=3, label=label, **style)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xscale("log", base=2)
    ax.grid(alpha=0.3)
    return mark_contexts(ax, summary, positions_per_unit=2)  # a probe of distance n takes 2n positions


def copy_probe_axes(fig, axes, cells, marks, title):
    # a summary written before 2026-12-03 holds drops against the first copy
    against = "an unrelated segment" if any("mean_control_loss" in c for c in cells) else "the first copy"
    axes[0][0].set_ylabel(f"loss after {against}\n− after the copy (nats)")
    for ax in axes[0]:
        ax.set_xlabel("distance n back to the first copy (tokens)")
    legend_beside(fig, axes)
    fig.suptitle(f"{title}: mean ± sd over seeds\n{marks}")


def plot_copy_probe(summary, study):
    """Every variant's models at their own angles, one panel per group (trained, each fine-tune)."""
    cells = [c for c in summary.get("copy_probe", []) if c["mean_drop"] is not None]
    groups = model_groups(summary, cells)
    if not groups:
        return False
    fig, axes = panels(1, len(groups), width=5.5)
    for ax, kind in zip(axes[0], groups):
        lines = [(v, kind, v, variant_style(summary, v)) for v in summary["design"]["variants"]]
        marks = draw_copy_probe(ax, summary, cells, lines)
        ax.set_title(group_title(kind))
    copy_probe_axes(fig, axes, cells, marks, "Copy probe")
    save(fig, study, "copy_probe")
    return True


def plot_rope_scaling_copy_probe(summary, study):
    cells = [c for c in summary.get("copy_probe", []) if c["mean_drop"] is not None]
    variants = scaled_variants(summary, cells)
    if not variants:
        return False
    fig, axes = panels(1, len(variants))
    for ax, v in zip(axes[0], variants):
        lines = [(v, kind, kind_label(kind), kind_style(summary, kind)) for kind in rotary_kinds(summary, cells, v)]
        marks = draw_copy_probe(ax, summary, cells, lines)
        ax.set_title(v)
    copy_probe_axes(fig, axes, cells, marks, "RoPE scaling: copy probe")
    save(fig, study, "rope_scaling_copy_probe")
    return True


def plot_task_accuracy(summary, study, name="task_accuracy", setting=""):
    task = summary.get("task")
    if not task:
        return False
    cells = [c for c in task["lengths"] if c["mean"] is not None]
    scalings = ["none"] + sorted({c["scaling"] for c in cells} - {"none"})
    trained = [int(x) for x in task["trained_lengths"].split("-")]
    fig, axes = panels(1, len(scalings), width=6.5, height=4.2)
    for ax, scaling in zip(axes[0], scalings):
        for v in summary["design"]["variants"]:
            points = sorted((c for c in cells if c["variant"] == v and c["scaling"] == scaling),
                            key=lambda c: c["length"])
            if not points:
                continue
            style = dict(variant_style(summary, v), markersize=3)
            x = [c["length"] for c in points]
            mean = [c["mean"] for c in points]
            sd = [c["sd"] or 0.0 for c in points]
            ax.plot(x, mean, label=v, **style)
            ax.fill_between(x, [m - s for m, s in zip(mean, sd)], [m + s for m, s in zip(mean, sd)],
                            color=style["color"], alpha=0.12, linewidth=0)
        ax.axvspan(trained[0] - 0.5, trained[1] + 0.5, color="gray", alpha=0.15, label="trained lengths")
        ax.set_ylim(-0.03, 1.03)
        ax.set_xlabel("length")
        ax.grid(alpha=0.3)
        if len(scalings) > 1:  # a panel per scaling; one panel needs no title
            ax.set_title("trained angles" if scaling == "none" else scaling)
    axes[0][0].set_ylabel("exact-match accuracy")
    legend_beside(fig, axes)
    fig.suptitle(f"Task {task['task']}: trained on lengths {task['trained_lengths']}, {task['examples']} examples "
                 f"a length; mean ± sd over seeds" + (f"; {setting}" if setting else ""))
    save(fig, study, name)
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


def in_bits_per_byte(summary):
    """Whether a grid compares its settings in bits per byte (one that crosses the tokens)."""
    return any("val_bits_per_byte" in c for c in summary.get("across", []))


def plot_grid(summary, study):
    settings = summary["settings"]
    variants = grid_variants(summary)
    bits = in_bits_per_byte(summary)  # nats per token of two tokenizers are not one scale

    def row_of(variant, setting):
        rows = [v for v in setting["summary"]["variants"] if v["variant"] == variant and v["n"] > 0]
        return rows[0] if rows else None

    fig, ax = grid_figure(settings, variants)
    for x, style, label, row in grid_cells(variants, settings, row_of):
        values = row["val_bits_per_byte"] if bits else row["val_loss"]
        sd = statistics.stdev(values) if len(values) > 1 else 0.0
        ax.errorbar([x], [statistics.fmean(values)], yerr=[sd], capsize=3, linestyle="none", label=label, **style)
        ax.scatter([x] * len(values), values, s=10, alpha=0.5, color=style["color"])
    # The published means, when the grid's first setting is the published design: the settings it
    # varies are then the published study's unstated choices, and the question is which comes near.
    first = settings[0]["summary"]
    title = "each variant at each setting: mean ± sd over seeds, seeds as dots"
    if first.get("published_design") and not bits:
        for i, variant in enumerate(variants):
            published = next((v["published"] for v in first["variants"]
                              if v["variant"] == variant and "published" in v), None)
            if published:
                ax.axhline(published["mean_val_loss"], color=f"C{i % 10}", linestyle="--", linewidth=0.8)
        title += "; dashed: published mean"
    ax.set_xticks(range(len(settings)), [s["setting"].replace(" ", "\n") for s in settings])
    ax.set_ylabel("final validation bits per byte (full pass)" if bits else "final validation loss (full pass)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    save(fig, study, "grid_final_val_loss")


def plot_grid_differences(summary, study):
    """Each variant at each setting minus the same variant at the first setting, paired by seed."""
    first = summary["settings"][0]["setting"]
    metric = "val_bits_per_byte" if in_bits_per_byte(summary) else "val_loss"
    # a crossed grid also compares points one axis apart; this plot keeps those against the first
    across = [c for c in summary.get("across", []) if c[metric] and c["baseline"] == first]
    if not across:
        return False
    settings = [s["setting"] for s in summary["settings"][1:]]
    variants = grid_variants(summary)

    def row_of(variant, setting):
        rows = [c for c in across if c["variant"] == variant and c["setting"] == setting]
        return rows[0] if rows else None

    fig, ax = grid_figure(settings, variants)
    for x, style, label, row in grid_cells(variants, settings, row_of):
        differences = [a - b for a, b in zip(row[metric], row["baseline_" + metric])]
        ax.scatter([x] * len(differences), differences, s=10, alpha=0.5, color=style["color"])
        ax.plot([x], [row["mean_difference"]], linestyle="none", label=label, markersize=7, **style)
    ax.axhline(0, color="gray", linewidth=0.8)
    ax.set_xticks(range(len(settings)), [s.replace(" ", "\n") for s in settings])
    unit = "val bits per byte" if metric == "val_bits_per_byte" else "val loss"
    ax.set_ylabel(f"{unit} − at {summary['settings'][0]['setting']}")
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
        for setting in summary["settings"]:  # a task grid: each setting's accuracy by length
            name = "task_accuracy-" + re.sub(r"[^A-Za-z0-9_.-]+", "-", setting["setting"]).strip("-")
            if plot_task_accuracy(setting["summary"], study, name, setting["setting"]):
                names.append(name)
        print(f"plots: {os.path.join(study, 'plots')}/{{{','.join(names)}}}.{{png,svg}}")
        return
    plot_curves(summary, records, study)
    plot_final(summary, study)
    plot_gap(summary, study)
    names = ["val_curves", "final_val_loss", "generalization_gap"]
    for name, plot in (("extrapolation", plot_extrapolation), ("rope_scaling", plot_rope_scaling),
                       ("per_position", plot_position_curves),
                       ("rope_scaling_per_position", plot_rope_scaling_positions),
                       ("copy_probe", plot_copy_probe), ("rope_scaling_copy_probe", plot_rope_scaling_copy_probe),
                       ("task_accuracy", plot_task_accuracy)):
        if plot(summary, study):
            names.append(name)
    print(f"plots: {os.path.join(study, 'plots')}/{{{','.join(names)}}}.{{png,svg}}")


if __name__ == "__main__":
    main()
