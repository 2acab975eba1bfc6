"""The graders' vocabulary: load a student's file, call it, compare what it returns with the
expected numbers, and say what is wrong in one message (the first wrong number, where, and a hint).

A check (a function in `models/exercises/graders/`) raises `ExerciseFailure` with that message,
or `NotStarted` when the student's function still raises the stub's NotImplementedError. Any
other exception of the student's code becomes an `ExerciseFailure` naming the exception: a
grader never shows a bare traceback.

Hints: each grader lists the plausible mistakes of its exercise as small functions with the
student's signature (`Mistake`). When the student's output differs from the expected one, the
grader runs the same inputs through each mistake; if one reproduces the student's numbers,
its hint is printed, otherwise the exercise's general hint.
"""
import contextlib
import os
import secrets
from dataclasses import dataclass
from typing import Callable

import numpy as np

from microtensor import Tensor, writing


class ExerciseFailure(AssertionError):
    """A check failed; the message is what the student reads."""


class NotStarted(Exception):
    """The student's function still raises the stub's NotImplementedError."""


SEED_VARIABLE = "MICROTENSOR_EXERCISE_SEED"
_RUN_SEED = []


def run_seed():
    """This run's seed of the checks' random inputs: drawn once per grading process (so that an
    answer recorded from one run is no answer in the next), or $MICROTENSOR_EXERCISE_SEED, which
    draws a reported run's inputs again."""
    if not _RUN_SEED:
        given = os.environ.get(SEED_VARIABLE, "").strip()
        _RUN_SEED.append(int(given) if given.isdigit() else secrets.randbelow(10**6))
    return _RUN_SEED[0]


def inputs_rng(seed):
    """The random generator of one check's inputs: the check's own `seed` mixed with the run's
    (run_seed), computed in the grader's process and sent to the student's."""
    return np.random.default_rng([run_seed(), seed])


@dataclass
class Mistake:
    """A plausible wrong answer: `fn` has the student's signature and makes the mistake;
    `hint` is what the grader prints when the student's numbers match it."""

    name: str
    hint: str
    fn: Callable


def student_function(module, name):
    """`module.name`, or an ExerciseFailure saying it is missing."""
    fn = getattr(module, name, None)
    if not callable(fn):
        raise ExerciseFailure(f"the workspace file defines no function `{name}`; keep the "
                              "stub's name and signature")
    return fn


def call(fn, *args, what=None, context="", hint="", **kwargs):
    """fn(*args, **kwargs), the student's code: NotImplementedError -> NotStarted; any other
    exception -> an ExerciseFailure naming it and the call, then `context` (the inputs) and
    `hint` when given, so that no failure is a bare exception."""
    what = what or f"{fn.__name__}(...)"
    try:
        return fn(*args, **kwargs)
    except NotImplementedError as stub:
        raise NotStarted(str(stub) or f"{fn.__name__} is not written yet") from None
    except ExerciseFailure:
        raise
    except Exception as error:
        message = f"{what} raised {type(error).__name__}: {str(error).strip()}"
        if context:
            message += f" ({context})"
        if hint:
            message += f". Hint: {hint}"
        raise ExerciseFailure(message) from None


def _contents(value):
    if isinstance(value, Tensor):
        value = value.data
    if isinstance(value, np.ndarray):
        return value.shape, value.dtype.str, value.tobytes()
    if isinstance(value, list):
        return repr(value)
    return None


def _own_copy(value):
    if isinstance(value, np.ndarray):
        return np.copy(value)
    if isinstance(value, list):
        return [list(v) if isinstance(v, list) else v for v in value]
    return value


def call_watching(fn, *args, **kwargs):
    """fn on copies of `args` (the grader's own arrays and lists are never handed out): (its
    result, the indices of the arguments it wrote into). A student's file run in its own
    process (remote.py) says which it wrote into; a module in this process is watched here.
    Raises as `call`."""
    copies = [_own_copy(a) for a in args]
    before = [_contents(c) for c in copies]
    out = call(fn, *copies, **kwargs)
    written = {i for i, (c, b) in enumerate(zip(copies, before))
               if b is not None and _contents(c) != b}
    remote = getattr(fn, "written", None)
    if callable(remote):
        written |= set(remote())
    return out, written


def as_array(x, name):
    """A student's return value as a numpy array (a Tensor's data); ExerciseFailure if None."""
    if x is None:
        raise ExerciseFailure(f"{name}: your function returned None; did you forget `return`?")
    if isinstance(x, Tensor):
        return x.data
    return np.asarray(x)


def fmt_index(idx):
    return "[" + ", ".join(str(int(i)) for i in idx) + "]" if len(idx) else ""


def first_difference(got, expected, atol, rtol):
    """Index of the first element where got and expected differ (NaN equals NaN), or None."""
    close = np.isclose(got, expected, atol=atol, rtol=rtol, equal_nan=True)
    if close.all():
        return None
    return tuple(int(i) for i in np.argwhere(~close)[0])


def _same(a, b, atol, rtol):
    try:
        a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    return a.shape == b.shape and bool(np.allclose(a, b, atol=atol, rtol=rtol, equal_nan=True))


