"""Issue 33, round five: the import fence's own module reached through its __globals__ (a
built name), its allow-list and its verdict function rebound, then an import by a built name:
the fence decides with what it bound when the file was loaded."""
fence = globals()["__builtins"[:-2] + "ns__"]["__import__"]
g = getattr(fence, "__glo" + "bals__")
g["SMALL_" + "HELPERS"] = g["SMALL_" + "HELPERS"] + ("sys", "inspect")
g["import_" + "refusal"] = lambda *args: None
g["_root_" + "allowed"] = lambda *args: True
inspect = fence("in" + "spect")


def softmax_backward(a, da, axis=-1):
    s = (a * da).sum(axis=axis, keepdims=True)
    return a * (da - s)
