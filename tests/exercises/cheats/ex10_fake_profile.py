"""Attack: not a cache (keeps every query, recomputes the whole causal attention each step),
with microtensor.profile replaced by a profiler that reports 0 FLOPs."""
import microtensor
import nn


class _Zero:
    def flops(self, *args, **kwargs):
        return 0


class _FakeProfile:
    def __enter__(self):
        return _Zero()

    def __exit__(self, *exc):
        return False


microtensor.profile = lambda: _FakeProfile()


def attend_with_cache(cache, q, k, v):
    def grow(name, new):
        old = cache.get(name)
        return new if old is None else microtensor.cat([old, new], axis=-2)

    cache["k"], cache["v"], cache["q"] = grow("k", k), grow("v", v), grow("q", q)
    t = cache["k"].shape[-2]
    out, _ = nn.scaled_dot_product_attention(cache["q"], cache["k"], cache["v"],
                                             attn_mask=nn.causal_mask(t, t))
    return out[:, :, t - q.shape[-2]:]
