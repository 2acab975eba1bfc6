"""Grader of exercise 10, decoding with a KV cache (notes 3.7): step-by-step decoding must give
the rows of one causal forward over the whole sequence (teacher forcing's parallel pass), for
one token at a time and for a prefill followed by steps and chunks; the cache must hold every
position; finite differences through the cached path."""

import numpy as np

import microtensor
import nn
from microtensor import Tensor

from ..grading import (
    ExerciseFailure,
    Mistake,
    as_array,
    call,
    check_gradients,
    expect_close,
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


def _decode(fn, q, k, v, chunks):
    """Run fn over the positions in chunks (sizes), from an empty cache; the outputs joined."""
    cache, outs, start = {"k": None, "v": None}, [], 0
    for size in chunks:
        part = [t[:, :, start:start + size] for t in (q, k, v)]
        outs.append(call(fn, cache, *part, what=f"attend_with_cache on positions {start}…"
                         f"{start + size - 1}"))
        start += size
    return outs, cache


def _check(fn, chunks, seed):
    rng = np.random.default_rng(seed)
    t = sum(chunks)
    q, k, v = (Tensor(rng.normal(size=(2, 2, t, 4))) for _ in range(3))
    context = f"positions in calls of {list(chunks)}, q, k, v [2, 2, {t}, 4]"
    try:
        outs, cache = _decode(fn, q, k, v, chunks)
    except ExerciseFailure as failure:  # the same error as a known mistake: its hint
        hint = HINT
        for mistake in MISTAKES.values():
            try:
                _decode(mistake.fn, q, k, v, chunks)
            except ExerciseFailure as same:
                if str(same) == str(failure):
                    hint = mistake.hint
                    break
            except Exception:
                continue
        raise ExerciseFailure(f"{failure} ({context}). Hint: {hint}") from None
    got = np.concatenate([as_array(o, "the output") for o in outs], axis=-2)
    expected = _full(q, k, v)
    if got.shape != expected.shape:
        raise ExerciseFailure(f"the outputs, joined, have shape {list(got.shape)}, expected "
                              f"{list(expected.shape)} ({context}). Hint: {HINT}")
    try:
        expect_close(got, expected, "Z", hint=HINT, context=context)
    except ExerciseFailure:
        for mistake in MISTAKES.values():
            try:
                wrong, _ = _decode(mistake.fn, q, k, v, chunks)
            except Exception:  # this mistake cannot run on these inputs: not this one
                continue
            if np.allclose(np.concatenate([o.data for o in wrong], axis=-2), got):
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
    _check(student_function(student, "attend_with_cache"), [1] * 5, 30)


def check_prefill_then_steps_and_chunks(student):
    """A prompt of 3 at once (prefill), then 1, 1, then a chunk of 2: the same rows; the cache
    ends holding all 7 positions' keys and values."""
    cache, k, v = _check(student_function(student, "attend_with_cache"), [3, 1, 1, 2], 31)
    for name, full in (("k", k), ("v", v)):
        held = cache.get(name)
        if held is None:
            raise ExerciseFailure(f"cache['{name}'] is None after the calls. Hint: {HINT}")
        expect_close(as_array(held, f"cache['{name}']"), full.data, f"cache['{name}']",
                     hint=MISTAKES["only new"].hint, context="after calls of [3, 1, 1, 2]")


def check_gradcheck(student):
    """Backward through the cached path (a prefill of 2, then 1 step), [1, 1, 3, 2]: ∂L/∂q,
    ∂L/∂k, ∂L/∂v against finite differences."""
    fn = student_function(student, "attend_with_cache")
    rng = np.random.default_rng(32)
    q, k, v = (Tensor(rng.normal(size=(1, 1, 3, 2)), requires_grad=True) for _ in range(3))

    def decoded(q, k, v):
        cache = {"k": None, "v": None}
        first = fn(cache, q[:, :, :2], k[:, :, :2], v[:, :, :2])
        return microtensor.cat([first, fn(cache, q[:, :, 2:], k[:, :, 2:], v[:, :, 2:])],
                               axis=-2)

    check_gradients(decoded, [q, k, v], ["q", "k", "v"], hint=HINT,
                    context="prefill 2, then 1 step")


CHECKS = [check_one_token_at_a_time, check_prefill_then_steps_and_chunks, check_gradcheck]
