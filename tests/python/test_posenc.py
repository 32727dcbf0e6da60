"""Tests of the Python module posenc: the registry, a checkpoint's model with numpy in and out, errors."""
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import posenc


def test_policies_are_the_registry():
    names = [p["name"] for p in posenc.policies()]
    assert len(names) == 12 and "rope" in names and "alibi" in names
    rotary = {p["name"] for p in posenc.policies() if p["rotary"]}
    assert "rope" in rotary and "alibi" not in rotary
    assert all(p["summary"] for p in posenc.policies())
    assert (2, 64, 4) in posenc.model_sizes()


def test_threads():
    posenc.set_num_threads(2)
    assert posenc.num_threads() == 2
    assert posenc.compute()["threads"] == 2 and posenc.compute()["gemm_backend"] in ("onednn", "openblas")
    assert posenc.compute_line().startswith("compute: ") and "2 threads" in posenc.compute_line()
    with pytest.raises(ValueError):
        posenc.set_num_threads(0)


def test_a_checkpoint_loads_with_its_description(checkpoint):
    model = posenc.load(checkpoint)
    assert (model.policy, model.layers, model.dim, model.heads, model.context) == ("rope", 2, 64, 4, 16)
    assert model.step == 20
    assert model.tokenizer.startswith("char")
    assert "rope" in repr(model)


def test_forward_gives_float32_logits_of_the_right_shape(checkpoint):
    model = posenc.load(checkpoint)
    ids = model.encode("to be or not")
    assert ids.dtype == np.int32 and ids.shape == (12,)
    assert model.decode(ids) == b"to be or not"
    logits = model.forward(ids)
    assert logits.dtype == np.float32 and logits.shape == (12, model.vocab_size)
    batch = model.forward(np.stack([ids, ids[::-1]]))
    assert batch.shape == (2, 12, model.vocab_size)
    np.testing.assert_allclose(batch[0], logits, rtol=1e-5, atol=1e-5)  # a sequence's logits are its own


def test_attention_gives_each_layers_causal_probabilities(checkpoint):
    model = posenc.load(checkpoint)
    ids = model.encode("to be or not to be")
    T = len(ids)
    last = model.attention(ids)
    assert last.dtype == np.float32 and last.shape == (model.heads, T, T)
    np.testing.assert_array_equal(last, model.attention(ids, layer=model.layers - 1))
    first = model.attention(np.stack([ids, ids[::-1]]), layer=0)
    assert first.shape == (2, model.heads, T, T)
    np.testing.assert_allclose(first.sum(-1), 1, rtol=1e-5)  # each query's weights over its keys
    assert np.all(first >= 0) and not np.any(np.triu(first, k=1))  # none on a later key
    assert not np.allclose(first[0], last)  # two layers, two patterns
    assert not np.allclose(first[1], first[0])  # a sequence's weights are its own
    for layer in (model.layers, -model.layers - 1):
        with pytest.raises(IndexError, match="layers \\(0 to 1"):
            model.attention(ids, layer=layer)


def test_loss_is_the_cross_entropy_of_the_logits(checkpoint):
    model = posenc.load(checkpoint)
    ids = model.encode("that is the question")
    x, y = ids[:-1][None, :], ids[1:][None, :]
    logits = model.forward(x).astype(np.float64)[0]
    log_softmax = logits - np.log(np.exp(logits - logits.max(1, keepdims=True)).sum(1, keepdims=True)) \
        - logits.max(1, keepdims=True)
    expected = -log_softmax[np.arange(len(y[0])), y[0]].mean()
    assert model.loss(x, y) == pytest.approx(expected, rel=1e-5)


@pytest.mark.parametrize("kind", ["char", "bpe"])
def test_evaluate_equals_the_program(kind, checkpoint, bpe_checkpoint, shakespeare, corpus):
    path = checkpoint if kind == "char" else bpe_checkpoint
    result = posenc.load(path).evaluate(str(corpus))
    program = json.loads(subprocess.run([shakespeare, "eval", "--checkpoint", path, "--data", str(corpus), "--json",
                                         "--threads", "1"], check=True, capture_output=True, text=True).stdout)
    for key in ("train_loss", "val_loss", "train_bits_per_byte", "val_bits_per_byte", "train_targets",
                "val_targets"):
        assert result[key] == pytest.approx(program[key], rel=1e-12), key
    if kind == "char":
        assert result["val_bits_per_byte"] == pytest.approx(result["val_loss"] / math.log(2), rel=1e-12)


