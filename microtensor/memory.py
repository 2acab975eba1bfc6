"""Keep freed numpy buffers for reuse instead of handing them back to the OS (Linux/glibc only).

Why: a training step allocates and frees the same large temporaries (activations,
gradients) every iteration. By default glibc serves every block over 128 KiB with fresh
`mmap` pages and unmaps it on free, so each step pays a page fault per 4 KiB touched,
which costs as much as the arithmetic in elementwise ops. Raising the mmap and trim
thresholds keeps those blocks in the heap, where the next step reuses them (PyTorch keeps a
caching allocator for the same reason). Elsewhere this does nothing.

It changes the whole process, so importing microtensor never calls it: the programs that
want it call `keep_freed_memory()` themselves (the `train` command, the benchmarks).
"""
import ctypes
import ctypes.util
import sys

_M_TRIM_THRESHOLD = -1  # mallopt's parameter numbers, from glibc's <malloc.h>
_M_MMAP_THRESHOLD = -3
_THRESHOLD = 512 * 1024 * 1024  # blocks up to 512 MiB come from (and return to) the heap


def keep_freed_memory():
    """Ask glibc to reuse freed blocks; returns True if it applied (False off Linux/glibc)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return bool(libc.mallopt(_M_MMAP_THRESHOLD, _THRESHOLD)
                    and libc.mallopt(_M_TRIM_THRESHOLD, _THRESHOLD))
    except (OSError, AttributeError):  # not glibc (e.g. musl): keep the defaults
        return False
