"""`train` (without --explore), `sample` and `exercises` run without the graphviz Python package.

This stands for `pip install -e .` into an environment without graphviz: each command runs in a
subprocess whose PYTHONPATH starts with a `sitecustomize` module that blocks `import graphviz`
(a meta-path finder raising ModuleNotFoundError, as when the package is not installed). viz is
imported only when a picture is asked for (issue 24).
"""
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]

BLOCKER = """\
import sys


class NoGraphviz:
    def find_spec(self, name, path=None, target=None):
        if name == "graphviz" or name.startswith("graphviz."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, NoGraphviz())
"""

TINY = ["--max-iters", "2", "--eval-interval", "2", "--eval-iters", "1", "--batch-size", "2",
        "--block-size", "8", "--n-layer", "1", "--n-head", "1", "--n-embd", "8"]


@pytest.fixture
def without_graphviz(tmp_path):
    """run(*args) -> CompletedProcess of `python -m models.cli ARGS` where graphviz is missing."""
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(BLOCKER, encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(blocker), str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))

    def run(*args, code=None):
        command = ["-c", code] if code else ["-m", "models.cli", *args]
        return subprocess.run([sys.executable, *command], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)
    return run


def test_the_blocker_makes_import_graphviz_fail(without_graphviz):
    """The stand-in holds: without it this test would prove nothing."""
    done = without_graphviz(code="import graphviz")
    assert done.returncode != 0 and "No module named 'graphviz'" in done.stderr, \
        f"expected `import graphviz` to fail, got exit {done.returncode}: {done.stderr[-500:]}"


def test_train_and_sample_run_without_graphviz(without_graphviz, tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("hello world, hello graph\n" * 20, encoding="utf-8")
    done = without_graphviz("train", "--data", str(corpus), "--out", str(tmp_path / "out"),
                            "--quiet", *TINY)
    assert done.returncode == 0, f"expected train to exit 0, got {done.returncode}: " \
                                 f"{done.stderr[-2000:]}"
    assert (tmp_path / "out" / "config.json").exists(), "expected a checkpoint in out/"
    done = without_graphviz("sample", "--out", str(tmp_path / "out"), "--num-chars", "20")
    assert done.returncode == 0, f"expected sample to exit 0, got {done.returncode}: " \
                                 f"{done.stderr[-2000:]}"
    assert len(done.stdout) >= 20, f"expected 20 sampled characters, got {done.stdout!r}"


def test_the_tiny_preset_trains_without_graphviz(without_graphviz, tmp_path):
    """`microtensor train --preset tiny`, as issue 24 names it (its iterations cut to 2)."""
    done = without_graphviz("train", "--preset", "tiny", "--out", str(tmp_path / "out"),
                            "--quiet", "--max-iters", "2", "--eval-interval", "2",
                            "--eval-iters", "1")
    assert done.returncode == 0, f"expected train --preset tiny to exit 0, got " \
                                 f"{done.returncode}: {done.stderr[-2000:]}"


def test_exercises_start_and_status_run_without_graphviz(without_graphviz, tmp_path):
    done = without_graphviz("exercises", "start", str(tmp_path / "ws"))
    assert done.returncode == 0, f"expected exercises start to exit 0, got " \
                                 f"{done.returncode}: {done.stderr[-2000:]}"
    done = without_graphviz("exercises", "status", "--dir", str(tmp_path / "ws"))
    assert done.returncode == 0, f"expected exercises status to exit 0, got " \
                                 f"{done.returncode}: {done.stderr[-2000:]}"