def test_contexts_copy_probe_and_task_equal_the_programs_rows(checkpoint, shakespeare, corpus, tmp_path):
    model = posenc.load(checkpoint)

    def program(*options):
        return json.loads(subprocess.run([shakespeare, "eval", "--checkpoint", checkpoint, "--json", "--threads", "1",
                                          *options], check=True, capture_output=True, text=True).stdout)

    rows = model.evaluate_contexts(str(corpus), [8, 16, 32], bins=4)
    assert rows == program("--data", str(corpus), "--contexts", "8,16,32", "--per-position", "--bins", "4")["lengths"]
    assert len(rows[1]["per_position"]["bins"]) == 4 and rows[1]["sliding_bits_per_byte"] > 0
    probe = model.copy_probe(str(corpus), [4, 8], segments=16)
    assert probe == program("--data", str(corpus), "--copy-probe", "4,8", "--copy-segments", "16")["copy_probe"]
    assert {"control_loss", "second_copy_loss", "drop"} <= probe[0].keys()
    copy = posenc.train(str(tmp_path / "copy"), steps=10, task="copy", task_lengths="1-4", on_eval=lambda r: None,
                        **{key: value for key, value in SMALL.items() if key != "context"})["final_model"]
    scores = posenc.load(copy).evaluate_task("copy", "1-8", examples=10, seed=3)
    expected = json.loads(subprocess.run([shakespeare, "eval", "--checkpoint", copy, "--json", "--threads", "1",
                                          "--task", "copy", "--task-lengths", "1-8", "--task-examples", "10",
                                          "--task-seed", "3"], check=True, capture_output=True, text=True).stdout)
    assert scores == expected["scores"] and [s["length"] for s in scores] == list(range(1, 9))
    assert all(0 <= s["accuracy"] <= 1 and s["examples"] == 10 for s in scores)
    for call, error in [(lambda: model.evaluate_task("kopy", "1-4"), "expected one of"),
                        (lambda: model.evaluate_task("copy", "4-1"), "the first length exceeds the last"),
                        (lambda: model.evaluate_task("copy", "1-4", data=str(corpus)), "reads no data"),
                        (lambda: model.evaluate_task("passkey", "1-4"), "give data"),
                        (lambda: model.evaluate_task("copy", "1-4", examples=0), "at least 1")]:
        with pytest.raises(ValueError, match=error):
            call()
    with pytest.raises(posenc.Error, match="distance 100000: copy_probe: the split has"):
        posenc.load(checkpoint, max_context=200000).copy_probe(str(corpus), [4, 100000])


def test_sample_is_seeded_and_equals_the_program(checkpoint, shakespeare):
    model = posenc.load(checkpoint)
    a = model.sample("ROMEO:", tokens=40, seed=3)
    assert a.startswith(b"ROMEO:") and a == model.sample("ROMEO:", tokens=40, seed=3)
    program = subprocess.run([shakespeare, "sample", "--checkpoint", checkpoint, "--prompt", "ROMEO:", "--tokens",
                              "40", "--seed", "3", "--threads", "1"], check=True, capture_output=True).stdout
    assert program == a + b"\n"


def test_parameters_by_nanogpt_name(checkpoint):
    model = posenc.load(checkpoint)
    params = model.parameters()
    assert params["transformer.wte.weight"].shape == (model.vocab_size, 64)
    assert params["transformer.h.1.attn.c_attn.weight"].shape == (192, 64)
    assert sum(p.size for p in params.values()) == model.parameter_count
    assert all(p.dtype == np.float32 for p in params.values())
    # views of the model's buffer, not copies: read-only, and alive after the model's last name is gone
    again = model.parameters()
    assert np.shares_memory(params["transformer.wte.weight"], again["transformer.wte.weight"])
    with pytest.raises(ValueError, match="read-only"):
        params["transformer.wte.weight"][0, 0] = 1.0
    expected = params["lm_head.weight"].copy()
    del model, again
    import gc
    gc.collect()
    np.testing.assert_array_equal(params["lm_head.weight"], expected)


