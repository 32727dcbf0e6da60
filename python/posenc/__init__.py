"""posenc from Python: the positional encodings of posenc's registry and its checkpoints' models, numpy in and out.

    import posenc
    posenc.train("runs/rope", posenc="rope", steps=2000, lr_schedule="cosine")  # as shakespeare train
    posenc.policies()                           # [{"name": "rope", "summary": ..., "rotary": True}, ...]
    model = posenc.load("runs/rope/model.safetensors")
    logits = model.forward(model.encode("ROMEO:"))   # (T, V) float32
    model.evaluate("data/tinyshakespeare/input.txt")  # losses and bits per byte, as `shakespeare eval`
    model.sample("ROMEO:", tokens=200, seed=1)        # bytes
    posenc.study.read_records("docs/results/tasks/copy")  # a study's records as dicts

The compiled part is posenc._posenc, built from the same headers as the programs (docs/python.md).
"""
from . import study
from ._posenc import Error, Model, model_sizes, num_threads, policies, set_num_threads, train

__all__ = ["Error", "Model", "load", "model_sizes", "num_threads", "policies", "set_num_threads", "study", "train"]


def load(path, max_context=0):
    """The model a checkpoint holds, accepting sequences up to max_context (0: the checkpoint's)."""
    return Model(str(path), max_context)
