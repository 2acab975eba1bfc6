"""A student who wants a green check without the work: each attack is graded the way a course
grades it (the workspace's graders, the student's file in its own process), and each is refused
with its own message; no attack changes the verdict of another exercise; the right answers
written differently (tests/exercises/variants) all pass; `check`, `pytest` and one exercise at a
time agree.
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

import models
from models.exercises import EXERCISES, exercise
from models.exercises import remote as remote_module
from models.exercises.workspace import run_graders, start

HERE = Path(__file__).resolve().parent
SOLUTIONS, VARIANTS = HERE / "solutions", HERE / "variants"

# the six-line attack of issue 26: rebind every check's code to one that passes
REBIND_EVERY_CHECK = '''import gc
for f in gc.get_objects():
    if getattr(f, "__name__", "").startswith("check_"):
        f.__code__ = (lambda student: None).__code__
def unbroadcast(grad, shape):
    return grad
'''
# read the expected value from the grader's stack frame (issue 26: ex 3)
FRAME_SYS = '''import sys
def softmax_backward(a, da, axis=-1):
    frame = sys._getframe(1)
    while "expected" not in frame.f_locals:
        frame = frame.f_back
    return frame.f_locals["expected"]
'''
FRAME_INSPECT = '''import inspect
def adamw_step(p, g, m, v, t, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
    for info in inspect.stack():
        if "expected" in info.frame.f_locals:
            return info.frame.f_locals["expected"]
'''

# (exercise, file text, what the one-line refusal must say)
ATTACKS = {
    "rebind every check's __code__": (1, REBIND_EVERY_CHECK, "your file imports gc"),
    "expected from the stack frame (sys)": (3, FRAME_SYS, "your file imports sys"),
    "expected from the stack frame (inspect)": (11, FRAME_INSPECT, "your file imports inspect"),
    "the block itself, block(x)": (9, "def pre_norm_block(block, x):\n    return block(x)\n",
                                   "your code called nn.TransformerBlock.forward"),
    "block.forward": (9, "def pre_norm_block(block, x):\n    return block.forward(x)\n",
                      "your code called nn.TransformerBlock.forward"),
    "nn.scaled_dot_product_attention": (
        7, "import nn\ndef scaled_dot_product_attention(q, k, v, mask=None):\n"
           "    return nn.scaled_dot_product_attention(q, k, v, attn_mask=mask)\n",
        "your code called nn.scaled_dot_product_attention, the piece"),
    "from nn import scaled_dot_product_attention": (
        7, "from nn import scaled_dot_product_attention as sdpa\n"
           "def scaled_dot_product_attention(q, k, v, mask=None):\n"
           "    return sdpa(q, k, v, attn_mask=mask)\n",
        "your code called nn.scaled_dot_product_attention, the piece"),
    "the engine's own unbroadcast": (
        1, "from microtensor.autograd import unbroadcast  # noqa\n",
        "your file imports microtensor.autograd: this exercise is written in numpy"),
    "the engine's own backward through Tensors": (
        2, "from microtensor import Tensor\ndef matmul_backward(a, b, g):\n"
           "    a, b = Tensor(a, requires_grad=True), Tensor(b, requires_grad=True)\n"
           "    (a @ b).backward(g)\n    return a.grad, b.grad\n",
        "your file imports microtensor: this exercise is written in numpy"),
    "an engine internal in an engine exercise": (
        7, "from microtensor.ops.softmax import Softmax  # noqa\n"
           "def scaled_dot_product_attention(q, k, v, mask=None):\n    return q, k\n",
        "microtensor.ops.softmax is the engine's inside"),
    "the reference answers": (
        5, "from models.exercises.reference import cross_entropy_backward  # noqa\n",
        "models is the project's own code, with the reference answers"),
    "torch": (2, "import torch\ndef matmul_backward(a, b, g):\n    return torch, torch\n",
              "your file imports torch: torch would compute the piece for you"),
    "nn.KVCache": (10, "import nn\ndef attend_with_cache(cache, q, k, v):\n"
                       "    return nn.KVCache()\n",
                   "your code called nn.KVCache, the piece"),
    "MultiHeadAttention's own split": (
        8, "import nn\ndef split_heads(x, n_heads):\n"
           "    return nn.MultiHeadAttention._split_heads(None, x)\n"
           "def merge_heads(z):\n    return z\n",
        "your code called nn.MultiHeadAttention, the piece"),
    "eval": (4, "def layer_norm_backward(g, xhat, rstd, weight):\n"
                "    return eval('1')\n", "`eval` is refused in an exercise"),
    "a class's __dict__": (6, "import numpy as np\ndef masked_fill(x, mask, value):\n"
                              "    return np.__dict__\ndef masked_fill_backward(g, mask):\n"
                              "    return g\n", "`.__dict__` reaches into Python's machinery"),
    "np.load of a pickle naming the reference": (
        3, "import numpy as np\ndef softmax_backward(a, da, axis=-1):\n"
           "    f = np.load('answer.pkl', allow_pickle=True)\n    return f(a, da, axis)\n",
        "`.load` reads or writes files"),
    "allow_pickle through another reader": (
        11, "import numpy\nread = numpy\ndef adamw_step(*args):\n"
            "    return read.asarray([1], allow_pickle=True)\n",
        "allow_pickle runs code a file names"),
    "np.loadtxt of the reference's source": (
        5, "import numpy as np\ndef cross_entropy_backward(logits, targets):\n"
           "    return np.loadtxt('reference.py')\n", "`.loadtxt` reads or writes files"),
    "an earlier exercise's module": (
        2, "from ex01_unbroadcast import unbroadcast  # noqa\n",
        "each exercise stands alone (its own process): copy the function"),
    "nn.sublayer": (9, "import nn\ndef pre_norm_block(block, x):\n"
                       "    return nn.sublayer(x, block.ln_1, block.attn, True)\n",
                    "your code called nn.sublayer, the piece"),
}


def _workspace(tmp_path, files):
    root = start(tmp_path / "ws")
    for number, text in files.items():
        (root / "exercises" / exercise(number).filename).write_text(text, encoding="utf-8")
    return root


@pytest.mark.parametrize("name", list(ATTACKS))
def test_an_attack_is_refused_with_its_own_message(tmp_path, name):
    number, text, why = ATTACKS[name]
    result = run_graders(_workspace(tmp_path, {number: text}), [number])[number]
    assert result.status == "failed" and result.passed == 0, (name, result.messages)
    assert f"exercise {number}: refused: " in result.messages[0], result.messages[0]
    assert why in result.messages[0], f"{name}: expected {why!r} in {result.messages[0]!r}"


def test_each_attack_has_a_message_of_its_own():
    assert len({why for _, _, why in ATTACKS.values()}) >= len(ATTACKS) - 3


# the same attack past both fences: sys reached through object's subclasses (no import, no
# dunder the run-time fence can see), then gc, then every function named check_*
REBIND_PAST_THE_FENCES = '''def _sys():
    for cls in ().__class__.__base__.__subclasses__():
        if cls.__name__ == "_wrap_close":
            return cls.__init__.__globals__["sys"]
gc = _sys().modules.get("gc") or _sys().modules["importlib"].import_module("gc")
for f in gc.get_objects():
    if callable(f) and hasattr(f, "__code__") and f.__name__.startswith("check_"):
        f.__code__ = (lambda student: None).__code__
def unbroadcast(grad, shape):
    return grad
'''


def test_rebinding_every_check_changes_no_verdict_even_past_both_fences(tmp_path, monkeypatch):
    """Issue 26's six lines turned all 11 green (check: 11/11; pytest: 37 passed). Refused by
    the syntax check; and with that check switched off, a version that escapes the import
    fence runs in its own process, where no check lives and where the audit hook (guard.seal)
    ends it at its first reach for the collector's objects; every other exercise is untouched."""
    root = _workspace(tmp_path, {1: REBIND_EVERY_CHECK})
    results = run_graders(root)
    assert results[1].status == "failed" and "refused" in results[1].messages[0]
    assert all(results[n].status == "not started" for n in results if n != 1), results
    (root / "exercises" / exercise(1).filename).write_text(REBIND_PAST_THE_FENCES,
                                                          encoding="utf-8")
    monkeypatch.setattr(remote_module.guard, "static_check", lambda *args, **kwargs: None)
    results = run_graders(root)
    assert results[1].status == "failed" and results[1].passed == 0, results[1].messages
    assert "gc.get_objects" in results[1].messages[0], results[1].messages  # the audit hook
    assert all(results[n].status == "not started" for n in results if n != 1)