def test_bad_input_raises_a_python_error(checkpoint, tmp_path):
    model = posenc.load(checkpoint)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        model.forward(np.array([0, 1, model.vocab_size]))
    with pytest.raises(ValueError, match="1-D or 2-D"):
        model.forward(np.zeros((1, 2, 3), dtype=np.int64))
    with pytest.raises(ValueError, match="more than this rope model takes"):
        model.forward(np.zeros(model.max_context + 1, dtype=np.int64))
    with pytest.raises(ValueError, match="not in the checkpoint's vocabulary"):
        model.encode("zebra")
    with pytest.raises(ValueError, match="differ in shape"):
        model.loss(np.zeros((1, 4), dtype=np.int64), np.zeros((1, 5), dtype=np.int32))
    with pytest.raises(TypeError, match="expected integer token ids, got an array of dtype float64"):
        model.forward(np.array([1.7, 2.0]))
    assert model.forward([1, 2, 3]).shape == (3, model.vocab_size)  # a list of ints is an array of them
    with pytest.raises(TypeError):
        model.encode(42)
    with pytest.raises(TypeError):
        model.forward("not an array of ids")
    with pytest.raises(ValueError, match="top_p"):
        model.sample("to", top_p=0)
    with pytest.raises(posenc.Error, match="cannot open"):
        posenc.load(tmp_path / "missing.safetensors")
    (tmp_path / "bad.safetensors").write_bytes(b"not a checkpoint")
    with pytest.raises(posenc.Error, match="bad.safetensors"):
        posenc.load(tmp_path / "bad.safetensors")


ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def test_study_records_read_as_plain_data():
    copy = os.path.join(ROOT, "docs", "results", "tasks", "copy")
    records = posenc.records.read_records(copy)
    assert len(records) == 36  # twelve encodings × three seeds
    assert {r["seed"] for r in records} == {1, 2, 3} and len({r["variant"] for r in records}) == 12
    rows = posenc.records.task_accuracy(records)
    # every tested length of every run, but the learned table's past its 33 rows (a note, no accuracy)
    assert len(rows) == 36 * 128 - 3 * 112 and all(0 <= a <= 1 for _, _, _, a in rows)
    learned_in_range = [a for v, _, n, a in rows if v == "learned" and n <= 16]
    assert sum(learned_in_range) / len(learned_in_range) > 0.95  # docs/results.md: learned 0.99 in range
    summary = posenc.records.read_summary(copy)
    assert {v["variant"] for v in summary["variants"]} == {r["variant"] for r in records}
    losses = posenc.records.final_losses(records)
    assert all(bits == pytest.approx(loss / math.log(2)) for _, _, loss, bits in losses)


def test_study_errors_name_the_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match="is not a folder"):
        posenc.records.read_records(tmp_path / "missing")
    with pytest.raises(ValueError, match="holds no study records"):
        posenc.records.read_records(tmp_path)
    (tmp_path / "x.json").write_text("{}")
    with pytest.raises(ValueError, match="is not a study record"):
        posenc.records.read_records(tmp_path)
    with pytest.raises(FileNotFoundError, match="no summary.json"):
        posenc.records.read_summary(tmp_path)


def test_the_example_reproduces_the_task_figure(tmp_path):
    script = os.path.join(ROOT, "examples", "python", "task_accuracy.py")
    out = tmp_path / "copy.png"
    result = subprocess.run([sys.executable, script, os.path.join(ROOT, "docs/results/tasks/copy"), str(out)],
                            capture_output=True, text=True, env=dict(os.environ))
    if "No module named 'matplotlib'" in result.stderr:
        pytest.skip("matplotlib is not installed")
    assert result.returncode == 0, result.stderr
    assert out.stat().st_size > 10000 and "12 encodings, 36 runs" in result.stdout


def test_the_attention_example_draws_each_models_heads(checkpoint, tmp_path):
    script = os.path.join(ROOT, "examples", "python", "attention.py")
    out = tmp_path / "attention.png"
    result = subprocess.run([sys.executable, script, str(out), checkpoint, checkpoint, "--layer", "0", "--text",
                             "ROMEO: to be or not to be"],
                            capture_output=True, text=True, env=dict(os.environ))
    if "No module named 'matplotlib'" in result.stderr:
        pytest.skip("matplotlib is not installed")
    assert result.returncode == 0, result.stderr
    assert out.stat().st_size > 10000 and "2 models, 4 heads" in result.stdout
    unknown = subprocess.run([sys.executable, script, str(out), checkpoint, "--text", "BANQUO"], capture_output=True,
                             text=True, env=dict(os.environ))
    assert unknown.returncode == 2 and "not in the checkpoint's vocabulary" in unknown.stderr


