"""posenc from Python: the positional encodings of posenc's registry and its checkpoints' models, numpy in and out.

    import posenc
    posenc.train("runs/rope", posenc="rope", steps=2000, lr_schedule="cosine")  # as shakespeare train
    posenc.policies()                           # [{"name": "rope", "summary": ..., "rotary": True}, ...]
    model = posenc.load("runs/rope/model.safetensors")
    logits = model.forward(model.encode("ROMEO:"))   # (T, V) float32
    weights = model.attention(model.encode("ROMEO:"), layer=0)  # (H, T, T) attention probabilities
    model.evaluate("data/tinyshakespeare/input.txt")  # losses and bits per byte, as `shakespeare eval`
    model.evaluate_contexts("data/tinyshakespeare/input.txt", [128, 512])  # and --contexts, copy_probe, evaluate_task
    model.sample("ROMEO:", tokens=200, seed=1)        # bytes
    posenc.records.read_records("docs/results/tasks/copy")  # a study's records as dicts

The compiled part is posenc._posenc, built from the same headers as the programs (docs/python.md).
"""
from . import _posenc, records
from ._posenc import Error, Model, compute, compute_line, model_sizes, num_threads, policies, set_num_threads, study

__all__ = ["Error", "Model", "compute", "compute_line", "load", "model_sizes", "num_threads", "policies", "records",
           "set_num_threads", "study", "train"]


def load(path, max_context=0):
    """The model a checkpoint holds, accepting sequences up to max_context (0: the checkpoint's)."""
    return Model(str(path), max_context)


def train(out, *, progress=True, on_step=None, on_eval=None, **settings):
    """Trains a model into the run folder `out` as `shakespeare train` does (posenc._posenc.train has
    the settings); with progress and without on_step, a tqdm progress bar (in a notebook or a
    terminal) where tqdm is installed, else the evaluations printed as the program prints them."""
    bar = None
    if progress and on_step is None:
        try:
            from tqdm.auto import tqdm
        except ImportError:
            tqdm = None
        if tqdm is not None:
            def on_step(report):  # the bar is made at the first step: a resumed run knows its total then
                nonlocal bar
                if bar is None:
                    bar = tqdm(total=report["total"], initial=report["step"] - 1, unit="step", desc=str(out))
                bar.total = report["total"]  # fewer steps once a curriculum stage ends early
                bar.update(report["step"] - bar.n)
                bar.set_postfix(loss=f"{report['loss']:.4f}", tokens_per_s=f"{report['tokens_per_second']:.0f}")

            if on_eval is None:
                def on_eval(record):
                    stage = "" if record["stage_loss"] is None else f", stage {record['stage_loss']:.4f}"
                    if record["skipped_steps"]:
                        stage += f", {record['skipped_steps']} steps skipped"
                    line = (f"eval step {record['step']}: train loss {record['train_loss']:.4f}, "
                            f"val loss {record['val_loss']:.4f}{stage} (estimates)")
                    (bar.write if bar is not None else print)(line)
    try:
        return _posenc.train(out, on_step=on_step, on_eval=on_eval, **settings)
    finally:
        if bar is not None:
            bar.close()


train.__doc__ += "\n\n" + _posenc.train.__doc__
