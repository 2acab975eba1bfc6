"""The one helper module of the test suite, shared by every test folder.

It holds float64 arrays, tensors and modules, gradchecks, closeness checks, graph walking,
a numpy softmax, the `needs_dot` mark and `run_bounded` (a loader under a time limit).
Every test folder imports it (`from mt_testing import ...`; tests/conftest.py puts this
folder on sys.path). The
distinctive name keeps it apart from any other `helpers` module.
"""
import contextlib
import os
import pickle
import resource
import select
import shutil
import signal
import time

import numpy as np
import pytest
from hypothesis import settings

import microtensor as mt

# Tests that render with Graphviz's `dot` program; tests/conftest.py fails a CI run that skips them
DOT_MISSING = "Graphviz's dot is not installed (apt-get install graphviz; CI installs it)"
needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason=DOT_MISSING)
# The explorer's browser tests drive Debian's `chromium`; tests/conftest.py fails a CI run that
# skips them for want of it
CHROMIUM_MISSING = "Debian's chromium is not installed (apt-get install chromium; CI installs it)"

# Few, fast examples: the whole tests/microtensor suite must stay well under a minute.
FEW_EXAMPLES = settings(max_examples=25, deadline=None)


def array64(*shape, seed=0, low=-2.0, high=2.0, away_from=None, margin=0.1):
    """A float64 numpy array with uniform entries in [low, high).

    away_from=c moves every entry at least `margin` from c, for ops with a kink there
    (relu at 0, max at ties), where finite differences would straddle the kink.
    """
    rng = np.random.default_rng(seed)
    x = rng.uniform(low, high, size=shape)
    if away_from is not None:
        close = np.abs(x - away_from) < margin
        x = np.where(close, away_from + np.where(x >= away_from, margin, -margin), x)
    return x


def normal64(*shape, seed=0):
    """A float64 numpy array [*shape] of N(0, 1) samples, from a generator seeded with `seed`."""
    return np.random.default_rng(seed).normal(size=shape)


def tensor64(*shape, seed=0, requires_grad=True, **kwargs):
    """A float64 Tensor of random values (see `array64`), requiring grad by default."""
    return mt.Tensor(array64(*shape, seed=seed, **kwargs), requires_grad=requires_grad)


def check_gradients(fn, *inputs, seed=123, **tolerances):
    """`microtensor.gradcheck` for an op with an output of any shape.

    The output is reduced to a scalar with fixed random weights, L = Σ w ⊙ fn(x), not a
    plain sum: a plain sum would hide wrong gradients of ops whose outputs always sum to
    a constant (softmax rows sum to 1, so d(Σ softmax)/dx = 0 whatever backward does).
    """
    with mt.no_grad():
        shape = fn(*inputs).shape
    weights = np.random.default_rng(seed).uniform(0.5, 1.5, size=shape)
    weights *= np.random.default_rng(seed + 1).choice([-1.0, 1.0], size=shape)
    return mt.gradcheck(lambda *xs: (fn(*xs) * weights).sum(), inputs, **tolerances)


def weighted_gradcheck(fn, inputs, seed=123, **tolerances):
    """`check_gradients` with the inputs as one sequence (the nn tests' spelling)."""
    return check_gradients(fn, *inputs, seed=seed, **tolerances)


def to_float64(module):
    """Cast every parameter of `module` to float64 in place (for gradcheck); returns the module."""
    for p in module.parameters():
        p.data = p.data.astype(np.float64)
    return module


def np_softmax(s, axis=-1):
    """Reference softmax in numpy: exp(s − max) / Σ exp(s − max) along `axis`."""
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _array(x):
    return np.asarray(x.data if isinstance(x, mt.Tensor) else x, dtype=np.float64)


def _show(a):
    return np.array2string(a, precision=6, suppress_small=True, max_line_width=100)


def check_close(got, expected, what, atol=1e-6, rtol=0.0):
    """Assert got ≈ expected elementwise; the message names `what` and prints both arrays."""
    got, expected = _array(got), _array(expected)
    assert got.shape == expected.shape, f"{what}: expected shape {expected.shape}, got {got.shape}"
    if not np.allclose(got, expected, atol=atol, rtol=rtol):
        diff = np.max(np.abs(got - expected))
        raise AssertionError(f"{what}: expected\n{_show(expected)}\ngot\n{_show(got)}\n"
                             f"(largest |difference| {diff:.3g}, allowed atol={atol}, rtol={rtol})")


def check_shape(tensor, expected, what):
    """Assert a tensor, array or graph node (`.shape`) has exactly the shape `expected`."""
    got = tuple(np.shape(tensor.data) if isinstance(tensor, mt.Tensor) else
                getattr(tensor, "shape", np.shape(tensor)))
    assert got == tuple(expected), f"{what}: expected shape {tuple(expected)}, got {got}"


@contextlib.contextmanager
def recorded_steps():
    """{role: output Tensor} of the ops run inside the block whose node has a role.

    Attention gives its steps the roles "QKᵀ", "S", "S (masked)", "A" and "Z", so a test
    reads each intermediate as it was computed, through a forward hook, instead of
    recomputing it. The first op of each role wins.
    """
    outputs, steps = [], {}
    with mt.hooks.register_forward_hook(lambda fn, inputs, out: outputs.append(out)):
        yield steps
    for out in outputs:
        if out.grad_fn is not None and out.grad_fn.role:
            steps.setdefault(out.grad_fn.role, out)