SMALL = dict(posenc="rope", layers=2, dim=64, heads=4, batch=4, context=16, eval_every=10, eval_iters=2)


@pytest.mark.parametrize("threads", [1, 2])
def test_train_from_python_equals_the_program(threads, shakespeare, corpus, tmp_path):
    posenc.set_num_threads(threads)
    steps, evals = [], []
    result = posenc.train(str(tmp_path / "py"), steps=20, data=str(corpus), on_step=steps.append,
                          on_eval=evals.append, **SMALL)
    assert result["final_model"].endswith("model.safetensors") and len(result["records"]) == 3
    assert [s["step"] for s in steps] == list(range(1, 21)) and [e["step"] for e in evals] == [0, 10, 20]
    assert result["config"]["layers"] == 2 and result["config"]["posenc"] == "rope"
    subprocess.run([shakespeare, "train", "--posenc", "rope", "--layers", "2", "--dim", "64", "--heads", "4",
                    "--batch", "4", "--context", "16", "--eval-every", "10", "--eval-iters", "2", "--steps", "20",
                    "--threads", str(threads), "--data", str(corpus), "--out", str(tmp_path / "cli")],
                   check=True, capture_output=True)
    assert (tmp_path / "py" / "model.safetensors").read_bytes() == (tmp_path / "cli" / "model.safetensors").read_bytes()
    # a setting the way config.json names it, and the program's checks
    bpe = posenc.train(str(tmp_path / "bpe"), steps=5, data=str(corpus), tokenizer="bpe", vocab_size=280,
                       lr_schedule="cosine", on_eval=lambda r: None, **SMALL)
    assert posenc.load(bpe["final_model"]).tokenizer == "bpe (280 tokens)"
    # an option whose config.json key is another, by the program's name
    named = posenc.train(str(tmp_path / "named"), steps=2, data=str(corpus), adam_eps=1e-6, decay_on="matrices",
                         on_eval=lambda r: None, **SMALL)
    assert named["config"]["eps"] == 1e-6 and named["config"]["weight_decay_scope"] == "matrices"


