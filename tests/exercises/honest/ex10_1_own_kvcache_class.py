"""Issue 33: a class of the student's own named `KVCache`, kept in the cache dict, and
`getattr(x, "shape", d)` (refused before, by name)."""
import microtensor
import nn


class KVCache:
    def __init__(self):
        self.k = self.v = None

    def append(self, k, v):
        if self.k is None:
            self.k, self.v = k, v
        else:
            self.k = microtensor.cat([self.k, k], axis=-2)
            self.v = microtensor.cat([self.v, v], axis=-2)
        return self.k, self.v


def attend_with_cache(cache, q, k, v):
    if cache["k"] is not None:
        k = microtensor.cat([cache["k"], k], axis=-2)
        v = microtensor.cat([cache["v"], v], axis=-2)
    store = KVCache()
    keys, values = store.append(k, v)
    cache["k"], cache["v"] = keys, values
    t_q = getattr(q, "shape", (0, 0))[-2]
    t_k = getattr(keys, "shape", (0, 0))[-2]
    return nn.scaled_dot_product_attention(q, keys, values,
                                           attn_mask=nn.causal_mask(t_q, t_k, t_k - t_q))[0]