def graph_nodes(root):
    """Every op node (`Function`) behind the Tensor `root`, each once, walked through
    `grad_fn.inputs`."""
    nodes, seen, stack = [], set(), [root.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen or isinstance(node, mt.autograd.AccumulateGrad):
            continue
        seen.add(id(node))
        nodes.append(node)
        stack.extend(node.inputs)
    return nodes


def backward_jacobian(fn, x):
    """∂fn(x)/∂x as a dense [fn(x).size, x.size] matrix, one backward() per output element."""
    x = np.asarray(x, dtype=np.float64)
    rows = []
    for i in range(fn(mt.Tensor(x)).size):
        xt = mt.Tensor(x.copy(), requires_grad=True)
        y = fn(xt)
        upstream = np.zeros(y.shape)
        upstream.flat[i] = 1.0
        y.backward(upstream)
        rows.append(xt.grad.reshape(-1).copy())
    return np.stack(rows)


def numeric_jacobian(fn, x, eps=1e-6):
    """∂fn(x)/∂x by central finite differences, [fn(x).size, x.size]; fn maps arrays to arrays."""
    x = np.asarray(x, dtype=np.float64)
    cols = []
    for j in range(x.size):
        step = np.zeros(x.size)
        step[j] = eps
        step = step.reshape(x.shape)
        cols.append((np.asarray(fn(x + step)) - np.asarray(fn(x - step))).reshape(-1) / (2 * eps))
    return np.stack(cols, axis=1)


def assert_close(actual, expected, what, atol=1e-10, rtol=1e-7):
    """Assert two arrays agree elementwise; the message shows both and the worst gap."""
    actual = np.asarray(actual.data if isinstance(actual, mt.Tensor) else actual)
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, (
        f"{what}: expected shape {expected.shape}, got {actual.shape}")
    if not np.allclose(actual, expected, atol=atol, rtol=rtol, equal_nan=False):
        gap = np.max(np.abs(actual.astype(np.float64) - expected))
        raise AssertionError(
            f"{what}: expected\n{expected}\ngot\n{actual}\n(max |gap| = {gap:.3g})")


def numerical_gradient(f, x, eps=1e-6):
    """Central finite differences of the scalar numpy function f at the numpy array x."""
    x = np.array(x, dtype=np.float64)
    grad = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        original = x[idx]
        x[idx] = original + eps
        f_plus = f(x)
        x[idx] = original - eps
        f_minus = f(x)
        x[idx] = original
        grad[idx] = (f_plus - f_minus) / (2 * eps)
    return grad


# Loader tests (tests/interop, tests/models/test_loader_fuzz.py): each hostile file is read
# in a child process limited to TIME_LIMIT seconds of CPU time (the kernel stops it: RLIMIT_CPU,
# immune to a busy machine) and WALL_LIMIT seconds of waiting, and MEMORY_LIMIT more bytes.
TIME_LIMIT = 2
WALL_LIMIT = 10 * TIME_LIMIT
MEMORY_LIMIT = 2 << 30


def run_bounded(fn):
    """fn() in a forked child under TIME_LIMIT CPU seconds, WALL_LIMIT seconds in all and
    MEMORY_LIMIT more bytes: ("ok", its result), ("error", class name, message, whether it
    is a FileError or FileNotFoundError), or ("timeout", how) / ("crash", how) when the
    child did not report.

    The loader tests run hostile files this way: a hang is stopped and a crash is a result,
    not a lost test run. POSIX only (os.fork)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report one result and leave without running pytest's exit
        os.close(read)
        try:
            with open("/proc/self/statm") as f:
                pages = int(f.read().split()[0])
            size = pages * os.sysconf("SC_PAGE_SIZE") + MEMORY_LIMIT
            resource.setrlimit(resource.RLIMIT_AS, (size, size))
            resource.setrlimit(resource.RLIMIT_CPU, (TIME_LIMIT, TIME_LIMIT + 1))
            result = ("ok", fn())
        except BaseException as error:  # noqa: BLE001  (every exception is reported)
            from models.schema import FileError
            result = ("error", type(error).__name__, str(error),
                      isinstance(error, (FileError, FileNotFoundError)))
        os.write(write, pickle.dumps(result))
        os._exit(0)
    os.close(write)
    deadline, data = time.monotonic() + WALL_LIMIT, b""
    with os.fdopen(read, "rb") as pipe:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([pipe], [], [], left)[0]:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return ("timeout", f"no result after {WALL_LIMIT} s")
            chunk = os.read(pipe.fileno(), 1 << 16)
            if not chunk:
                break
            data += chunk
    _, status = os.waitpid(pid, 0)
    if data:
        return pickle.loads(data)
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) in (signal.SIGXCPU, signal.SIGKILL):
        return ("timeout", f"over {TIME_LIMIT} s of CPU time")
    return ("crash", f"status {status}")