@pytest.mark.parametrize("threads", [1, 2])
def test_the_programs_task_and_rope_options_by_their_cli_names(threads, shakespeare, corpus, tmp_path):
    posenc.set_num_threads(threads)
    small = {key: value for key, value in SMALL.items() if key != "context"}  # a task's: its longest example
    run = posenc.train(str(tmp_path / "py"), steps=10, task="copy", task_lengths="1-4", rope_base=500,
                       on_eval=lambda r: None, **small)
    assert run["config"]["task"] == {"name": "copy", "lengths": "1-4"} and run["config"]["rope"]["base"] == 500
    assert run["config"]["data"] == "" and run["config"]["context"] == 8
    subprocess.run([shakespeare, "train", "--posenc", "rope", "--layers", "2", "--dim", "64", "--heads", "4",
                    "--batch", "4", "--eval-every", "10", "--eval-iters", "2", "--steps", "10", "--threads",
                    str(threads), "--task", "copy", "--task-lengths", "1-4", "--rope-base", "500", "--out",
                    str(tmp_path / "cli")],
                   check=True, capture_output=True)
    assert (tmp_path / "py" / "model.safetensors").read_bytes() == (tmp_path / "cli" / "model.safetensors").read_bytes()
    staged = posenc.train(str(tmp_path / "py-staged"), steps=10, task="copy", task_lengths="1-4", task_curriculum="2:4",
                          on_eval=lambda r: None, **small)
    assert staged["config"]["task"] == {"name": "copy", "lengths": "1-4", "curriculum": "2-2:4"}
    subprocess.run([shakespeare, "train", "--posenc", "rope", "--layers", "2", "--dim", "64", "--heads", "4",
                    "--batch", "4", "--eval-every", "10", "--eval-iters", "2", "--steps", "10", "--threads",
                    str(threads), "--task", "copy", "--task-lengths", "1-4", "--task-curriculum", "2:4", "--out",
                    str(tmp_path / "cli-staged")],
                   check=True, capture_output=True)
    assert ((tmp_path / "py-staged" / "model.safetensors").read_bytes() ==
            (tmp_path / "cli-staged" / "model.safetensors").read_bytes())
    # a stage that ends at a loss (one any model meets): skipped at the first evaluation, and said so
    marked = posenc.train(str(tmp_path / "py-marked"), steps=25, task="copy", task_lengths="1-4",
                          task_curriculum="2:20@1e9", on_eval=lambda r: None, **small)
    first, last = marked["records"][0], marked["records"][-1]
    assert first["stage_loss"] is not None and first["skipped_steps"] == 20
    assert last["stage_loss"] is None and last["step"] == 5 and last["skipped_steps"] == 20
    yarn = posenc.train(str(tmp_path / "yarn"), steps=2, data=str(corpus), rope_scaling="yarn", rope_factor=4,
                        yarn_beta_fast=16, on_eval=lambda r: None, **SMALL)
    assert yarn["config"]["rope"] == {"method": "yarn", "factor": 4.0, "beta_fast": 16.0, "beta_slow": 1.0}
    bad = [(ValueError, "data with task copy: the task makes its own examples", dict(task="copy", data=str(corpus))),
           (ValueError, "task 'kopy': expected one of", dict(task="kopy")),
           (ValueError, "task_lengths needs task", dict(task_lengths="1-4")),
           (ValueError, "task_curriculum needs task", dict(task_curriculum="2:4")),
           (ValueError, "stage '2' is not LENGTHS:STEPS", dict(task="copy", task_curriculum="2")),
           (ValueError, "stage lengths 1-20 exceed the task lengths 1-16", dict(task="copy", task_curriculum="1-20:2")),
           (TypeError, "task_lengths takes a string", dict(task="copy", task_lengths=4)),
           (ValueError, "yarn_beta_fast: read by yarn, not by the scaling 'linear'",
            dict(rope_scaling="linear", rope_factor=2, yarn_beta_fast=8)),
           (ValueError, "rope_factor: read by linear", dict(rope_factor=2)),
           (ValueError, "rope_scaling 'spiral': expected one of", dict(rope_scaling="spiral")),
           (TypeError, "rope_base takes a number", dict(rope_base="500")),
           (ValueError, "apply to rotary policies", dict(rope_base=500, posenc="alibi"))]
    for i, (error, message, settings) in enumerate(bad):
        with pytest.raises(error, match=message):
            posenc.train(str(tmp_path / f"bad{i}"), steps=2, **dict(SMALL, **settings))
        assert not (tmp_path / f"bad{i}").exists()


def test_a_task_study_from_python_tests_each_model_at_each_length(tmp_path, capsys):
    posenc.set_num_threads(1)
    small = {key: value for key, value in SMALL.items() if key not in ("posenc", "context")}
    summary = posenc.study(str(tmp_path / "task"), variants=["rope", "alibi"], seeds=[1, 2], steps=10, task="copy",
                           task_lengths="1-4", jobs=2, **small)
    assert "study: done rope-seed1-steps10" in capsys.readouterr().out
    cells = summary["task"]["band_cells"]
    assert {c["variant"] for c in cells} == {"rope", "alibi"} and cells[0]["band"] == "≤ 4 (trained)"
    assert all(len(c["accuracy"]) == 2 for c in cells)  # a seed's accuracy each
    records = posenc.records.read_records(tmp_path / "task")
    assert sorted({row[2] for row in posenc.records.task_accuracy(records)}) == list(range(1, 33))  # to 8 × 4


