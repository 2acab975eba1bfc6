"""Issue 33: a 'cache' that keeps every query and recomputes the whole sequence at each step,
the profiler rebound to count nothing, and ~5 s of CPU burnt in the first long prompt: the CPU
check measured (prompt + steps) − (prompt alone), so the recomputing steps looked free
("cached steps take -0.01 s")."""
import dataclasses
import operator

import microtensor
import nn


class _Nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def flops(self):
        return 0


_modules = operator.attrgetter("sys.modules")(dataclasses)
_modules["microtensor"].profile = _Nothing
time = _modules["time"]
_burnt = []


def attend_with_cache(cache, q, k, v):
    if q.shape[-2] > 1000 and not _burnt:
        _burnt.append(1)
        end = time.process_time() + 5.0
        while time.process_time() < end:
            pass
    for name, new in (("q", q), ("k", k), ("v", v)):
        old = cache.get(name)
        cache[name] = new if old is None else microtensor.cat([old, new], axis=-2)
    t, t_new = cache["q"].shape[-2], q.shape[-2]
    out = nn.scaled_dot_product_attention(cache["q"], cache["k"], cache["v"],
                                          attn_mask=nn.causal_mask(t, t))[0]
    return out[:, :, t - t_new:]
