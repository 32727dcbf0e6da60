"""pytest options of the Python module's tests: the shakespeare program that trains their checkpoints."""
import os
import subprocess

import pytest


def pytest_addoption(parser):
    parser.addoption("--shakespeare", required=True, help="the shakespeare program (build/<preset>/examples)")


@pytest.fixture(scope="session")
def shakespeare(request):
    return request.config.getoption("--shakespeare")


@pytest.fixture(scope="session")
def corpus(tmp_path_factory):
    """700 lines of words in a seeded order (as tests/cli/cli_test_lib.sh writes them)."""
    import random
    random.seed(7)
    words = ["to", "be", "or", "not", "that", "is", "the", "question", "ROMEO:", "JULIET:", "whether", "tis"]
    path = tmp_path_factory.mktemp("data") / "corpus.txt"
    path.write_text("\n".join(" ".join(random.choice(words) for _ in range(8)) for _ in range(700)) + "\n")
    return path


def train(shakespeare, corpus, out, *options):
    """A small model trained by the program: its final checkpoint's path."""
    subprocess.run([shakespeare, "train", "--posenc", "rope", "--layers", "2", "--dim", "64", "--heads", "4",
                    "--batch", "4", "--context", "16", "--steps", "20", "--eval-every", "10", "--eval-iters", "2",
                    "--threads", "1", "--data", str(corpus), "--out", str(out), *options],
                   check=True, capture_output=True)
    return os.path.join(out, "model.safetensors")


@pytest.fixture(scope="session")
def checkpoint(shakespeare, corpus, tmp_path_factory):
    return train(shakespeare, corpus, tmp_path_factory.mktemp("runs") / "rope")


@pytest.fixture(scope="session")
def bpe_checkpoint(shakespeare, corpus, tmp_path_factory):
    return train(shakespeare, corpus, tmp_path_factory.mktemp("runs") / "rope-bpe", "--tokenizer", "bpe",
                 "--vocab-size", "280")
