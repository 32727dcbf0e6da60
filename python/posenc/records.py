"""A study's records and summary as plain Python data (and a pandas DataFrame where pandas is installed).

    from posenc import records
    runs = records.read_records("docs/results/tasks/copy")           # one dict a finished run
    rows = records.task_accuracy(runs)                                # (variant, seed, length, accuracy)
    summary = records.read_summary("docs/results/published-design")  # summary.json

A record is the JSON `study` writes to OUT/records/<run>.json (docs/study.md), with three keys
added for convenience: "variant", "seed" and "steps", from its configuration.
"""
import glob
import json
import os


def _folder(path):
    if not os.path.isdir(path):
        raise FileNotFoundError(f"'{path}' is not a folder; expected a study's OUT folder (or its records/)")
    return path


def read_records(path):
    """Every record of a study folder (OUT or OUT/records), sorted by file name."""
    folder = _folder(path)
    if os.path.isdir(os.path.join(folder, "records")):
        folder = os.path.join(folder, "records")
    records = []
    for file in sorted(glob.glob(os.path.join(folder, "*.json"))):
        with open(file) as f:
            record = json.load(f)
        try:
            config = record["config"]
            record.update(variant=config["posenc"], seed=config["seed"], steps=config["steps"])
        except (KeyError, TypeError) as e:
            raise ValueError(f"'{file}' is not a study record: it lacks {e}") from None
        records.append(record)
    if not records:
        raise ValueError(f"'{path}' holds no study records (records/*.json)")
    return records


def read_summary(path):
    """summary.json of a study folder."""
    file = os.path.join(_folder(path), "summary.json")
    if not os.path.isfile(file):
        raise FileNotFoundError(f"'{path}' holds no summary.json (study --summary-only writes one)")
    with open(file) as f:
        return json.load(f)


def task_accuracy(records):
    """A task study's exact-match accuracy: one (variant, seed, length, accuracy) a tested length of
    a record, in the records' order (entries made under a RoPE scaling left out)."""
    return [(r["variant"], r["seed"], e["length"], e["accuracy"])
            for r in records for e in r.get("task", []) if "rope_scaling" not in e and "accuracy" in e]


def final_losses(records):
    """One (variant, seed, final val loss, final val bits per byte) a record; bits per byte of a
    record from before BPE are its loss over ln 2 (its targets were characters)."""
    import math
    return [(r["variant"], r["seed"], r["final_val_loss"],
             r.get("final_val_bits_per_byte", r["final_val_loss"] / math.log(2))) for r in records]


def frame(rows, columns):
    """rows as a pandas DataFrame with these columns (pandas must be installed)."""
    try:
        import pandas
    except ImportError:
        raise ImportError("posenc.records.frame needs pandas (Debian: python3-pandas); the rows are plain "
                          "tuples without it") from None
    return pandas.DataFrame(rows, columns=columns)