def test_the_run_time_fence_refuses_what_the_syntax_check_would(tmp_path, monkeypatch):
    """The second fence alone (syntax check off): the import fence in the student's process
    refuses the reference, and the poisoned piece refuses a call that reached it by another
    name (an alias of the block; nn's own attention)."""
    monkeypatch.setattr(remote_module.guard, "static_check", lambda *args, **kwargs: None)
    root = _workspace(tmp_path, {
        5: "from models.exercises.reference import cross_entropy_backward  # noqa\n",
        7: "import nn\ndef scaled_dot_product_attention(q, k, v, mask=None):\n"
           "    return nn.scaled_dot_product_attention(q, k, v, attn_mask=mask)\n",
        9: "def pre_norm_block(block, x):\n    run = block\n    return run(x)\n",
        3: FRAME_SYS})
    results = run_graders(root, [3, 5, 7, 9])
    assert "exercise 5: refused: may import only numpy, math, Python's small helpers" in \
        results[5].messages[0] and "your file imports models" in results[5].messages[0], \
        results[5].messages
    assert "exercise 3: refused: may import only numpy" in results[3].messages[0] and \
        "your file imports sys" in results[3].messages[0], results[3].messages
    for n, piece in ((7, "nn.scaled_dot_product_attention"), (9, "nn.TransformerBlock.forward")):
        assert results[n].passed == 0, results[n].messages
        assert f"exercise {n}: refused: your code called {piece}" in results[n].messages[0], (
            results[n].messages)


