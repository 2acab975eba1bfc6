"""Grader of exercise 10, decoding with a KV cache (notes 3.7): step-by-step decoding must give
the rows of one causal forward over the whole sequence (teacher forcing's parallel pass), for
one token at a time and for a prefill followed by steps and chunks; the cache must hold every
position; a step must cost what a cached step costs (its FLOPs, counted in the student's
process), not recompute the past; finite differences through the cached path."""
import time
import types

import numpy as np

import microtensor
import nn
from microtensor import Tensor

from .. import reference
from ..grading import (
    ExerciseFailure,
    Mistake,
    as_array,
    call,
    check_student_gradients,
    expect_close,
    inputs_rng,
    run_task,
    student_function,
)

HINT = ("on the first call the cache is empty (cache['k'] is None): start from k and v; then "
        "append along axis −2 (keys = cat([cache['k'], k], axis=−2), the same for values), store "
        "them in the cache, then attend q over all keys with nn.causal_mask(T_new, T_k, "
        "offset=T_k − T_new)")


def _append(cache, k, v):
    if cache["k"] is not None:
        k = microtensor.cat([cache["k"], k], axis=-2)
        v = microtensor.cat([cache["v"], v], axis=-2)
    return k, v


def _no_mask(cache, q, k, v):
    cache["k"], cache["v"] = _append(cache, k, v)
    return nn.scaled_dot_product_attention(q, cache["k"], cache["v"])[0]


def _top_left(cache, q, k, v):
    cache["k"], cache["v"] = _append(cache, k, v)
    mask = nn.causal_mask(q.shape[-2], cache["k"].shape[-2])
    return nn.scaled_dot_product_attention(q, cache["k"], cache["v"], attn_mask=mask)[0]


def _not_stored(cache, q, k, v):
    keys, values = _append(cache, k, v)
    t_q, t_k = q.shape[-2], keys.shape[-2]
    mask = nn.causal_mask(t_q, t_k, t_k - t_q)
    return nn.scaled_dot_product_attention(q, keys, values, attn_mask=mask)[0]


def _none_not_handled(cache, q, k, v):  # cat([None, k]) on the first call
    cache["k"] = microtensor.cat([cache["k"], k], axis=-2)
    cache["v"] = microtensor.cat([cache["v"], v], axis=-2)
    t_q, t_k = q.shape[-2], cache["k"].shape[-2]
    mask = nn.causal_mask(t_q, t_k, t_k - t_q)
    return nn.scaled_dot_product_attention(q, cache["k"], cache["v"], attn_mask=mask)[0]


def _only_new_stored(cache, q, k, v):
    out = _not_stored(cache, q, k, v)
    cache["k"], cache["v"] = k, v
    return out


MISTAKES = {
    "None": Mistake("None", "the first call finds an empty cache, cache['k'] is None, and "
                    "cat([None, k]) fails (numpy makes an object array of it): keys = k when "
                    "the cache is empty, cat([cache['k'], k], axis=−2) afterwards",
                    _none_not_handled),
    "no mask": Mistake("no mask", "a prefill of several new positions needs the causal mask: "
                       "new query i may see key j only if j ≤ T_past + i", _no_mask),
    "top-left": Mistake("top-left", "the new queries sit at the *end* of the keys: align the "
                        "causal mask bottom-right, offset = T_k − T_new (T_past); without it a "
                        "single new query sees only the first key", _top_left),
    "not stored": Mistake("not stored", "store the appended keys and values back into the "
                          "cache (cache['k'] = ...), or the next step forgets them", _not_stored),
    "only new": Mistake("only new", "the cache must keep *every* position so far: store the "
                        "concatenation, not only this call's k and v", _only_new_stored),
}


def _full(q, k, v):
    """One causal forward over the whole sequence: what the cached steps must reproduce."""
    t = q.shape[-2]
    return nn.scaled_dot_product_attention(q, k, v, attn_mask=nn.causal_mask(t, t))[0].data


def _run(student, q, k, v, chunks, weights=None, hint=""):
    """tasks.decode with the student's code (in its process when remote): (outputs, FLOPs per
    call, the cache's contents, gradients)."""
    return call(run_task, student, "decode", q, k, v, list(chunks), weights,
                what="attend_with_cache", hint=hint,
                context=f"positions in calls of {list(chunks)}, q [{', '.join(map(str, q.shape))}]")


def _as_student(fn):
    return types.SimpleNamespace(attend_with_cache=fn)