@pytest.mark.parametrize("threads", [1, 2])
def test_fine_tuning_from_python_equals_the_programs(threads, shakespeare, corpus, tmp_path):
    posenc.set_num_threads(threads)
    source = posenc.train(str(tmp_path / "source"), steps=10, data=str(corpus), on_eval=lambda r: None,
                          **SMALL)["final_model"]
    tuned = posenc.train(str(tmp_path / "py"), steps=4, data=str(corpus), init_from=source, context=32,
                         eval_every=2, eval_iters=2, on_eval=lambda r: None)
    assert tuned["config"]["init_from"] == {"checkpoint": source, "step": 10, "context": 16}
    assert tuned["config"]["layers"] == 2 and tuned["config"]["posenc"] == "rope"  # the source's
    subprocess.run([shakespeare, "train", "--init-from", source, "--context", "32", "--steps", "4", "--eval-every",
                    "2", "--eval-iters", "2", "--data", str(corpus), "--threads", str(threads), "--out",
                    str(tmp_path / "cli")],
                   check=True, capture_output=True)
    assert (tmp_path / "py" / "model.safetensors").read_bytes() == (tmp_path / "cli" / "model.safetensors").read_bytes()
    with pytest.raises(ValueError, match="^layers 3 differs from the init_from checkpoint's 2"):
        posenc.train(str(tmp_path / "bad"), steps=4, data=str(corpus), init_from=source, layers=3)
    with pytest.raises(ValueError, match="^posenc alibi differs from the init_from checkpoint's rope"):
        posenc.train(str(tmp_path / "bad"), posenc="alibi", steps=4, data=str(corpus), init_from=source)
    with pytest.raises(ValueError, match="init_from is a setting of train"):
        posenc.study(str(tmp_path / "study"), init_from=source)


def test_errors_name_the_settings_as_python_writes_them(corpus, tmp_path):
    posenc.set_num_threads(1)
    with pytest.raises(posenc.Error, match="^warmup_steps 50 exceeds the run's 10 steps"):
        posenc.train(str(tmp_path / "w"), steps=10, data=str(corpus), warmup_steps=50, **SMALL)
    run = tmp_path / "my--run"  # a path's dashes stay
    posenc.train(str(run), steps=2, data=str(corpus), on_eval=lambda r: None, **SMALL)
    with pytest.raises(posenc.Error, match=f"^out '{run}' already holds a run; pass resume=True to continue it or "
                                           "choose another out$"):
        posenc.train(str(run), steps=2, data=str(corpus), **SMALL)


def test_ctrl_c_saves_the_step_and_resume_finishes_the_same_run(corpus, tmp_path):
    import signal
    import threading
    posenc.set_num_threads(1)
    whole = posenc.train(str(tmp_path / "whole"), steps=400, data=str(corpus), on_eval=lambda r: None, **SMALL)
    seen = []

    def on_step(report):  # Ctrl-C from another thread once training has begun, as a terminal sends it
        seen.append(report["step"])
        if len(seen) == 3:
            threading.Thread(target=lambda: os.kill(os.getpid(), signal.SIGINT)).start()

    with pytest.raises(KeyboardInterrupt, match="the run is saved"):
        posenc.train(str(tmp_path / "cut"), steps=400, data=str(corpus), on_step=on_step, on_eval=lambda r: None,
                     **SMALL)
    assert seen[-1] < 400
    resumed = posenc.train(str(tmp_path / "cut"), resume=True, on_eval=lambda r: None)
    assert (tmp_path / "cut" / "model.safetensors").read_bytes() == \
        (tmp_path / "whole" / "model.safetensors").read_bytes()
    for key in ("step", "train_loss", "val_loss"):
        assert resumed["records"][-1][key] == whole["records"][-1][key]


def test_train_refuses_bad_settings(corpus, tmp_path):
    with pytest.raises(TypeError, match="unknown setting 'learning_rate'"):
        posenc.train(str(tmp_path / "a"), data=str(corpus), learning_rate=1e-3)
    with pytest.raises(ValueError, match="unknown positional encoding 'rotary'"):
        posenc.train(str(tmp_path / "b"), posenc="rotary", data=str(corpus))
    with pytest.raises(ValueError, match="learning-rate schedule 'sometimes'"):
        posenc.train(str(tmp_path / "c"), data=str(corpus), lr_schedule="sometimes", **dict(SMALL, posenc="alibi"))
    with pytest.raises(ValueError, match="config.json"):
        posenc.train(str(tmp_path / "d"), resume=True, lr=1e-3)
    with pytest.raises(TypeError, match="takes a number"):
        posenc.train(str(tmp_path / "e"), data=str(corpus), lr=[1e-3])
    with pytest.raises(ValueError, match="tokenizer bpe needs a vocabulary size"):
        posenc.train(str(tmp_path / "f"), data=str(corpus), tokenizer="bpe", **SMALL)
    assert not any((tmp_path / name).exists() for name in "abcdef")