def test_the_alias_of_the_block_is_refused_with_the_syntax_check_on(tmp_path):
    root = _workspace(tmp_path, {9: "def pre_norm_block(block, x):\n    run = block\n"
                                    "    return run(x)\n"})
    result = run_graders(root, [9])[9]
    assert "exercise 9: refused: your code called nn.TransformerBlock.forward" in \
        result.messages[0], result.messages


ALWAYS_EQUAL = '''class Anything:
    shape = (2, 3, 4)
    def __eq__(self, other):
        return True
def unbroadcast(grad, shape):
    return Anything()
'''


def test_an_object_that_equals_everything_is_not_numbers(tmp_path):
    result = run_graders(_workspace(tmp_path, {1: ALWAYS_EQUAL}), [1])[1]
    assert result.status == "failed" and result.passed == 0
    assert "returned a Anything, which is not numbers" in result.messages[0], result.messages


def test_a_cache_that_keeps_every_query_and_recomputes_is_refused(tmp_path):
    """Issue 26: such a 'cache' gives the right rows; its cost shows what it computes."""
    keeps_queries = '''import microtensor
import nn
def attend_with_cache(cache, q, k, v):
    for name, new in (("q", q), ("k", k), ("v", v)):
        old = cache.get(name)
        cache[name] = new if old is None else microtensor.cat([old, new], axis=-2)
    t, t_new = cache["q"].shape[-2], q.shape[-2]
    out = nn.scaled_dot_product_attention(cache["q"], cache["k"], cache["v"],
                                          attn_mask=nn.causal_mask(t, t))[0]
    return out[:, :, t - t_new:]
'''
    result = run_graders(_workspace(tmp_path, {10: keeps_queries}), [10])[10]
    assert result.status == "failed", result.messages
    message = next(m for m in result.messages if "FLOPs" in m)
    assert "decode step" in message and "a cached step costs" in message
    assert "keeping the past queries and running attention over the whole sequence again is " \
           "not a cache" in message
    assert result.passed == result.total - 2  # its numbers are right: only the costs fail,
    assert any("s of CPU" in m for m in result.messages), result.messages  # FLOPs and CPU time