def _check(student, chunks, seed):
    rng = inputs_rng(seed)
    t = sum(chunks)
    q, k, v = (rng.normal(size=(2, 2, t, 4)) for _ in range(3))
    context = f"positions in calls of {list(chunks)}, q, k, v [2, 2, {t}, 4]"
    try:
        outs, _, cache, _ = _run(student, q, k, v, chunks)
    except ExerciseFailure as failure:  # the same error as a known mistake: its hint
        hint = HINT
        for mistake in MISTAKES.values():
            try:
                _run(_as_student(mistake.fn), q, k, v, chunks)
            except ExerciseFailure as same:
                if str(same) == str(failure):
                    hint = mistake.hint
                    break
            except Exception:
                continue
        # a failure `call` raised names the inputs already (its context): said once
        where = "" if "positions in calls of" in str(failure) else f" ({context})"
        raise ExerciseFailure(f"{failure}{where}. Hint: {hint}") from None
    got = np.concatenate([as_array(o, "the output") for o in outs], axis=-2)
    expected = _full(*(Tensor(a) for a in (q, k, v)))
    if got.shape != expected.shape:
        raise ExerciseFailure(f"the outputs, joined, have shape {list(got.shape)}, expected "
                              f"{list(expected.shape)} ({context}). Hint: {HINT}")
    try:
        expect_close(got, expected, "Z", hint=HINT, context=context)
    except ExerciseFailure:
        for mistake in MISTAKES.values():
            try:
                wrong = _run(_as_student(mistake.fn), q, k, v, chunks)[0]
            except Exception:  # this mistake cannot run on these inputs: not this one
                continue
            if np.allclose(np.concatenate(wrong, axis=-2), got):
                raise ExerciseFailure(f"{_first(got, expected)} ({context}). "
                                      f"Hint: {mistake.hint}") from None
        raise
    return cache, k, v


def _first(got, expected):
    idx = tuple(int(i) for i in np.argwhere(~np.isclose(got, expected, atol=1e-6))[0])
    return f"Z[{', '.join(map(str, idx))}] = {got[idx]:.4g}, expected {expected[idx]:.4g}"


def check_one_token_at_a_time(student):
    """Notes 3.7: decoding 5 positions one by one with the cache gives the rows of one causal
    forward over all 5."""
    student_function(student, "attend_with_cache")
    _check(student, [1] * 5, 30)


def check_prefill_then_steps_and_chunks(student):
    """A prompt of 3 at once (prefill), then 1, 1, then a chunk of 2: the same rows; the cache
    ends holding all 7 positions' keys and values."""
    student_function(student, "attend_with_cache")
    cache, k, v = _check(student, [3, 1, 1, 2], 31)
    for name, full in (("k", k), ("v", v)):
        held = cache.get(name)
        if held is None:
            raise ExerciseFailure(f"cache['{name}'] is None after the calls. Hint: {HINT}")
        expect_close(as_array(held, f"cache['{name}']"), full, f"cache['{name}']",
                     hint=MISTAKES["only new"].hint, context="after calls of [3, 1, 1, 2]")


STEPS = 12  # one token at a time: the last step has 11 cached positions
COST_FACTOR = 2  # a step may cost up to twice the reference's cached step (other op choices)


def check_a_step_costs_what_a_cached_step_costs(student):
    """What a cache is for: a decode step multiplies the one new query by the cached keys and
    values ([1, d] × [d, T], [1, T] × [T, d]); it does not recompute the past. Decoding 12
    positions one at a time, with gradients (so on the engine's ops, and right), each step's
    FLOPs (microtensor.profile: 2·M·K·N per matmul, one per element of every other op) must
    stay within 2× those of the reference's cached step."""
    student_function(student, "attend_with_cache")
    rng = inputs_rng(34)
    q, k, v = (rng.normal(size=(1, 2, STEPS, 4)) for _ in range(3))
    w = rng.normal(size=(1, 2, STEPS, 4))
    chunks = [1] * STEPS
    # with gradients asked for, so that every step must run on the engine's ops, which the
    # profiler counts (a step in plain numpy would be invisible to it), and must be right
    _, flops, _, grads = _run(student, q, k, v, chunks, weights=w, hint=HINT)
    _, expected, _, expected_grads = _run(_as_student(reference.attend_with_cache), q, k, v,
                                          chunks, weights=w)
    for name, got, want in zip("qkv", grads, expected_grads):
        expect_close(as_array(got, f"∂L/∂{name}"), want, f"∂L/∂{name}", hint=HINT,
                     context=f"L = Σ w ⊙ Z over {STEPS} steps of one position")
    for step, (got, cached) in enumerate(zip(flops, expected), start=1):
        if got > COST_FACTOR * cached:
            raise ExerciseFailure(
                f"decode step {step} (one new query, {step - 1} cached positions) cost {got:,} "
                f"FLOPs; a cached step costs {cached:,} (q, k, v [1, 2, {STEPS}, 4], one "
                f"position per call). Hint: {COST_HINT}")