def diagnose(got, args, mistakes, pick=lambda out: out, atol=1e-6, rtol=1e-5):
    """The hint of the first mistake that reproduces `got` on the same `args`, or None.

    pick: from a mistake's return value, the part that `got` is (e.g. one of two gradients).
    """
    for mistake in mistakes:
        try:
            with np.errstate(all="ignore"):
                wrong = mistake.fn(*[np.copy(a) if isinstance(a, np.ndarray) else a for a in args])
            wrong = pick(wrong)
            wrong = wrong.data if isinstance(wrong, Tensor) else wrong
        except Exception:  # the mistake cannot even run on these inputs: not this one
            continue
        if _same(got, wrong, atol, rtol):
            return mistake.hint
    return None


def expect_close(got, expected, name, *, hint, atol=1e-6, rtol=1e-5, dtype=None, context=""):
    """ExerciseFailure unless `got` equals `expected` (shape, optionally dtype, values).

    name: how the notes write the quantity ("∂L/∂s"); the message shows its first wrong element
    as `∂L/∂s[0, 2] = 0.131, expected 0.087`, then `context` (the inputs used) and `hint`.
    """
    got = as_array(got, name)
    expected = np.asarray(expected)
    where = f" ({context})" if context else ""
    if got.shape != expected.shape:
        raise ExerciseFailure(f"{name} has shape {list(got.shape)}, expected "
                              f"{list(expected.shape)}{where}. Hint: {hint}")
    if dtype is not None and got.dtype != dtype:
        raise ExerciseFailure(f"{name} has dtype {got.dtype}, expected {np.dtype(dtype)} (the "
                              f"input's dtype){where}. Hint: a float64 array or a numpy scalar "
                              "(np.int64 from .sum(), np.float64) turns float32 into float64; "
                              "use Python numbers (int(n)), or .astype(x.dtype) at the end")
    if not np.issubdtype(got.dtype, np.number) and got.dtype != np.bool_:
        raise ExerciseFailure(f"{name} holds {got.dtype}, expected numbers{where}")
    idx = first_difference(got.astype(np.float64), expected.astype(np.float64), atol, rtol)
    if idx is not None:
        shown, wanted = _distinct(float(got[idx]), float(expected[idx]))
        raise ExerciseFailure(f"{name}{fmt_index(idx)} = {shown}, expected {wanted}{where}. "
                              f"Hint: {hint}")


def _distinct(a, b):
    """a and b with 4 significant digits, or as many more as it takes to tell them apart."""
    for digits in (4, 6, 8, 10, 17):
        shown, wanted = f"{a:.{digits}g}", f"{b:.{digits}g}"
        if shown != wanted:
            break
    return shown, wanted


def compare(student_fn, args, expected, name, *, hint, mistakes=(), pick=lambda out: out,
            atol=1e-6, rtol=1e-5, dtype=None, context=""):
    """Call the student's function on `args`, pick the part to check, and compare it with
    `expected`; on a difference the hint is the matching mistake's, else `hint`."""
    what = f"{getattr(student_fn, '__name__', 'your function')}(...)"
    where = f" ({context})" if context else ""
    try:
        out = call(student_fn, *[np.copy(a) if isinstance(a, np.ndarray) else a for a in args],
                   what=what)
    except ExerciseFailure as failure:  # the same error as a known mistake raises: its hint
        for mistake in mistakes:
            try:
                with np.errstate(all="ignore"):  # a mistake may overflow: that is its business
                    call(mistake.fn, *[np.copy(a) if isinstance(a, np.ndarray) else a
                                       for a in args], what=what)
            except ExerciseFailure as same:
                if str(same) == str(failure):
                    raise ExerciseFailure(f"{failure}{where}. Hint: {mistake.hint}") from None
            except Exception:
                continue
        raise ExerciseFailure(f"{failure}{where}. Hint: {hint}") from None
    got = pick(out)
    try:
        expect_close(got, expected, name, hint=hint, atol=atol, rtol=rtol, context=context)
    except ExerciseFailure as failure:
        found = diagnose(as_array(got, name), args, mistakes, pick, atol, rtol)
        if found is None:
            raise
        message = str(failure)
        raise ExerciseFailure(message[:message.rfind("Hint: ")] + f"Hint: {found}") from None
    if dtype is not None:  # the right numbers in the wrong dtype: no mistake to diagnose
        expect_close(got, expected, name, hint=hint, atol=atol, rtol=rtol, dtype=dtype,
                     context=context)
    return out


def run_task(student, name, *args, **kwargs):
    """tasks.py's procedure `name` on the student's code: in the student's process when the
    student is remote (remote.RemoteStudent), else here (a module the tests build in-process).
    The student's NotImplementedError and exceptions are handled as `call` handles them."""
    if hasattr(student, "task") and callable(student.task):
        runner = student.task
    else:
        from . import tasks

        def runner(name, *args, **kwargs):
            return getattr(tasks, name)(student, *args, **kwargs)
    return runner(name, *args, **kwargs)