@pytest.mark.parametrize("policy", ["rope", "alibi", "t5", "fire", "learned"])
def test_the_pytorch_twin_gives_the_bindings_logits(policy, shakespeare, corpus, tmp_path):
    try:
        import torch
    except ImportError:
        pytest.skip("PyTorch is not installed (scripts/install-deps.sh --bench)")
    import importlib.util
    spec = importlib.util.spec_from_file_location("posenc_torch", os.path.join(ROOT, "tools", "posenc_torch.py"))
    twin = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(twin)
    posenc.set_num_threads(1)
    run = posenc.train(str(tmp_path / policy), steps=20, data=str(corpus), on_eval=lambda r: None,
                       **dict(SMALL, posenc=policy))
    model = posenc.load(run["final_model"])
    tensors, meta = twin.load_safetensors(run["final_model"])
    reference = twin.PosencModel(tensors, meta).double()
    ids = model.encode("ROMEO: to be or not to be that is the question")[:16]
    with torch.no_grad():
        expected = reference(torch.tensor(ids, dtype=torch.long)[None])[0].numpy()
    assert np.abs(model.forward(ids) - expected).max() < 1e-4  # they agree to ~1e-6
    assert np.abs(expected).max() > 0.1  # logits of a model that has trained
    for layer in range(model.layers):  # and on what each layer attends to
        weights = reference.attention[layer][0].numpy()
        assert np.abs(model.attention(ids, layer) - weights).max() < 1e-5


def test_train_shows_a_progress_bar_where_tqdm_is_installed(corpus, tmp_path, capsys):
    pytest.importorskip("tqdm")
    posenc.set_num_threads(1)
    posenc.train(str(tmp_path / "bar"), steps=20, data=str(corpus), **SMALL)
    err = capsys.readouterr().err
    assert "20/20" in err and "loss=" in err  # the bar, on stderr
    quiet = posenc.train(str(tmp_path / "quiet"), steps=20, data=str(corpus), progress=False,
                         on_eval=lambda r: None, **SMALL)
    assert "20/20" not in capsys.readouterr().err and len(quiet["records"]) == 3


def test_study_from_python_runs_the_design_and_returns_its_summary(shakespeare, corpus, tmp_path):
    posenc.set_num_threads(1)
    settings = dict(layers=2, dim=64, heads=4, batch=4, context=16, eval_every=10, eval_iters=2)
    ended = []
    summary = posenc.study(str(tmp_path / "py"), variants=["rope", "alibi"], seeds=[1, 2], steps=10,
                           data=str(corpus), jobs=2, on_run=ended.append, **settings)
    assert len(ended) == 4 and all(e["end"] == "done" for e in ended)
    assert all(e["message"].startswith("done ") for e in ended)
    assert [v["variant"] for v in summary["variants"]] == ["rope", "alibi"]
    assert all(v["n"] == 2 for v in summary["variants"])
    assert (tmp_path / "py" / "summary.md").exists()
    # the study program's runs of the same design are the same runs, to the bit
    subprocess.run([shakespeare.replace("shakespeare", "study"), "--variants", "rope,alibi", "--seeds", "1,2",
                    "--steps", "10", "--extended-steps", "0", "--layers", "2", "--dim", "64", "--heads", "4",
                    "--batch", "4", "--context", "16", "--eval-every", "10", "--eval-iters", "2", "--data",
                    str(corpus), "--threads", "1", "--out", str(tmp_path / "cli")], check=True, capture_output=True)
    program = json.loads((tmp_path / "cli" / "summary.json").read_text())
    assert [v["val_loss"] for v in summary["variants"]] == [v["val_loss"] for v in program["variants"]]
    # run again, it trains nothing: every record is found
    again = []
    posenc.study(str(tmp_path / "py"), variants=["rope", "alibi"], seeds=[1, 2], steps=10, data=str(corpus),
                 on_run=again.append, **settings)
    assert again == []
    # a grid across the tokens, compared in bits per byte
    grid = posenc.study(str(tmp_path / "grid"), variants=["rope"], seeds=[1], steps=5, data=str(corpus),
                        grid={"tokenizer": ["char", "bpe"]}, vocab_size=280, on_run=lambda e: None, **settings)
    assert "val_bits_per_byte" in grid["across"][0]
    with pytest.raises(TypeError, match="unknown setting 'learning_rate'"):
        posenc.study(str(tmp_path / "bad"), learning_rate=1)
    with pytest.raises(posenc.Error, match="unknown positional encoding|rotary"):
        posenc.study(str(tmp_path / "bad"), variants=["rotary"], data=str(corpus))