def test_exiting_the_process_fails_that_exercise_alone(tmp_path):
    root = _workspace(tmp_path, {
        1: "def unbroadcast(grad, shape):\n    raise SystemExit(0)\n",
        3: (SOLUTIONS / exercise(3).filename).read_text(encoding="utf-8")})
    results = run_graders(root, [1, 2, 3])
    assert results[1].status == "failed" and "raised SystemExit" in results[1].messages[0]
    assert results[2].status == "not started" and results[3].status == "passed"


def _pytest_in(root):
    source_root = str(Path(models.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": source_root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rA"], cwd=root, env=env,
                          capture_output=True, text=True, timeout=300)


def test_check_pytest_and_one_exercise_at_a_time_agree(tmp_path):
    """A workspace mixing an attack (ex 1), right answers (ex 2, 3), honest mistakes (ex 5 sums
    instead of averaging, ex 12 assigns instead of accumulating) and stubs: the same verdict
    from one run of every exercise, from each exercise alone, and from plain pytest."""
    solution = {n: (SOLUTIONS / exercise(n).filename).read_text(encoding="utf-8") for n in
                (2, 3, 5, 12)}
    root = _workspace(tmp_path, {
        1: REBIND_EVERY_CHECK, 2: solution[2], 3: solution[3],
        5: solution[5].replace("/ max(", "* 1 or max("),
        12: solution[12].replace("grad[parent] += d", "grad[parent] = d")})
    together = {n: r.status for n, r in run_graders(root).items()}
    alone = {ex.number: run_graders(root, [ex.number])[ex.number].status for ex in EXERCISES}
    assert together == alone
    assert together[1] == "failed" and together[2] == together[3] == "passed"
    assert together[5] == together[12] == "failed" and together[4] == "not started"
    run = _pytest_in(root)
    for ex in EXERCISES:
        lines = [line for line in run.stdout.splitlines() if ex.grader_filename in line]
        passed = all(line.startswith("PASSED") for line in lines)
        assert passed == (together[ex.number] == "passed"), (ex.number, lines)


def test_every_correct_variant_passes(tmp_path):
    """Right answers written otherwise: einsum (2), the explicit Jacobian (3), sums for means
    (4), logsumexp (5), indexing with the broadcast mask (6), q scaled first (7), permute and
    d written out (8), a helper per sublayer (9), attention written out over the cache (10),
    Kingma's folded ε (11), Kahn's order (12), a sort for the tie rule (13), a loop (1)."""
    files = {ex.number: (VARIANTS / ex.filename).read_text(encoding="utf-8") for ex in EXERCISES}
    results = run_graders(_workspace(tmp_path, files))
    assert {n: r.status for n, r in results.items()} == {ex.number: "passed" for ex in EXERCISES}, (
        {n: r.messages[:1] for n, r in results.items() if r.status != "passed"})


def test_the_reference_imported_by_every_file_is_refused_everywhere(tmp_path):
    root = _workspace(tmp_path, {
        ex.number: f"from models.exercises.reference import {', '.join(ex.functions)}  "
                   "# noqa: F401\n" for ex in EXERCISES})
    results = run_graders(root)
    for number, result in results.items():
        assert result.passed == 0 and "refused" in result.messages[0], (number, result.messages)
        assert "your file imports models.exercises.reference" in result.messages[0]
