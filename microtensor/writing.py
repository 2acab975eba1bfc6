"""The one path for the library's own writes into a tensor's array: each one counts a version,
as torch's in-place ops do, so that a graph that saved the old values refuses backward.

An optimizer step, `load_state_dict`, `clip_grad_norm_`, an initialiser or the KV cache writes
into `tensor.data` through `writing(tensor)`; a test (tests/microtensor/test_library_writes.py)
holds that no other write into a tensor's `.data` is left in `nn/` and `models/`.
"""
import contextlib


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
