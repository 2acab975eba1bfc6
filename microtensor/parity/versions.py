"""Version counters, as torch's: every write into a tensor's array counts one in a list shared
by the tensors that share the array (views, detach), and a node that saved the array refuses
backward once the count moved (graph.py checks it).

The library's own writes (an optimizer step, `load_state_dict`, `clip_grad_norm_`, an
initialiser, the KV cache) go through `writing(tensor)` (`microtensor.writing`).
"""
import contextlib

import numpy as np

# ops whose output may be a numpy view of the input: graph.after_op then shares its counter
VIEW_OPS = frozenset({"getitem", "reshape", "permute", "transpose"})


def root(array):
    """The array that owns `array`'s memory (numpy views point to it through .base)."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


@contextlib.contextmanager
def writing(*tensors):
    """`with writing(p) as data: data -= lr * g`: yields the arrays of `tensors` (one array for
    one tensor, else a tuple) to write into in place, then counts one write in each tensor's
    version (shared with its views), as torch's `p.sub_(...)` under no_grad would."""
    arrays = tuple(t.data for t in tensors)
    try:
        yield arrays[0] if len(arrays) == 1 else arrays
    finally:
        for t in tensors:
            t._version_box()[0] += 1