LONG, STEPS_TIMED = 1536, 32  # a long prompt, then steps: recomputing it is ~STEPS_TIMED prompts
CPU_FACTOR = 8  # a student's steps may take 8× the reference's CPU time (slower, not quadratic)


def _cpu_of_steps(student, cpu, q, k, v):
    """CPU seconds of each of STEPS_TIMED one-position steps after a LONG prompt, each step a
    call of its own with the clock read just before and just after it: work moved into the
    prompt (or burnt there) changes nothing, and no step's time can be negative."""
    run_task(student, "decode_reset")
    run_task(student, "decode_step", q[:, :, :LONG], k[:, :, :LONG], v[:, :, :LONG])
    times = []
    for t in range(LONG, LONG + STEPS_TIMED):
        start = cpu()
        run_task(student, "decode_step", q[:, :, t:t + 1], k[:, :, t:t + 1], v[:, :, t:t + 1])
        times.append(max(cpu() - start, 0.0))
    return times


def check_the_steps_cpu_time_grows_like_a_caches(student):
    """The FLOP count above is kept in the student's process, where a file could change it;
    the CPU time is read by the grader, step by step: after a prompt of 1,536 positions, 32
    one-position steps (each timed on its own) must take at most 8× the reference's CPU time
    (plus 0.3 s), where recomputing the whole sequence at each step costs about 32 prompts."""
    student_function(student, "attend_with_cache")
    rng = inputs_rng(35)
    q, k, v = (rng.normal(size=(1, 2, LONG + STEPS_TIMED, 8)).astype(np.float32)
               for _ in range(3))
    cpu = getattr(student, "cpu_seconds", None)
    if cpu is None or cpu() is None:  # in-process (the tests' own students): this process's
        cpu = time.process_time
    reference_student = _as_student(reference.attend_with_cache)
    expected = sum(_cpu_of_steps(reference_student, time.process_time, q, k, v))
    context = f"q, k, v [1, 2, {LONG + STEPS_TIMED}, 8]"
    got = sum(call(_cpu_of_steps, student, cpu, q, k, v, what="attend_with_cache",
                   context=context, hint=HINT))
    if got > CPU_FACTOR * expected + 0.3:
        raise ExerciseFailure(
            f"{STEPS_TIMED} decode steps after a prompt of {LONG} positions took {got:.2f} s of "
            f"CPU, each step timed on its own; cached steps take {expected:.2f} s here "
            f"({context}). Hint: {COST_HINT}")


COST_HINT = ("a step must not recompute the past: attend only the new query (q has T_new rows) "
             "over the cached keys and values; keeping the past queries and running attention "
             "over the whole sequence again is not a cache")


def check_gradcheck(student):
    """Backward through the cached path (a prefill of 2, then 1 step), [1, 1, 3, 2]: ∂L/∂q,
    ∂L/∂k, ∂L/∂v against finite differences."""
    student_function(student, "attend_with_cache")
    rng = inputs_rng(32)
    q, k, v = (Tensor(rng.normal(size=(1, 1, 3, 2)), requires_grad=True) for _ in range(3))
    check_student_gradients(
        student, "decode", lambda w: (q.data, k.data, v.data, [2, 1], w),
        lambda result: result[3], _full_tensor, [q, k, v], ["q", "k", "v"], hint=HINT,
        context="prefill 2, then 1 step")


def _full_tensor(q, k, v):
    t = q.shape[-2]
    return nn.scaled_dot_product_attention(q, k, v, attn_mask=nn.causal_mask(t, t))[0]


CHECKS = [check_one_token_at_a_time, check_prefill_then_steps_and_chunks,
          check_a_step_costs_what_a_cached_step_costs, check_the_steps_cpu_time_grows_like_a_caches,
          check_gradcheck]