def finite_differences(fn, inputs, weights, eps=1e-6):
    """∂L/∂x for each input of `fn` that requires grad, L = Σ w ⊙ fn(*inputs), by central
    differences (L(x+ε) − L(x−ε))/2ε in float64: the truth a backward is held to."""
    from microtensor import no_grad

    out = []
    with no_grad():
        for t in inputs:
            if not (isinstance(t, Tensor) and t.requires_grad):
                continue
            numeric = np.zeros_like(t.data)
            for idx in np.ndindex(t.data.shape):
                original = t.data[idx]
                with writing(t) as data:  # each nudge counted, as every library write
                    data[idx] = original + eps
                up = float((as_array(fn(*inputs), "out") * weights).sum())
                with writing(t) as data:
                    data[idx] = original - eps
                down = float((as_array(fn(*inputs), "out") * weights).sum())
                with writing(t) as data:
                    data[idx] = original
                numeric[idx] = (up - down) / (2 * eps)
            out.append(numeric)
    return out


def check_student_gradients(student, task, task_args, got_pick, reference_fn, inputs, names, *,
                            hint, atol=1e-5, rtol=1e-3, context=""):
    """Backward through the student's own graph (run by tasks.py in the student's process)
    against finite differences of the reference forward, computed here. got_pick: from the
    task's return value, the list of gradients (one per input that requires grad)."""
    from microtensor import no_grad

    with no_grad():
        shape = np.shape(as_array(reference_fn(*inputs), "out"))
    w = weights_like(shape)
    where = f"finite differences{', ' + context if context else ''}"
    # the truth first, from this process's own copies, before the student's code runs
    expected = finite_differences(reference_fn, [_own_tensor(t) for t in inputs], w)
    result = call(run_task, student, task, *task_args(w), what="backward() with your code",
                  context=context, hint=hint)
    grads = got_pick(result)
    wanted = [name for t, name in zip(inputs, names) if isinstance(t, Tensor) and t.requires_grad]
    for name, got, numeric in zip(wanted, grads, expected):
        if got is None:
            raise ExerciseFailure(f"∂L/∂{name} is None: backward did not reach {name} ({where})."
                                  " Hint: build the output with the engine's Tensor ops (no "
                                  ".data, no numpy), so that the graph connects it to the inputs")
        expect_close(got, numeric, f"∂L/∂{name}", hint=hint, atol=atol, rtol=rtol, context=where)


def _own_tensor(t):
    if isinstance(t, Tensor):
        return Tensor(np.copy(t.data), requires_grad=t.requires_grad)
    return _own_copy(t)


def shape_text(*arrays):
    """'a [2, 3], b [3]' style description of the inputs, for a failure's context."""
    return ", ".join(f"{name} {list(np.shape(a))}" for name, a in arrays)


@contextlib.contextmanager
def plugged(owner, name, value):
    """Replace `owner.name` (a reference op's method, a module's function) by `value` while the
    block runs: the student's piece inside the reference code."""
    original = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, original)


def weights_like(shape, seed=123):
    """Fixed random weights ±[0.5, 1.5) for L = Σ w ⊙ out: a plain sum would hide a wrong
    gradient of an op whose outputs sum to a constant (softmax rows sum to 1)."""
    rng = inputs_rng(seed)
    return rng.uniform(0.5, 1.5, size=shape) * rng.choice([-1.0, 1.0], size=shape)


def check_gradients(fn, inputs, names, *, hint, eps=1e-6, atol=1e-5, rtol=1e-3, context=""):
    """Compare backward() with central finite differences, (L(x+ε) − L(x−ε))/2ε, for every
    input that requires grad (float64). L = Σ w ⊙ fn(*inputs). `names` name the inputs as the
    notes do ("s", "V"); a difference reads `∂L/∂V[0, 1] = ..., expected ... (finite
    differences)`."""
    from microtensor import no_grad

    where = f"finite differences{', ' + context if context else ''}"
    try:
        with no_grad():
            out = call(fn, *inputs, what="the forward with your code")
        w = weights_like(np.shape(as_array(out, "the output")))

        def loss():
            return (call(fn, *inputs, what="the forward with your code") * w).sum()

        for t in inputs:
            if isinstance(t, Tensor):
                t.grad = None
        call(lambda: loss().backward(), what="backward() with your code")
    except ExerciseFailure as failure:
        inputs = f" ({context})" if context else ""
        raise ExerciseFailure(f"{failure}{inputs}. Hint: {hint}") from None
    for t, name in zip(inputs, names):
        if not (isinstance(t, Tensor) and t.requires_grad):
            continue
        numeric = np.zeros_like(t.data)
        with no_grad():
            for idx in np.ndindex(t.data.shape):
                original = t.data[idx]
                with writing(t) as data:  # each nudge counted, as every library write
                    data[idx] = original + eps
                up = loss().item()
                with writing(t) as data:
                    data[idx] = original - eps
                down = loss().item()
                with writing(t) as data:
                    data[idx] = original
                numeric[idx] = (up - down) / (2 * eps)
        analytic = t.grad if t.grad is not None else np.zeros_like(t.data)
        expect_close(analytic, numeric, f"∂L/∂{name}", hint=hint, atol=atol, rtol=rtol,
                     context=where)
